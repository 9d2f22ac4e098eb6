"""Compiled kernels: numba where it is installed, the plain Python searches where it is not.

The oracle's searches (``env.oracle.compiled``, ``env.oracle.explicit``) and the generator's
searches over floor cells (``env.generator.floor_search``) each keep a plain Python twin that the tests hold equal to the
kernel. ``GRIDBENCH_ORACLE=python`` runs the plain ones (docs/oracle.md#how-it-is-fast).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar, cast

njit: Any
try:
    from numba import njit
except ImportError:  # a machine without numba's wheel: the plain searches stand in
    njit = None

ENGINE_VAR = "GRIDBENCH_ORACLE"
F = TypeVar("F", bound=Callable[..., Any])


def jit(fn: F) -> F:
    """``fn`` compiled on its first call, and cached on disk beside its module. No kernel divides
    by zero, so numpy's error model spares each division the check Python's would make (the
    layered search divides every state id)."""
    return fn if njit is None else cast(F, njit(cache=True, nogil=True, error_model="numpy")(fn))


def jit_inline(fn: F) -> F:
    """``fn`` compiled into each kernel that calls it (numba's ``inline="always"``): a rule a
    kernel calls for every state, where a call (its arguments' reference counts) would cost more
    than the rule."""
    return fn if njit is None else cast(F, njit(cache=True, nogil=True, inline="always")(fn))


def enabled() -> bool:
    """Whether the compiled kernels run: numba is installed, and ``GRIDBENCH_ORACLE`` is
    ``compiled``, or unset where the kernels are compiled already (numba's cache beside the source,
    which ``scripts/install.sh`` fills). A fresh copy of the code (a Ray job's working dir, which
    carries no cache) runs the plain searches rather than spend seconds compiling in every worker
    for work of milliseconds."""
    if njit is None:
        return False
    engine = os.environ.get(ENGINE_VAR, "")
    return engine == "compiled" or (engine != "python" and _cached())


@lru_cache(maxsize=1)
def _cached() -> bool:
    here = Path(__file__).resolve().parent
    return all(any((here / folder / "__pycache__").glob(f"{module}.*.nbi"))
               for folder, module in (("oracle", "compiled"), ("oracle", "explicit"), ("generator", "floor_search")))


def warm() -> None:
    """Compile every kernel once (into numba's cache), so that no run pays for it."""
    from env import resolve_maze, resolve_mazes
    from env.generator import GenParams, generate
    from env.oracle import DistanceTable, solve

    for maze in (resolve_maze("example"), resolve_mazes(["study"])[0], resolve_mazes(["study-m7m10"])[0]):
        solve(maze, cache=False)
        DistanceTable(maze)
    generate(GenParams(width=9, height=9, chain="key_door"), seed=0)


if __name__ == "__main__":
    if njit is not None and os.environ.get(ENGINE_VAR) != "python":
        os.environ[ENGINE_VAR] = "compiled"  # compile them here, whatever the cache holds
        warm()
