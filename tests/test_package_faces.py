"""Each package's face is declared once, in its ``_FACE`` table (env.lazy): the type checker's
``TYPE_CHECKING`` imports say exactly the same, every name loads, and importing the packages
loads none of the modules behind their faces."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from env.lazy import lazy_face, typing_block

ROOT = Path(__file__).resolve().parents[1]
FACES = sorted(p.parent.name for p in ROOT.glob("*/__init__.py") if "lazy_face(" in p.read_text(encoding="utf-8"))


def _declared(package: str) -> tuple[dict[str, tuple[str, ...]], dict[str, set[str]]]:
    """(the ``_FACE`` table, the ``TYPE_CHECKING`` imports as {module: names}) read from the source."""
    tree = ast.parse((ROOT / package / "__init__.py").read_text(encoding="utf-8"))
    table, imports = None, {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_FACE" for t in node.targets):
            table = ast.literal_eval(node.value)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module, f"{package}: only imports in the block"
                imports.setdefault(imp.module, set()).update(a.name for a in imp.names if a.asname is None)
    assert table is not None, f"{package}/__init__.py has no _FACE table"
    return table, imports


def test_the_faces_found_are_the_packages_with_a_public_api():
    assert FACES == ["agents", "analysis", "env", "episodes", "orchestrator", "traces"]


@pytest.mark.parametrize("package", FACES)
def test_the_type_checkers_imports_are_the_table(package):
    table, imports = _declared(package)
    assert imports == {m: set(names) for m, names in table.items()}, (
        f"{package}/__init__.py: the TYPE_CHECKING block should read\n{typing_block(table)}")


@pytest.mark.parametrize("package", FACES)
def test_every_name_of_the_face_loads_from_its_module(package):
    table, _ = _declared(package)
    pkg = importlib.import_module(package)
    listed = {n for names in table.values() for n in names}
    here = set(pkg.__all__) - listed
    assert sorted(pkg.__all__) == pkg.__all__ and listed <= set(pkg.__all__)
    for name in here:  # the names the package defines itself exist there
        assert name in vars(pkg), f"{package}.{name} is in __all__ but not defined"
    for module, names in table.items():
        for name in names:
            assert getattr(pkg, name) is getattr(importlib.import_module(module), name)
    assert set(pkg.__all__) <= set(dir(pkg))
    with pytest.raises(AttributeError, match=f"module '{package}' has no attribute 'no_such_name'"):
        pkg.no_such_name  # noqa: B018


def test_importing_the_packages_loads_nothing_behind_their_faces():
    code = f"import json, sys\nimport {', '.join(FACES)}\nprint(json.dumps(sorted(sys.modules)))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    loaded = set(json.loads(r.stdout))
    behind = {m for package in FACES for m in _declared(package)[0]}
    assert not loaded & behind, f"importing the packages loaded {sorted(loaded & behind)}"


def test_a_name_listed_twice_is_refused():
    with pytest.raises(ValueError, match="'x' listed under both a.one and a.two"):
        lazy_face("a", {"a.one": ("x",), "a.two": ("x", "y")})
    with pytest.raises(ValueError, match="defined in the package and listed"):
        lazy_face("a", {"a.one": ("x",)}, defined_here=("x",))
    with pytest.raises(ValueError, match="'replay' is hidden by the module a.replay"):
        lazy_face("a", {"a.replay": ("replay",)})
