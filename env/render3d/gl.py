"""MuJoCo, imported with a headless GL backend chosen first.

MuJoCo picks its OpenGL backend from ``MUJOCO_GL`` when it is imported, and with no display and
no setting it fails on the first frame. So this module is the one place that imports MuJoCo: on
Linux, with ``MUJOCO_GL`` unset, it sets Mesa's software renderer (``osmesa``, no GPU and no
display needed) before the import; an explicit ``MUJOCO_GL=egl`` (faster on a GPU machine) always
wins. A missing wheel or a missing Mesa library is one line saying what to install.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

from env.errors import BadInput

HEADLESS_DEFAULT = "osmesa"
INSTALL_HINT = ("install the 3d extra (pip install 'gridbench[3d]') and Mesa "
                "(Debian: apt-get install libosmesa6, or libegl1 libegl-mesa0 libgl1-mesa-dri for MUJOCO_GL=egl)")


def gl_backend() -> str | None:
    """The backend MuJoCo will use: ``MUJOCO_GL`` as set, else the headless default on Linux."""
    if os.environ.get("MUJOCO_GL"):
        return os.environ["MUJOCO_GL"]
    return HEADLESS_DEFAULT if sys.platform.startswith("linux") else None


def import_mujoco() -> ModuleType:
    """``mujoco``, with ``MUJOCO_GL`` set before its first import."""
    if "mujoco" in sys.modules and gl_backend() == HEADLESS_DEFAULT and not os.environ.get("MUJOCO_GL"):
        raise RuntimeError("mujoco was imported before MUJOCO_GL was set, so it picked a GL backend that needs a "
                           "display: import env.render3d first, or set MUJOCO_GL=osmesa (or egl)")
    if "mujoco" not in sys.modules:
        backend = gl_backend()
        if backend is not None:
            os.environ["MUJOCO_GL"] = backend
            if backend == "osmesa":  # PyOpenGL reads this one to pick its platform
                os.environ.setdefault("PYOPENGL_PLATFORM", "osmesa")
            elif backend == "egl":
                os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
    try:
        import mujoco
    except ImportError as err:
        raise BadInput("render", "backend", f"mujoco3d needs MuJoCo ({err}): {INSTALL_HINT}") from None
    return mujoco
