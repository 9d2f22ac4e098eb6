"""Sealed sets: a set drawn from a secret seed, kept where only the evaluator reads it, and a
public commitment that binds it (docs/sealed.md).

The commitment is the SHA-256 of one canonical JSON text (``preimage``): the set's name, its
recipe (generator version, recipe, ruleset, count), the seed as a decimal string and the mazes'
checksums in the set's order. The seed is 256 random bits: it is the secret that salts the hash
(nobody can confirm a guessed maze from the commitment without it) and, once revealed, what
regenerates every maze, so a revealed set is checked twice: its mazes and recipe give the
commitment, and the seed gives its mazes byte for byte.

A set folder, sealed or revealed, holds the set's maze files and ``manifest.json`` (as every set
does), ``seal.json`` (the recipe, the seed and the commitment) and ``commitment.json`` (the
public file, as published). A sealed folder's manifest says ``"sealed": {"commitment", "set"}``,
which a run on it records; a revealed one's says ``"unsealed"`` instead.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from env.errors import BadInput
from env.files import atomic_write
from env.generator.maze_pool import PoolBuild, build_command, build_pool, write_set
from env.maze import Maze, maze_from_dict
from env.names import is_name
from env.sets import COMMITMENT_FILE, COMMITMENT_HEX, SEAL_FILE, SEALED

PREIMAGE_FORMAT = "gridbench.sealed/1"
SEAL_FORMAT = "gridbench.seal/1"
COMMITMENT_FORMAT = "gridbench.commitment/1"
UNSEALED = "unsealed"  # a revealed set's manifest field, in place of ``sealed``
SEED_BITS = 256
RECIPE_FIELDS = ("set", "generator_version", "recipe", "ruleset", "count")


@dataclass(frozen=True)
class Seal:
    """What binds a set: its recipe, its secret seed and the commitment they give with its mazes."""

    set: str
    generator_version: int
    recipe: str
    ruleset: str
    count: int
    seed: int
    commitment: str

    def recipe_fields(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in RECIPE_FIELDS}

    def public(self) -> dict[str, Any]:
        """The commitment file: everything but the seed and the mazes."""
        return {"format": COMMITMENT_FORMAT, **self.recipe_fields(), "commitment": self.commitment}

    def private(self) -> dict[str, Any]:
        """``seal.json``: the commitment file's fields and the seed (a decimal string: no JSON
        reader loses a digit of it)."""
        return {**self.public(), "format": SEAL_FORMAT, "seed": str(self.seed)}

    def marker(self) -> dict[str, str]:
        """What a set's manifest and a run's manifest record of the seal."""
        return {"commitment": self.commitment, "set": self.set}


def new_seed() -> int:
    return secrets.randbits(SEED_BITS)


def preimage(recipe: dict[str, Any], seed: int, checksums: list[str]) -> bytes:
    """The text the commitment hashes: sorted keys, no spaces, ASCII."""
    fields = {"format": PREIMAGE_FORMAT, **{k: recipe[k] for k in RECIPE_FIELDS}, "seed": str(seed),
              "mazes": list(checksums)}
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii")


def commitment(recipe: dict[str, Any], seed: int, checksums: list[str]) -> str:
    return hashlib.sha256(preimage(recipe, seed, checksums)).hexdigest()


def seal(name: str, generator_version: int, recipe: str, ruleset: str, seed: int, mazes: list[Maze]) -> Seal:
    unbound = Seal(set=name, generator_version=generator_version, recipe=recipe, ruleset=ruleset, count=len(mazes),
                   seed=seed, commitment="")
    return replace(unbound, commitment=commitment(unbound.recipe_fields(), seed, [m.checksum for m in mazes]))


def _json_text(record: dict[str, Any]) -> str:
    return json.dumps(record, indent=1) + "\n"


def _seal_files(the_seal: Seal) -> Callable[[Path], None]:
    """What a set folder holds beside its mazes and manifest: ``seal.json`` and ``commitment.json``."""
    def write(tmp: Path) -> None:
        (tmp / SEAL_FILE).write_text(_json_text(the_seal.private()), encoding="utf-8")
        (tmp / COMMITMENT_FILE).write_text(_json_text(the_seal.public()), encoding="utf-8")
    return write


def write_sealed(folder: Path, the_seal: Seal, built: PoolBuild, provenance: dict[str, Any],
                 commitment_path: Path) -> None:
    """The private folder (0700, its files 0600), then the public commitment file."""
    write_set(folder, the_seal.set, built.mazes, built.entries, provenance, extra=_seal_files(the_seal),
              header={SEALED: the_seal.marker()}, private=True)
    atomic_write(commitment_path, _json_text(the_seal.public()))


# ---- checking a set against its commitment --------------------------------------------------


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise BadInput(str(path), "", "missing: not a sealed set folder (gridbench pool build --sealed makes one)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BadInput(str(path), "", f"not readable JSON ({type(err).__name__})") from None
    if not isinstance(data, dict):
        raise BadInput(str(path), "(file)", "must be a JSON object")
    return data


def _field(path: Path, data: dict[str, Any], name: str, kind: type) -> Any:
    value = data.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise BadInput(str(path), name, f"missing or not a {kind.__name__}")
    return value


def read_seal(path: Path) -> Seal:
    data = _read_json(path)
    if data.get("format") != SEAL_FORMAT:
        raise BadInput(str(path), "format", f"must be {SEAL_FORMAT!r}")
    seed = _field(path, data, "seed", str)
    if not seed.isdigit():
        raise BadInput(str(path), "seed", "must be a decimal number in a string")
    found = _commitment_field(path, data)
    return Seal(set=_field(path, data, "set", str), generator_version=_field(path, data, "generator_version", int),
                recipe=_field(path, data, "recipe", str), ruleset=_field(path, data, "ruleset", str),
                count=_field(path, data, "count", int), seed=int(seed), commitment=found)


def _commitment_field(path: Path, data: dict[str, Any]) -> str:
    value = data.get("commitment")
    if not isinstance(value, str) or not COMMITMENT_HEX.fullmatch(value):
        raise BadInput(str(path), "commitment", "missing or not 64 lowercase hex digits")
    return value


def _read_mazes(folder: Path, the_seal: Seal) -> tuple[dict[str, Any], list[Maze]]:
    """The manifest and the mazes it lists, each maze file holding the maze its entry names."""
    manifest_path = folder / "manifest.json"
    manifest = _read_json(manifest_path)
    entries = manifest.get("mazes")
    if not isinstance(entries, list) or len(entries) != the_seal.count:
        raise BadInput(str(manifest_path), "mazes", f"must list the {the_seal.count} mazes of {SEAL_FILE}")
    mazes = []
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or not isinstance(e.get("file"), str) or not isinstance(e.get("checksum"), str):
            raise BadInput(str(manifest_path), f"mazes[{i}]", "an entry names its maze's file and checksum")
        path = folder / e["file"]
        if not (is_name(path.stem) and path.suffix == ".json") or path.parent != folder:
            raise BadInput(str(manifest_path), f"mazes[{i}].file", "must be a maze file's name in the folder")
        if path.is_symlink() or not path.is_file():
            raise BadInput(str(path), "", "missing: the manifest lists it (a link is not followed)")
        try:
            maze = maze_from_dict(json.loads(path.read_text(encoding="utf-8")), str(path))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise BadInput(str(path), "", "not readable JSON") from None
        if maze.checksum != e["checksum"]:
            raise BadInput(str(path), "checksum", "differs from its entry in manifest.json: the maze was changed")
        mazes.append(maze)
    return manifest, mazes


@dataclass
class Checked:
    """A set that reproduced its commitment: its seal, manifest and mazes."""

    seal: Seal
    manifest: dict[str, Any]
    mazes: list[Maze]


def check_set(folder: str | Path, saved: str | Path | None = None, workers: int = 0,
              progress: Callable[[int, int], None] | None = None) -> Checked:
    """Check a sealed or revealed set folder: every maze file matches the manifest, the recipe,
    seed and checksums give the commitment of ``seal.json`` (and of ``saved``, a commitment file
    kept from when the set was sealed), and the seed regenerates every maze byte for byte
    (``progress(done, count)`` as mazes are generated). The first mismatch is a ``BadInput`` naming its file."""
    from env.generator.generator import GENERATOR_VERSION

    folder = Path(folder)
    if not folder.is_dir():
        raise BadInput(str(folder), "", "no such folder")
    seal_path = folder / SEAL_FILE
    the_seal = read_seal(seal_path)
    manifest, mazes = _read_mazes(folder, the_seal)
    given = commitment(the_seal.recipe_fields(), the_seal.seed, [m.checksum for m in mazes])
    if given != the_seal.commitment:
        raise BadInput(str(seal_path), "commitment",
                       "the set's recipe, seed and mazes do not give this commitment: a maze, the seed or "
                       "the recipe was changed")
    for path in (folder / COMMITMENT_FILE, *([Path(saved)] if saved is not None else [])):
        if path == folder / COMMITMENT_FILE and not path.exists():
            continue  # the folder's own copy is a convenience; a saved file is what a third party holds
        published = _read_json(path)
        if _commitment_field(path, published) != given:
            raise BadInput(str(path), "commitment", f"is not the set's commitment ({given})")
        for k in RECIPE_FIELDS:
            if published.get(k) != getattr(the_seal, k):
                raise BadInput(str(path), k, f"{published.get(k)!r} differs from the set's {getattr(the_seal, k)!r}")
    if the_seal.generator_version != GENERATOR_VERSION:
        raise BadInput(str(seal_path), "generator_version",
                       f"{the_seal.generator_version}: this gridbench's generator is version {GENERATOR_VERSION} "
                       "and cannot regenerate the set")
    done = 0

    def advance(n: int) -> None:
        nonlocal done
        done += n
        if progress is not None:
            progress(done, the_seal.count)

    built = build_pool(the_seal.count, the_seal.seed, workers, on_done=advance, ruleset=the_seal.ruleset,
                       recipe=the_seal.recipe)
    if built.errors:
        raise BadInput(str(seal_path), "seed", f"the seed does not regenerate the set ({built.errors[0]})")
    for entry, regenerated in zip(manifest["mazes"], built.mazes, strict=True):
        path = folder / entry["file"]
        if path.read_text(encoding="utf-8") != regenerated.to_json():
            raise BadInput(str(path), "", "differs byte for byte from the maze the seed in seal.json generates")
    return Checked(the_seal, manifest, mazes)


def unseal(private: str | Path, out: str | Path, saved: str | Path | None = None, workers: int = 0,
           progress: Callable[[int, int], None] | None = None) -> Checked:
    """Check a sealed folder (``check_set``) and write its revealed copy at ``out``: the same maze
    files, a manifest that says ``unsealed`` (with the seed and the command that builds the set
    again), ``seal.json`` and ``commitment.json``, readable by anyone."""
    private, out = Path(private), Path(out)
    if out.resolve() == private.resolve() or private.resolve() in out.resolve().parents:
        raise BadInput("--out", "", f"{out}: is the sealed folder or lies inside it")
    checked = check_set(private, saved, workers, progress)
    if SEALED not in checked.manifest:
        raise BadInput(str(private / "manifest.json"), SEALED, "missing: this set is not sealed (already revealed?)")
    the_seal = checked.seal
    provenance = {**checked.manifest.get("provenance", {}),
                  "command": build_command(the_seal.count, the_seal.seed, the_seal.ruleset, the_seal.recipe)}
    write_set(out, the_seal.set, checked.mazes, checked.manifest["mazes"], provenance, extra=_seal_files(the_seal),
              header={UNSEALED: {**the_seal.marker(), "seed": str(the_seal.seed)}})
    return checked
