"""Exact BFS oracle over the full maze state (docs/design.md §4), under either ruleset.

The state space is searched through a dense integer index instead of ``MazeState`` objects:

* a state's *navigation* part (floor cell, facing) is ``floor_index * 4 + dir``;
* its *mechanism* part (where each key is, door states, switch states, and under multinet-r1 the
  freeze countdown) is interned to a small integer the first time it is seen. Without DROP keys
  can only ever lie on the cells that held keys at the start (pickup swaps the carried key into
  the cell the front key left), so a key's place is one of ``K`` key cells, "carried" or
  (multinet-r1) "used up": a handful of values per key. With DROP offered (``drop=True``, the
  protocol's ``actions: with_drop``) a key may be put down on any floor cell: every floor cell is
  then a key cell, and the search goes state by state (``explicit``) with a DROP edge.

A state is then ``mechanism * (4 * floors) + navigation``. Breadth-first search runs one layer
at a time over numpy arrays of such ids: turns and moves are table look-ups, and the few
transitions that change the mechanism state (pickup, toggle) are computed once per
(mechanism state, key cell / door / switch) pair and then looked up too.

Under multinet-r1 keys are walkable and picked up from underfoot, a door opens for good, and a
move may land on a teleporter's other end: all still table look-ups. Hold switches (changed by
moving), kill cells (a move that resets everything) and frozen tiles (a countdown) are not: a maze
with any of them is searched state by state through ``env.state.step`` (``explicit``), over the
same dense ids. ``solve`` on a multinet-r1 maze runs the study's own search: a plain BFS in its
successor order (left, right, pickup, toggle, forward) that stops when the goal is first
generated, so ``states_explored`` is the study's count (docs/oracle.md).

``env.state.step`` stays the reference dynamics; the tests hold ``StateSpace.successor`` and
``reference_solve`` to it. The public names (``solve``, ``optimal_actions``,
``DistanceTable``, ``distance_table``, ``action_distance``, ``tile_distance``) are the contract
the rest of gridbench uses.

The package by job: ``space`` (the dense index and its transitions), ``bfs`` (the layered
search over it), ``plans`` (``solve``: shortest plans, the study's search order), ``distances``
(distance tables in actions and tiles), ``reference`` (the plain BFS the rest is held to),
``solution`` (the answer they share). Every name below is importable from ``env.oracle``.
"""

from __future__ import annotations

from env.oracle.bfs import Search
from env.oracle.distances import (
    DistanceTable,
    EdgeIndex,
    action_distance,
    distance_table,
    hops,
    tile_distance,
)
from env.oracle.plans import optimal_actions, solve
from env.oracle.reference import reference_solve
from env.oracle.solution import STATE_CAP, Solution, Status
from env.oracle.space import R1_ORDER, R1_ORDER_DROP, Config, StateSpace, Unencodable, state_space

__all__ = [
    "R1_ORDER", "R1_ORDER_DROP", "STATE_CAP", "Config", "DistanceTable", "EdgeIndex", "Search", "Solution", "StateSpace",
    "Status", "Unencodable", "action_distance", "distance_table", "hops", "optimal_actions",
    "reference_solve", "solve", "state_space", "tile_distance",
]
