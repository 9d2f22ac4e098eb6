"""Resolve maze arguments: a file, a folder, a maze id, a named set, or ``set/id``.

Named sets ship inside the package (``env/mazes/<set>/``), so ``pip install`` carries them.
A maze id is matched against the safe-name pattern before it is joined to a folder, and the
result must stay inside that folder: a name never reaches a path the user did not give.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from env.errors import BadInput
from env.maze import Maze, load_maze, maze_from_dict
from env.names import is_name

MAZES_DIR = Path(__file__).resolve().parent / "mazes"
# gridbench's own sets (minigrid rules; the discovery set under multinet-pr57; long-horizon: plans of 150
# to 600 actions), then the MultiNet study's own mazes (multinet-r1 rules; its post-R1 families M7-M10
# under multinet-pr57)
NAMED_SETS = ("eval", "heldout", "pool", "hand", "discovery", "long-horizon", "study", "study-heldout",
              "study-m7m10")
# the long-horizon set's path bands: grid side, lowest and highest optimal actions. The report's
# bands past the study's horizon start where these do (analysis.load.HORIZON_BANDS)
LONG_HORIZON_BANDS = {"150-249": (24, 150, 249), "250-399": (32, 250, 399), "400-600": (40, 400, 600)}
# a sealed set's manifest field, {"commitment", "set"}: its mazes are kept from the public (docs/sealed.md);
# a run on one records the same field in its own manifest
SEALED = "sealed"
COMMITMENT_HEX = re.compile(r"[0-9a-f]{64}")  # a commitment: a SHA-256 in lowercase hex
# a sealed or revealed set's files beside its mazes: the recipe and seed, and the public commitment
SEAL_FILE, COMMITMENT_FILE = "seal.json", "commitment.json"
NOT_MAZES = ("manifest.json", SEAL_FILE, COMMITMENT_FILE)  # the JSON files of a set folder that are no maze


def set_dir(name: str) -> Path:
    return MAZES_DIR / name


def _contained(folder: Path, p: Path) -> Path:
    """``p`` itself, if it really lies in ``folder``; a link that leads elsewhere is bad input."""
    try:
        real = p.resolve(strict=True)
    except (OSError, RuntimeError):
        raise BadInput(str(p), "", "cannot be read (a broken or looping link?)") from None
    if real.parent != folder.resolve():
        raise BadInput(str(p), "", "is a link to a file outside its folder; not followed")
    return p


def _inside(folder: Path, name: str) -> Path | None:
    if not is_name(name):
        return None
    p = folder / f"{name}.json"
    if not (p.is_file() or p.is_symlink()):
        return None
    return _contained(folder, p)


def folder_files(folder: Path) -> list[Path]:
    """The maze files of a folder (not its manifest nor a seal's files), refusing links that leave the folder."""
    return [
        _contained(folder, p) for p in sorted(folder.glob("*.json")) if p.name not in NOT_MAZES
    ]


def set_files(name: str) -> list[Path]:
    """A named set's maze files in its manifest's order (the study's sets: its rank order)."""
    folder = set_dir(name)
    if name not in NAMED_SETS:
        raise BadInput(name, "", f"unknown maze set (known: {', '.join(NAMED_SETS)})")
    if not folder.is_dir():
        raise BadInput(name, "", "this maze set has not been built yet (gridbench pool build / pool select)")
    files = folder_files(folder)
    manifest = folder / "manifest.json"
    if manifest.is_file():
        order = {e["file"]: i for i, e in enumerate(json.loads(manifest.read_text(encoding="utf-8"))["mazes"])}
        files.sort(key=lambda p: (order.get(p.name, len(order)), p.name))
    return files


def resolve_maze(spec: Any) -> Maze:
    """One maze from a ``Maze``, a parsed dict, a path, an id, or ``set/id``."""
    if isinstance(spec, Maze):
        return spec
    if isinstance(spec, dict):
        return maze_from_dict(spec, "<dict>")
    if not isinstance(spec, (str, Path)):
        raise BadInput(str(spec), "", "a maze is a file, an id, 'set/id', or a dict")
    text = str(spec)
    p = Path(text)
    if p.suffix == ".json" or p.is_file():
        return load_maze(p)
    if "/" in text and text.count("/") == 1:
        set_name, mid = text.split("/")
        if set_name in NAMED_SETS:
            found = _inside(set_dir(set_name), mid)
            if found is None:
                raise BadInput(text, "", f"no maze {mid!r} in the {set_name!r} set")
            return load_maze(found)
    if "/" not in text:
        for set_name in NAMED_SETS:
            found = _inside(set_dir(set_name), text)
            if found is not None:
                return load_maze(found)
    raise BadInput(text, "", "no such maze file, maze id, or set/id")


def resolve_mazes(spec: Any) -> list[Maze]:
    """Many mazes: a named set, a folder, a list of specs, or one maze."""
    if isinstance(spec, (list, tuple)):
        out: list[Maze] = []
        for s in spec:
            out.extend(resolve_mazes(s))
        return out
    if isinstance(spec, (str, Path)):
        text = str(spec)
        if text in NAMED_SETS:
            return [load_maze(p) for p in set_files(text)]
        p = Path(text)
        if p.is_dir():
            files = folder_files(p)
            if not files:
                raise BadInput(text, "", "folder holds no maze files")
            return [load_maze(q) for q in files]
    return [resolve_maze(spec)]


def set_entries(name: str) -> list[dict[str, Any]]:
    """The entries of a named set's manifest (id, checksum, optimal actions, ...), in its order."""
    path = set_dir(name) / "manifest.json"
    if not path.is_file():
        raise BadInput(str(path), "", "no manifest for this set")
    return json.loads(path.read_text())["mazes"]


def sealed_of(spec: Any) -> dict[str, str] | None:
    """The seal (``{"commitment", "set"}``) of the sealed set a maze argument draws on: a sealed set's
    folder or a maze file in one (a list: each of its items). ``BadInput`` for two different sealed
    sets at once, which no single commitment covers."""
    seals = {json.dumps(s, sort_keys=True): s for s in _seals(spec)}
    if len(seals) > 1:
        names = sorted(s["set"] for s in seals.values())
        raise BadInput(str(spec), "", f"draws on two sealed sets ({', '.join(names)}): run each on its own")
    return next(iter(seals.values()), None)


def _seals(spec: Any) -> list[dict[str, str]]:
    if isinstance(spec, (list, tuple)):
        return [s for item in spec for s in _seals(item)]
    if not isinstance(spec, (str, Path)):
        return []
    p = Path(spec)
    folder = p if p.is_dir() else p.parent if p.is_file() else None
    manifest = folder / "manifest.json" if folder is not None else None
    if manifest is None or not manifest.is_file():
        return []
    try:
        found = json.loads(manifest.read_text(encoding="utf-8")).get(SEALED)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError):
        return []  # not a set's manifest: whatever reads the mazes says what is wrong with them
    seal = check_seal(found, str(manifest))
    return [] if seal is None else [seal]


def check_seal(entry: Any, where: str) -> dict[str, str] | None:
    """A manifest's ``sealed`` field (a set's or a run's) as ``{"commitment", "set"}``, None when it
    has none; anything else is bad input naming ``where`` and the field."""
    if entry is None:
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("commitment"), str) \
            or not COMMITMENT_HEX.fullmatch(entry["commitment"]) or not isinstance(entry.get("set"), str):
        raise BadInput(where, SEALED, 'must be {"commitment": "<64 lowercase hex digits>", "set": "<name>"}')
    return {"commitment": entry["commitment"], "set": entry["set"]}
