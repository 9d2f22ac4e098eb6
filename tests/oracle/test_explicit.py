"""The compiled search over explicit multinet-pr57 mazes (``env.oracle.explicit``) finds what the
plain search finds stepping through ``env.state.step``: the same plans and states explored, the
same sweeps with their edges in order, the same distances, the configurations numbered alike
(docs/oracle.md#how-it-is-fast)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from env import jit, resolve_mazes
from env.maze import Maze, maze_from_dict
from env.oracle import STATE_CAP, DistanceTable, StateSpace, explicit, solve
from env.oracle.bfs import python_search
from env.oracle.space import state_space
from env.state import ACTIONS, DONE, MazeState, initial_state, no_change, step

pytestmark = pytest.mark.skipif(jit.njit is None, reason="numba is not installed")


@pytest.fixture(scope="module")
def m7m10() -> list[Maze]:
    return resolve_mazes(["study-m7m10"])


def _variant(maze: Maze, i: int) -> Maze:
    """The maze under the rules no shipped maze plays: death ends the episode, a short freeze, one-shot
    and hold switches, and (``i`` even) keys kept after a door."""
    d = maze.to_dict()
    d["rules"] = {**(d.get("rules") or {}), "death": "fail", "freeze_steps": 2, "key_consumption": i % 2 == 1}
    kinds = ("hold", "one_shot", "toggle")
    for j, o in enumerate(o for o in d["objects"] if o["kind"] == "switch"):
        o["switch_type"] = kinds[(i + j) % 3]
    d["id"] = f"{maze.id}-variant"
    return maze_from_dict(d)


def _answers(maze: Maze, engine: str, monkeypatch) -> dict:
    """solve and the full distance table of a fresh space, and what the space numbered."""
    monkeypatch.setenv(jit.ENGINE_VAR, engine)
    state_space.cache_clear()
    s = solve(maze, cache=False)
    t = DistanceTable(maze)
    sweep = t.sweep
    return {"solve": (s.status, s.plan, s.states_explored), "dist": t.dist.tolist(),
            "sweep": [getattr(sweep, f).tolist() for f in ("ids", "parent", "action", "edge_src", "edge_dst", "edge_act")],
            "goal": (sweep.status, sweep.goal_index), "configs": t.space.configs,
            "index": t.space.config_index}


def _alike(maze: Maze, monkeypatch) -> None:
    assert StateSpace(maze).explicit and explicit._rules(StateSpace(maze)) is not None, maze.id
    fast = _answers(maze, "compiled", monkeypatch)
    plain = _answers(maze, "python", monkeypatch)
    assert fast == plain, maze.id


def test_every_m7m10_maze_solves_and_tables_alike(m7m10, monkeypatch):
    for m in m7m10:
        _alike(m, monkeypatch)


def test_every_discovery_maze_solves_and_tables_alike(monkeypatch):
    """The generated multinet-pr57 mazes, one-way and reversing tiles among their later tiles."""
    mazes = resolve_mazes(["discovery"])
    assert {"oneway", "reverser"} <= {o.kind for m in mazes for o in m.objects}
    for m in mazes:
        _alike(m, monkeypatch)


def test_generated_mazes_with_each_later_tile_are_the_same_and_search_alike(monkeypatch):
    """The generator asks the oracle of every candidate: the same maze from the same seed with
    either search, and then the same answers."""
    from env.generator import GenParams, generate
    from env.generator.generator import TILES

    def mazes() -> list[str]:
        return [json.dumps(generate(GenParams(width=12, height=12, topology="rooms", ruleset="multinet-pr57",
                                              tile=tile), seed=seed, maze_id=f"g-{tile}").maze.to_dict(),
                           sort_keys=True) for tile in TILES if tile != "none" for seed in (3, 4)]

    monkeypatch.setenv(jit.ENGINE_VAR, "compiled")
    fast = mazes()
    monkeypatch.setenv(jit.ENGINE_VAR, "python")
    assert mazes() == fast
    for text in fast:
        _alike(maze_from_dict(json.loads(text)), monkeypatch)


@pytest.mark.parametrize("i", [0, 7, 9, 13, 14])
def test_the_rules_no_shipped_maze_plays_search_alike(m7m10, i, monkeypatch):
    m = _variant(m7m10[i], i)
    assert m.rulebook.death == "fail" and m.switches
    _alike(m, monkeypatch)


def _random_state(maze: Maze, rng: random.Random) -> MazeState:
    """Any state the dense index can express, reachable or not."""
    s = initial_state(maze)
    floors = [(x, y) for y in range(maze.height) for x in range(maze.width) if not maze.walls[x, y]]
    carrying = rng.randrange(-1, len(maze.keys)) if maze.keys else -1
    keys = tuple(None if i == carrying or rng.random() < 0.3 else p for i, p in enumerate(s.keys))
    return MazeState(pos=rng.choice(floors), dir=rng.randrange(4), carrying=carrying, keys=keys,
                     doors=tuple(rng.randrange(3) for _ in s.doors),
                     switches=tuple(rng.random() < 0.5 for _ in s.switches),
                     frozen=rng.choice([0, 0, 1, maze.rulebook.freeze_steps]), phase=rng.randrange(4),
                     latched=rng.random() < 0.3)


def test_random_states_step_as_env_state_steps(m7m10):
    """The kernel's moves from any state, every action (``done`` too), are ``env.state.step``'s
    under ``no_change``, with new configurations numbered as the space numbers them."""
    rng = random.Random(7)
    order = tuple(range(len(ACTIONS) - 1))
    assert order[-1] == DONE
    for maze in [*m7m10, *(_variant(m, i) for i, m in enumerate(m7m10[:6]))]:
        space = StateSpace(maze)
        rules = explicit._rules(space)
        assert rules is not None
        for _ in range(40):
            s = _random_state(maze, rng)
            sid = space.encode(s)
            rows, keys, vals, meta = explicit._Store(space, explicit._weights(rules)).store()
            out_n, out_a = np.empty(len(order), np.int64), np.empty(len(order), np.int8)
            after = np.empty(rows.shape[1], np.int64)
            shape, cells, flat = rules
            k = explicit.moves(shape, cells, flat, rows, keys, vals, meta, sid, np.array(order, np.int64), out_n,
                               out_a, after)
            fast = list(zip(out_n[:k].tolist(), out_a[:k].tolist(), strict=True))
            assert fast == space.moves(sid, order), (maze.id, s)
            stepped = {a: step(maze, s, a)[0] for a in order}
            assert {a: space.decode(n) for n, a in fast} == {a: n for a, n in stepped.items() if not no_change(s, n)}


def test_caps_and_other_starts_agree(m7m10, monkeypatch):
    """Undecided part-way (the study's cap on states expanded, the sweep's on states found), and a
    search from a state deep in a random episode."""
    m = m7m10[-1]
    rng = random.Random(3)
    s = initial_state(m)
    for _ in range(60):
        s = step(m, s, rng.randrange(5))[0]

    def answers(engine: str) -> list:
        monkeypatch.setenv(jit.ENGINE_VAR, engine)
        space = StateSpace(m)
        out = [(x.status, x.plan, x.states_explored) for x in (solve(m, cache=False, cap=300), solve(m, start=s))]
        found = explicit.search(space, [space.start_id()], 2000, False, True) if engine == "compiled" else \
            python_search(space, [space.start_id()], 2000, False, True)
        assert found is not None
        return [*out, found.status, found.ids.tolist(), found.edges()[1].tolist(), space.configs]

    fast, plain = answers("compiled"), answers("python")
    assert fast == plain
    assert plain[0][0] == "undecided" and plain[2] == "undecided"


def test_what_the_kernel_does_not_hold_goes_to_the_plain_search(m7m10):
    m = m7m10[0]
    dropping = StateSpace(m, drop=True)
    assert explicit.search(dropping, [dropping.start_id()], STATE_CAP, True, False) is None
    assert explicit.study_search(dropping, dropping.start_id(), STATE_CAP) is None
    r1 = resolve_mazes(["study"])[0]
    assert explicit._rules(StateSpace(r1)) is None
