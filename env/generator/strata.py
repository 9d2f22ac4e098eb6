"""What the eval and held-out sets must hold: every composition figure of the study, as a constraint.

Each ``Constraint`` is one count the study reports about its 50-maze eval set, or one its
numbers imply, with the place in the study it comes from. ``select_sets`` (``env.generator.maze_pool``)
makes every row a constraint of its integer program; ``tests/generator/test_shipped_sets.py``
recomputes every row from the shipped maze files.

A row ``over="set"`` counts the set's mazes (or sums a number per maze). The rows about the
study's six solved episodes count within a *solve witness*: eval mazes, each with how many of the
six solves it takes, on which the study's solves can have fallen. The study says where its solves
came from (grid, path band, mechanism); a set in which all of that is possible at once holds such
a witness. The study counts its solved mazes two ways (six in the introduction; 45 of 50
unsolved, so five, in three places), so the set holds a witness for each reading (``SOLVE_READINGS``):
rows ``over="solved episodes"`` count with multiplicity, ``over="solved mazes"`` count distinct
mazes.

Per-maze numbers are read from manifest entries (``env.generator.maze_pool.manifest_entry``): the
optimal action count, grid, category and object counts.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from env.study_facts import ANALYSIS_BANDS, SELECTION_BANDS, STUDY_EVAL_SIZE, STUDY_MODEL_COUNT, STUDY_SOLVES

Entry = dict[str, Any]
K = TypeVar("K", bound=Hashable)

GRIDS = ("8x8", "10x10", "14x14")
CATEGORIES = ("scale", "mechanism", "distractor")


def in_range(optimal: int, lo: int | None, hi: int | None) -> bool:
    return (lo is None or optimal >= lo) and (hi is None or optimal <= hi)


def band_of(optimal: int) -> str | None:
    """The selection band of an optimal action count, or None outside all five."""
    for name, lo, hi in SELECTION_BANDS:
        if in_range(optimal, lo, hi):
            return name
    return None


# ---- per-maze facts ------------------------------------------------------------------------


def has_switch(e: Entry) -> bool:
    return e["counts"]["switch"] > 0


def has_switch_gate(e: Entry) -> bool:
    return e["counts"]["switch"] > 0 and e["counts"]["gate"] > 0


def has_key_door(e: Entry) -> bool:
    return e["counts"]["key"] > 0 and e["counts"]["door"] > 0


def is_distractor(e: Entry) -> bool:
    return e["category"] == "distractor"


def could_be_solved(e: Entry) -> bool:
    """Every study solve was on a maze with no switch, no distractor and an optimal plan of at
    most 45 actions."""
    return not has_switch(e) and not is_distractor(e) and e["optimal_actions"] <= 45


def _optimal(lo: int | None, hi: int | None) -> Callable[[Entry], int]:
    return lambda e: int(in_range(e["optimal_actions"], lo, hi))


def _field(name: str, value: str) -> Callable[[Entry], int]:
    return lambda e: int(e[name] == value)


def _count(kind: str) -> Callable[[Entry], int]:
    return lambda e: e["counts"][kind]


# ---- the table -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Constraint:
    what: str  # what is counted, as the selection table and the docs name it
    per_maze: Callable[[Entry], int]  # one maze's part: 1 or 0, or a number to sum
    op: str  # "==" or ">="
    target: int
    source: str  # where in the study the number comes from, and how it becomes a maze count
    over: str = "set"  # "set", "solved episodes" or "solved mazes" (a witness's, see above)
    # how the row carries to a set of another size: "share" (largest remainder among the rows
    # of its group, which partition the set), "floor" (at least the floor of its share), or
    # None (the study's 50-maze eval set only)
    scale: str | None = None
    group: str = ""
    reading: str = ""  # which solve reading a witness row belongs to (set by ``constraints_for``)

    def holds(self, got: int) -> bool:
        return got == self.target if self.op == "==" else got >= self.target

    @property
    def wanted(self) -> str:
        return f"{'' if self.op == '==' else '>='}{self.target}"


_POOL = "Task Pool and the Evaluation Set"
_FIG6 = "Difficulty Axes, Figure 6"
_SOLVES = "Solve Rates and Progress"

STUDY_EVAL: tuple[Constraint, ...] = (
    *(Constraint(f"path {name}", _optimal(lo, hi), "==", n, f"{_POOL}: {n} mazes in this band", scale="share",
                 group="path band")
      for (name, lo, hi), n in zip(SELECTION_BANDS, (2, 12, 14, 8, 14), strict=True)),
    *(Constraint(f"path {name}", _optimal(lo, hi), "==", n // STUDY_MODEL_COUNT,
                 f"{_FIG6}: {n} episodes / {STUDY_MODEL_COUNT} models")
      for (name, lo, hi), n in zip(ANALYSIS_BANDS, (39, 30, 15, 66), strict=True)),
    *(Constraint(f"grid {g}", _field("grid", g), "==", n,
                 f"{_POOL}: {n} mazes; {_SOLVES}: {STUDY_MODEL_COUNT * n} episodes", scale="share", group="grid")
      for g, n in zip(GRIDS, (11, 19, 20), strict=True)),
    *(Constraint(f"category {c}", _field("category", c), "==", n, f"{_POOL}: {n} mazes", scale="share",
                 group="category")
      for c, n in zip(CATEGORIES, (3, 37, 10), strict=True)),
    Constraint("with a switch and a gate", lambda e: int(has_switch_gate(e)), "==", 35,
               "Failure Modes: 105 episodes with a switch / 3 models", scale="floor"),
    Constraint("with a switch but no gate", lambda e: int(has_switch(e) and not has_switch_gate(e)), "==", 0,
               "Designing an environment (findings): those 105 episodes had a switch and a gate"),
    Constraint("with a key and a door", lambda e: int(has_key_door(e)), ">=", 20,
               "gridbench's choice (the study gives no count): room for the key-door findings",
               scale="floor"),
    Constraint("doors, summed", _count("door"), ">=", 5,
               "Failure Modes: 15 door openings over 3 models, one per door and episode at least"),
    Constraint("keys, summed", _count("key"), ">=", 9,
               "Failure Modes: 27 key pickups over 3 models, one per key and episode at least"),
    Constraint("optimal >= 48", _optimal(48, None), ">=", 25,
               "Figure 5: median closest approach 47.5 of 150 episodes, so 75 episodes stayed >= 48 "
               "actions away, which needs a start that far: 25 mazes"),
    Constraint("optimal <= 45, switches = gates > 0",
               lambda e: int(e["optimal_actions"] <= 45 and has_switch(e) and
                             e["counts"]["switch"] == e["counts"]["gate"]), ">=", 1,
               "Difficulty Axes: gates and switches explain progress differently at <= 45 actions (R2 "
               "0.255 vs 0.247), so there the gate count is no linear function of the switch count"),
    Constraint("optimal <= 45, switches != gates",
               lambda e: int(e["optimal_actions"] <= 45 and e["counts"]["switch"] != e["counts"]["gate"]),
               ">=", 1, "Difficulty Axes: as the row above (overall too: R2 0.122 vs 0.104)"),
    Constraint("solves", lambda e: 1, "==", STUDY_SOLVES, f"{_SOLVES}: 6 of 150 episodes solved",
               over="solved episodes"),
    Constraint("solves on switch, distractor or > 45", lambda e: int(not could_be_solved(e)), "==", 0,
               f"{_SOLVES}: every solve had no switch, no distractor, optimal <= 45", over="solved episodes"),
    Constraint("solves on 8x8", _field("grid", "8x8"), "==", 3, f"{_SOLVES}: 3 of 33 8x8 episodes",
               over="solved episodes"),
    Constraint("solves on 10x10", _field("grid", "10x10"), "==", 3, f"{_SOLVES}: 3 of 57 10x10 episodes",
               over="solved episodes"),
    Constraint("solves at <= 30", _optimal(None, 30), "==", 5, f"{_FIG6}: 5 solves in the <= 30 band",
               over="solved episodes"),
    Constraint("solves at 31-45", _optimal(31, 45), "==", 1, f"{_FIG6}: 1 solve in the 31-45 band",
               over="solved episodes"),
    Constraint("solves with a key and a door", lambda e: int(has_key_door(e)), "==", 4,
               "Failure Modes: 4 of the 6 solves on key-door mazes (the other 2: navigation only)",
               over="solved episodes"),
    Constraint("solves with two keys and two doors",
               lambda e: int(e["counts"]["door"] >= 2 and e["counts"]["key"] >= 2), ">=", 1,
               "Failure Modes: one solve took a key, a door, a second key and a second door",
               over="solved episodes"),
)


@dataclass(frozen=True)
class SolveReading:
    name: str
    mazes: int  # distinct mazes the six solves fall on
    source: str


SOLVE_READINGS: tuple[SolveReading, ...] = (
    SolveReading("6 mazes", 6, "introduction: six mazes solved across the 3 models"),
    SolveReading("5 mazes", 5, f"introduction, findings and {_SOLVES}: 45 of 50 mazes solved by no model, "
                 "so one maze holds two of the six solves (by two models)"),
)


def constraints_for(size: int, heldout: bool = False) -> list[Constraint]:
    """The study's table for its own eval set; for a held-out set or an eval set of another
    size, the rows that carry over (``scale``) scaled to ``size`` mazes."""
    if size == STUDY_EVAL_SIZE and not heldout:
        out = [c for c in STUDY_EVAL if c.over == "set"]
        for r in SOLVE_READINGS:
            out.append(Constraint(f"solved mazes [{r.name}]", lambda e: 1, "==", r.mazes, r.source,
                                  over="solved mazes", reading=r.name))
            out += [replace(c, what=f"{c.what} [{r.name}]", reading=r.name)
                    for c in STUDY_EVAL if c.over == "solved episodes"]
        return out
    shares: dict[str, dict[str, int]] = {}
    for c in STUDY_EVAL:
        if c.scale == "share" and c.group not in shares:
            rows = {r.what: r.target for r in STUDY_EVAL if r.group == c.group}
            shares[c.group] = largest_remainder(rows, size)
    out = []
    for c in STUDY_EVAL:
        if c.scale == "share":
            out.append(replace(c, target=shares[c.group][c.what]))
        elif c.scale == "floor":
            out.append(replace(c, op=">=", target=c.target * size // STUDY_EVAL_SIZE))
    return out


def largest_remainder(weights: Mapping[K, int], total: int) -> dict[K, int]:
    """``total`` split in proportion to ``weights``; ties go to the earlier key."""
    s = sum(weights.values())
    raw = {k: v * total / s for k, v in weights.items()}
    out = {k: int(r) for k, r in raw.items()}
    rest = total - sum(out.values())
    for k in sorted(raw, key=lambda k: (-(raw[k] - out[k]), list(raw).index(k)))[:rest]:
        out[k] += 1
    return out


# ---- checking a set ------------------------------------------------------------------------


Witness = dict[str, list[tuple[Entry, int]]]  # reading -> (maze, solves it takes)


def achieved(c: Constraint, entries: Sequence[Entry], witness: Witness | None = None) -> int:
    if c.over == "set":
        return sum(c.per_maze(e) for e in entries)
    solves = (witness or {}).get(c.reading, [])
    if c.over == "solved mazes":
        return sum(c.per_maze(e) for e, times in solves if times)
    return sum(c.per_maze(e) * times for e, times in solves)


def find_solve_witness(entries: Sequence[Entry], constraints: Sequence[Constraint]) -> Witness | None:
    """For every solve reading among ``constraints``, mazes of ``entries`` and how many solves
    each takes (at most one per model) such that every row of that reading holds, found by
    trying the combinations of the mazes that could be solved at all (a set has a handful; the
    pool's draw finds its witness in the integer program instead); None when a reading has no
    witness."""
    out: Witness = {}
    for reading in dict.fromkeys(c.reading for c in constraints if c.reading):
        rows = [c for c in constraints if c.reading == reading]
        k = next(c.target for c in rows if c.over == "solved mazes")
        candidates = [e for e in entries if could_be_solved(e)]
        found = None
        for combo in itertools.combinations(candidates, k):
            for times in _compositions(STUDY_SOLVES, k, STUDY_MODEL_COUNT):
                w = {reading: list(zip(combo, times, strict=True))}
                if all(c.holds(achieved(c, (), w)) for c in rows):
                    found = w[reading]
                    break
            if found:
                break
        if found is None:
            return None
        out[reading] = found
    return out


def _compositions(total: int, parts: int, most: int) -> list[tuple[int, ...]]:
    """Ways to write ``total`` as ``parts`` ordered numbers from 1 to ``most``."""
    if parts == 0:
        return [()] if total == 0 else []
    return [(first, *rest) for first in range(1, min(most, total) + 1)
            for rest in _compositions(total - first, parts - 1, most)]


# ---- the composition tables of docs/generator.md -------------------------------------------


def composition_table(columns: Sequence[tuple[str, Sequence[Entry], bool]]) -> str:
    """Every row of the study's table as markdown: for each column (a name, a set's manifest
    entries, whether it is a held-out set) what the set achieves and, in brackets, what the row
    wants of a set its size. A solve row shows one cell per reading (``a / b``), counted within a
    witness found afresh (``no witness`` when the set has none)."""
    cells: dict[str, dict[str, list[str]]] = {}
    sources: dict[str, list[str]] = {}
    for name, entries, heldout in columns:
        constraints = constraints_for(len(entries), heldout=heldout)
        # each reading on its own: a set may hold a witness for one reading and not the other
        witness: dict[str, Witness | None] = {
            r: find_solve_witness(entries, [c for c in constraints if c.reading == r])
            for r in dict.fromkeys(c.reading for c in constraints if c.reading)}
        for c in constraints:
            row = c.what.split(" [")[0]
            sources.setdefault(row, [])
            if c.source not in sources[row]:
                sources[row].append(c.source)
            if c.reading and witness[c.reading] is None:
                text = "no witness"
            else:
                text = f"{achieved(c, entries, witness.get(c.reading))} ({c.wanted})"
            cells.setdefault(row, {}).setdefault(name, []).append(text)
    names = [name for name, _, _ in columns]
    lines = ["| constraint | " + " | ".join(names) + " | where in the study |",
             "|---" * (len(names) + 2) + "|"]
    for row, by in cells.items():
        lines.append(f"| {row} | " + " | ".join(" / ".join(by.get(n, [])) for n in names)
                     + f" | {'; '.join(sources[row])} |")
    return "\n".join(lines) + "\n"


def shipped_composition() -> str:
    """``composition_table`` of the shipped sets: gridbench's eval and held-out sets beside the
    study's own 50 and 15 (every optimal count from the oracle, nothing from a manifest)."""
    from env.generator.maze_pool import manifest_entry
    from env.oracle import solve
    from env.sets import resolve_mazes

    def entries(name: str) -> list[Entry]:
        out = []
        for m in resolve_mazes(name):
            sol = solve(m)
            if sol.optimal_actions is None:
                raise ValueError(f"{name}/{m.id}: {sol.status}")
            out.append(manifest_entry(m, sol.optimal_actions))
        return out

    return composition_table([("eval", entries("eval"), False), ("held-out", entries("heldout"), True),
                              ("the study's 50", entries("study"), False),
                              ("the study's 15", entries("study-heldout"), True)])


if __name__ == "__main__":
    print(shipped_composition(), end="")
