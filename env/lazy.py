"""A package's face from one table: which names it offers and the module each one lives in.

A package writes its public names once, in a table ``{module: (name, ...)}``, and hands it to
``lazy_face``, which returns the package's ``__getattr__`` (PEP 562: a name's module is imported
on first use, so importing the package costs nothing), ``__dir__`` and ``__all__``::

    _FACE = {"episodes.episode": ("EpisodeResult", "run_episode"), "episodes.replay": ("ReplayResult",)}
    if TYPE_CHECKING:  # the table as imports, for the type checker
        from episodes.episode import EpisodeResult, run_episode  # noqa: F401
        from episodes.replay import ReplayResult  # noqa: F401
    else:
        __getattr__, __dir__, __all__ = lazy_face(__name__, _FACE)

Why the ``TYPE_CHECKING`` block stays: mypy reads imports, not a table. So the block is the
table written as imports, a rendering of it rather than a second declaration:
``tests/test_package_faces.py`` holds every package's block equal to its table, and its failure
prints the block to paste (``typing_block``). The ``__getattr__`` sits in the ``else`` branch so
that mypy does not see it: a module-level ``__getattr__`` would turn every name missing from
the block into ``Any``, where now ``from episodes import misspelt`` is a type error. (``noqa:
F401``: the imports are used, by the face; ruff cannot see ``__all__`` through the call.)

The alternatives were worse: a ``.pyi`` stub beside ``__init__.py`` hides the package's own code
from mypy, and deriving the table at import time from the block's source (``ast``) reads and
parses a file on every import.

A name may not be its module's own name (``replay`` from ``episodes.replay``): once anything
imports that module, Python binds the package's attribute to the module and the face's
``__getattr__`` is never asked.

The returned ``__getattr__`` looks the name up afresh on every use (no caching into the
package), as the hand-written faces did: a name patched in its home module is seen through the
face.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any

Table = Mapping[str, tuple[str, ...]]


def lazy_face(package: str, table: Table, *, defined_here: Iterable[str] = ()
              ) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package``, whose lazily loaded names are
    ``table`` and whose names defined in its own ``__init__`` are ``defined_here``."""
    home: dict[str, str] = {}
    for module, names in table.items():
        for name in names:
            if name in home:
                raise ValueError(f"{package}: {name!r} listed under both {home[name]} and {module}")
            if module == f"{package}.{name}":  # importing the module binds its name on the package
                raise ValueError(f"{package}: {name!r} is hidden by the module {module} once that is imported")
            home[name] = module
    here = tuple(defined_here)
    clash = sorted(set(here) & set(home))
    if clash:
        raise ValueError(f"{package}: {clash} are defined in the package and listed in its table")
    public = sorted([*home, *here])

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(home))

    return __getattr__, __dir__, public


_NOQA = "  # noqa: F401"


def typing_block(table: Table) -> str:
    """The ``if TYPE_CHECKING:`` block's imports that show ``table`` to the type checker, in
    ruff's isort order (modules and names sorted; long imports one name a line)."""
    lines = []
    for module in sorted(table):
        names = sorted(table[module], key=_isort_key)
        one = f"    from {module} import {', '.join(names)}"
        if len(one) + len(_NOQA) <= 110:
            lines.append(one + _NOQA)
        else:
            lines += [f"    from {module} import ({_NOQA}", *(f"        {n}," for n in names), "    )"]
    return "\n".join(lines)


def _isort_key(name: str) -> tuple[int, str]:
    # isort's order within one import: CONSTANTS, then Classes, then functions
    kind = 0 if name.isupper() else 1 if name[:1].isupper() else 2
    return kind, name
