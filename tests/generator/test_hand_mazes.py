import pytest

from env.checks import run_checks
from env.oracle import solve
from env.sets import resolve_mazes

HAND = [m for m in resolve_mazes("hand") if m.id != "example"]


def test_at_least_twelve_hand_mazes():
    assert len(HAND) >= 12
    assert all(m.meta and m.meta.source == "hand" for m in HAND)


@pytest.mark.parametrize("maze", HAND, ids=lambda m: m.id)
def test_each_hand_maze_passes_the_oracle_and_the_checks(maze):
    assert solve(maze).status == "solved"
    assert [r for r in run_checks(maze) if not r.passed] == []


def _by(id_part):
    return next(m for m in HAND if id_part in m.id)


def test_the_key_is_far_from_its_door():
    from env.generator.topology import bfs_dist

    m = _by("key-far")
    floor = {(x, y) for y, row in enumerate(m.grid) for x, c in enumerate(row) if c == "."}
    key, door = m.keys[0].pos, m.doors[0].pos
    start_to_door = bfs_dist(tuple(m.start.pos), floor)[tuple(door)]
    assert bfs_dist(tuple(key), floor)[tuple(door)] >= 5 * start_to_door


def test_the_switch_of_a_gate_is_behind_a_door():
    m = _by("switch-behind-door")
    assert [m.by_id[s[0]].kind for s in m.meta.chain] == ["key", "switch"]


def test_a_decoy_key_lies_beside_the_real_one():
    m = _by("decoy-key-by")
    real = m.by_id[m.meta.chain[0][0]]
    decoy = m.by_id[m.meta.distractors[0]]
    assert decoy.kind == "key" and decoy.color != real.color
    assert abs(real.pos[0] - decoy.pos[0]) + abs(real.pos[1] - decoy.pos[1]) == 1


def test_a_long_winding_corridor_needs_many_actions_and_no_mechanism():
    m = _by("winding")
    assert not m.objects and m.category == "scale" and solve(m).optimal_actions >= 60
