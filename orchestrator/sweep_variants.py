"""A sweep's ``variants:``: each maze's twins, built by ``env.variants`` and cached (docs/variants.md#in-a-sweep).

Building a twin means solving and checking it, and a matched control means running the
generator until it finds one: seconds per maze. A resumed run and ``--dry-run`` load the sweep
again, so what was built is kept in ``$XDG_CACHE_HOME/gridbench/variants/`` (default
``~/.cache/...``), one JSON file per source maze and kind, named by a hash of the source's
checksum, the kind, the seed, ``CACHE_FORMAT`` and ``env.ENV_VERSION``. The same key always gives
the same twins (``env.variants`` is deterministic), so a cached file is read back, never
rebuilt; an unreadable one is rebuilt and replaced.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agents.protocol import Protocol, projected
from env import ENV_VERSION, Maze, maze_from_dict
from env.errors import BadInput
from env.files import atomic_write
from env.variants import (
    DEFAULT_PROJECTIONS,
    PROJECTION,
    Skipped,
    assess,
    build_variants,
    kinds_from,
    projection,
    variant_id,
)

if TYPE_CHECKING:
    from orchestrator.sweep import Condition

CACHE_FORMAT = 1  # bump when what a cached file holds, or how env.variants builds a twin, changes
VARIANT_SEED = 0  # the colour permutation's and the matched controls' seed (`gridbench variants`' default)
CACHE_DIR = "variants"


@dataclass(frozen=True)
class LeftOut:
    """A twin the sweep does not run: it could not be made, or ``assess`` did not keep it."""

    id: str
    source: str
    kind: str
    name: str
    reason: str

    def line(self) -> str:
        return f"variant {self.id} left out: {self.reason}"

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "source": self.source, "kind": self.kind, "name": self.name, "reason": self.reason}


@dataclass(frozen=True)
class Twins:
    """Per source maze (by checksum), the maze followed by its kept twins, kind by kind; and the
    twins left out."""

    of: dict[str, list[Maze]]
    left_out: list[LeftOut]

    def expand(self, mazes: Sequence[Maze]) -> list[Maze]:
        """``mazes``, each followed by its twins."""
        return [t for m in mazes for t in self.of.get(m.checksum, [m])]


def parse_variants(raw: Any, source: str) -> list[str]:
    """A sweep's ``variants:``: a list of kinds, groups or single variants as ``gridbench variants
    --kinds`` takes them; the kind names they stand for, in order, each once."""
    if not isinstance(raw, list) or not raw:
        raise BadInput(source, "variants", "must be a non-empty list of variant kinds (no-switches, mirror-tb, ...)")
    out: list[str] = []
    for i, word in enumerate(raw):
        if not isinstance(word, str) or "," in word:
            raise BadInput(source, f"variants[{i}]", f"must be one variant kind, group or name (got {word!r})")
        try:
            names = kinds_from(word, source)
        except BadInput as err:
            raise BadInput(source, f"variants[{i}]", err.message) from None
        out += [n for n in names if n not in out]
    return out


def with_twins(mazes: Sequence[Maze], kinds: list[str], cache: Path,
               progress: Callable[[int, int], None] | None = None) -> Twins:
    """The twins of ``kinds`` of each maze (each maze once); ``progress(done, total)`` after each
    maze and kind."""
    sources = list({m.checksum: m for m in mazes}.values())
    of: dict[str, list[Maze]] = {}
    left: list[LeftOut] = []
    total, done = len(sources) * len(kinds), 0
    for maze in sources:
        of[maze.checksum] = [maze]
        for kind in kinds:
            for made in _built(maze, kind, cache):
                if isinstance(made, LeftOut):
                    left.append(made)
                else:
                    of[maze.checksum].append(made)
            done += 1
            if progress is not None:
                progress(done, total)
    return Twins(of, left)


def _key(maze: Maze, kind: str) -> str:
    work = {"source": maze.checksum, "kind": kind, "seed": VARIANT_SEED, "format": CACHE_FORMAT,
            "env_version": ENV_VERSION}
    return hashlib.sha256(json.dumps(work, sort_keys=True).encode()).hexdigest()[:24]


def _built(maze: Maze, kind: str, cache: Path) -> list[Maze | LeftOut]:
    """The twins of one kind, from the cache or built (and cached)."""
    path = cache / CACHE_DIR / f"{_key(maze, kind)}.json"
    try:
        return [_from_json(e) for e in json.loads(path.read_text(encoding="utf-8"))["made"]]
    except (OSError, ValueError, KeyError, TypeError, BadInput):
        pass  # not built yet, or unreadable: build it again
    made: list[Maze | LeftOut] = []
    checks = None
    for v in build_variants(maze, kind, VARIANT_SEED):
        if isinstance(v, Skipped):
            made.append(LeftOut(variant_id(maze.id, v.name), maze.id, v.kind, v.name, v.reason))
            continue
        if checks is None:
            from env.checks import run_checks

            checks = run_checks(maze)
        a = assess(v, maze, checks)
        made.append(v.maze if a.kept else LeftOut(v.maze.id, maze.id, v.kind, v.name, "; ".join(a.reasons)))
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"format": CACHE_FORMAT, "source": maze.checksum, "kind": kind,
                                   "seed": VARIANT_SEED, "made": [_to_json(m) for m in made]}))
    return made


def _to_json(m: Maze | LeftOut) -> dict[str, Any]:
    return {"left_out": m.to_dict()} if isinstance(m, LeftOut) else {"maze": m.to_dict()}


def _from_json(entry: dict[str, Any]) -> Maze | LeftOut:
    if "left_out" in entry:
        return LeftOut(**entry["left_out"])
    return maze_from_dict(entry["maze"], "<variant cache>")


# ---- projection twins: the same maze, shown another way (docs/variants.md#projection-twins) ----


def projections_named(kinds: Sequence[str]) -> list[str]:
    """The projections a sweep's kinds make: every default one for ``projection``, one for
    ``projection-<name>``."""
    out: list[str] = []
    for kind in kinds:
        names = DEFAULT_PROJECTIONS if kind == PROJECTION else (
            (kind[len(PROJECTION) + 1:],) if kind.startswith(PROJECTION + "-") else ())
        out += [n for n in names if n not in out]
    return out


def check_projections(kinds: Sequence[str], protocols: Sequence[tuple[str, Protocol]], source: str) -> None:
    """Each projection the kinds make can be laid over each protocol (``(where, protocol)``: a
    model's condition), or one ``BadInput`` naming the sweep's ``variants`` and the protocol."""
    names = projections_named(kinds)
    if not names:
        return
    from env import resolve_maze

    probe = resolve_maze("example")  # the same content under every projection: any maze will do
    for name in names:
        made = projection(probe, name)
        assert not isinstance(made, Skipped), made  # the example draws in every view
        for where, protocol in protocols:
            try:
                projected(protocol, made.maze, source)
            except BadInput as err:
                raise BadInput(source, "variants", f"{where}: {err.field}: {err.message}") from None


def projected_condition(condition: Condition, maze: Maze) -> Condition | None:
    """The condition as it runs ``maze``: itself, or for a projection twin the condition with the
    projected protocol (the same name: the twin is paired within its arm); None when the condition
    already shows the maze that way (the original's episode is that twin's)."""
    protocol = projected(condition.protocol, maze)
    if protocol is condition.protocol:
        return condition
    return None if protocol == condition.protocol else replace(condition, protocol=protocol)


def views(protocol: Protocol, mazes: Sequence[Maze]) -> list[tuple[Protocol, list[Maze]]]:
    """The protocols ``mazes`` are shown with under ``protocol`` (projection twins their own),
    each with its mazes: what the serving limits are measured over."""
    out: dict[str, tuple[Protocol, list[Maze]]] = {}
    for maze in mazes:
        shown = projected(protocol, maze)
        out.setdefault(shown.hash, (shown, []))[1].append(maze)
    return list(out.values())

