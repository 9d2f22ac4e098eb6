"""The mechanics of the mazes, one module each (``env.mechanics.<name>``), found through this one
registry. Each module declares a ``Mechanic`` (``env.mechanics.base`` says what one holds: what it
is, its records and settings, its rules and state, its twin, how it is laid, looks, is named, read
from the study's files and discovered). Every other part asks this registry (docs/design.md §2,
"Mechanics").

The order of ``MECHANICS`` is the order every table and list shows them in.
"""

from __future__ import annotations

from typing import Any

from env.mechanics import (
    block,
    death,
    hazard,
    ice,
    key_door,
    oneway,
    portal,
    reverser,
    switch_gate,
    turntable,
)
from env.mechanics.base import MINIGRID, MULTINET_PR57, MULTINET_R1, Mechanic

MECHANICS: tuple[Mechanic, ...] = tuple(m.MECHANIC for m in (
    key_door, switch_gate, portal, hazard, block, death, ice, turntable, oneway, reverser))


def by_name(name: str) -> Mechanic:
    for m in MECHANICS:
        if m.name == name:
            return m
    raise KeyError(name)


def of_kind(kind: str) -> Mechanic:
    """The mechanic an object kind belongs to."""
    for m in MECHANICS:
        if kind in m.kinds:
            return m
    raise KeyError(kind)


def covered_cells(obj: Any) -> tuple[tuple[int, int], ...]:
    """The cells one object covers: its ``pos``, then the fields its mechanic names (``more_cells``)."""
    return (obj.pos, *(getattr(obj, f) for f in of_kind(obj.kind).more_cells))


def kinds_only_in(*rulesets: str) -> tuple[str, ...]:
    """The object kinds whose mechanics stand in these rulesets and in no other."""
    return tuple(k for m in MECHANICS if set(m.rulesets) <= set(rulesets) for k in m.kinds)


def removal_twins() -> dict[str, Mechanic]:
    """Each removal twin's variant kind and the mechanic it takes out, in the registry's order."""
    return {m.removal: m for m in MECHANICS if m.removal is not None}


def generated() -> tuple[Mechanic, ...]:
    """The later tiles the generator lays into multinet-pr57 mazes (``GenParams.tile``)."""
    return tuple(m for m in MECHANICS if m.generated)


def study_fields() -> frozenset[str]:
    """Every list under the study's ``mechanisms`` that some mechanic reads."""
    return frozenset(f for m in MECHANICS for f in m.study_fields)


def later_fields() -> tuple[str, ...]:
    """The fields only the later harness's task files hold."""
    return tuple(f for m in MECHANICS for f in m.later_fields)


__all__ = ["MECHANICS", "MINIGRID", "MULTINET_PR57", "MULTINET_R1", "Mechanic", "by_name", "generated",
           "covered_cells", "kinds_only_in", "later_fields", "of_kind", "removal_twins", "study_fields"]
