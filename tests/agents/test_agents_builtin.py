import asyncio

import pytest

import env
from agents import KNOWN_BUILTINS, Protocol, Turn, build_agent
from agents.builtin import ExplorerAgent
from agents.types import Agent, PastStep
from env.errors import BadInput
from env.oracle import solve
from env.sets import set_files


def play(agent, maze, cap, protocol=None, state=None):
    """Run ``agent`` on ``maze`` for at most ``cap`` steps (from ``state``, by default the start;
    under ``protocol``, by default gridbench's); returns (solved, steps, actions)."""
    protocol = protocol or Protocol()
    state, history, actions = state or env.initial_state(maze), [], []

    async def run():
        nonlocal state
        for n in range(1, cap + 1):
            d = await agent.act(Turn(maze, protocol, n, state, tuple(history), cap))
            assert d.parse == "builtin" and d.action is not None
            nxt, event = env.step(maze, state, d.action)
            history.append(PastStep(n, d.action, event, state, nxt))
            actions.append(d.action)
            state = nxt
            if event == "goal":
                return True, n
        return False, cap

    solved, steps = asyncio.run(run())
    return solved, steps, actions


HAND = [env.load_maze(p) for p in set_files("hand")]


@pytest.mark.parametrize("maze", HAND, ids=[m.id for m in HAND])
def test_oracle_is_exactly_optimal(maze):
    optimal = solve(maze).optimal_actions
    solved, steps, _ = play(build_agent("builtin/oracle", Protocol()), maze, 3 * optimal)
    assert solved and steps == optimal


def test_random_is_seeded_and_covers_all_six(example_maze):
    _, _, a = play(build_agent("builtin/random", Protocol(), seed=7), example_maze, 60)
    _, _, b = play(build_agent("builtin/random", Protocol(), seed=7), example_maze, 60)
    _, _, c = play(build_agent("builtin/random", Protocol(), seed=8), example_maze, 60)
    assert a == b and a != c and set(a) == set(range(6))


def test_explorer_solves_the_design_example_within_three_times_optimal(example_maze):
    optimal = solve(example_maze).optimal_actions
    agent = build_agent("builtin/explorer", Protocol())
    solved, steps, _ = play(agent, example_maze, 3 * optimal)
    assert solved and steps <= 3 * optimal
    # it found out for itself which interactions change the world: key, door, switch
    tried = [(where, action) for _, where, _, action in agent.changes]
    assert ("front", "pickup") in tried and ("front", "toggle") in tried and ("on", "toggle") in tried


def test_explorer_never_undoes_a_change_while_something_new_remains(example_maze):
    agent = ExplorerAgent()
    play(agent, example_maze, 60)
    cells = [(where, cell, action) for _, where, cell, action in agent.changes]
    assert len(cells) == len(set(cells))


def test_builtins_are_agents_and_unknown_names_are_bad_input():
    for name in KNOWN_BUILTINS:
        assert isinstance(build_agent(f"builtin/{name}", Protocol()), Agent)
    with pytest.raises(BadInput, match="unknown built-in agent"):
        build_agent("builtin/genius", Protocol())
    with pytest.raises(ValueError, match="gridbench play"):
        build_agent("human/alice", Protocol())


GATE_BEHIND_DOOR = {
    "format": "gridbench.maze/1", "id": "gate-behind-door",
    "grid": ["##########",
             "#........#",
             "#........#",
             "#........#",
             "#........#",
             "##.#######",
             "#........#",
             "####.#####",
             "#........#",
             "##########"],
    "start": {"pos": [1, 8], "dir": "west"}, "goal": [7, 1],
    "objects": [
        {"id": "k1", "kind": "key", "color": "yellow", "pos": [8, 8]},
        {"id": "d1", "kind": "door", "color": "yellow", "pos": [4, 7], "state": "locked"},
        {"id": "s1", "kind": "switch", "color": "purple", "pos": [4, 6], "on": False, "controls": ["g1"]},
        {"id": "g1", "kind": "gate", "color": "purple", "pos": [3, 6]},
    ],
}


def test_explorer_restores_a_change_it_undid():
    # standing on the switch and facing the gate, its toggle "at the gate" flips the switch back
    # off; the explorer notices the world went back to an earlier state and toggles again
    maze = env.maze_from_dict(GATE_BEHIND_DOOR, "test")
    optimal = solve(maze).optimal_actions
    agent = ExplorerAgent()
    solved, steps, actions = play(agent, maze, 3 * optimal)
    assert solved and steps <= 3 * optimal
    assert [c[2] for c in agent.changes].count((4, 6)) == 1


def test_explorer_finds_the_study_rulebook_out_by_trying():
    """Under multinet-r1 a key is walked onto and picked up from underfoot; the explorer is not
    told which rulebook a maze has and learns it from what its actions do."""
    import inspect

    maze = env.resolve_maze("study/r1_M1_8x8_corridor_kr_0")
    optimal = solve(maze).optimal_actions
    agent = build_agent("builtin/explorer", Protocol())
    solved, steps, _ = play(agent, maze, 3 * optimal)
    tried = [(where, action) for _, where, _, action in agent.changes]
    assert solved and steps <= 3 * optimal and tried[0] == ("on", "pickup") and ("front", "toggle") in tried
    assert ".ruleset" not in inspect.getsource(ExplorerAgent)


@pytest.mark.parametrize("maze_id", ["r1_D2_8x8_corridor_wrong_ky_inactive_sb_sg_kr_1", "r1_M6_14x14_dense_kr_sg_kb_1"])
def test_oracle_is_exactly_optimal_under_the_study_rules(maze_id):
    maze = env.resolve_maze(f"study/{maze_id}")
    optimal = solve(maze).optimal_actions
    solved, steps, _ = play(build_agent("builtin/oracle", Protocol()), maze, 3 * optimal)
    assert solved and steps == optimal


# ---- with DROP offered (actions: with_drop) ----------------------------------------------------
DROPPING = Protocol(style="study", prompt="minimal", start_info=False, mechanism_locations=False,
                    actions="with_drop")
DECOY = "study/r1_D2_8x8_corridor_wrong_ky_inactive_sb_sg_kr_1"  # kY: its wrong-colour key


def test_the_oracle_agent_puts_a_decoy_key_down_when_drop_is_offered():
    from env.oracle import action_distance
    from env.state import DROP, FORWARD, PICKUP, RIGHT

    maze = env.resolve_maze(DECOY)
    state = env.initial_state(maze)
    for a in (RIGHT, FORWARD, FORWARD, PICKUP):  # onto the decoy key, and take it
        state, _ = env.step(maze, state, a)
    assert action_distance(maze, state) is None
    d = action_distance(maze, state, drop=True)
    solved, steps, actions = play(build_agent("builtin/oracle", Protocol()), maze, 3 * d, DROPPING, state)
    assert solved and steps == d and DROP in actions  # put down somewhere on a shortest way


def test_the_random_agent_draws_from_the_offered_actions():
    from env.state import DROP

    maze = env.resolve_maze(DECOY)
    _, _, six = play(build_agent("builtin/random", Protocol(), seed=3), maze, 300)
    _, _, seven = play(build_agent("builtin/random", Protocol(), seed=3), maze, 300, DROPPING)
    assert DROP not in six and DROP in seven


def test_the_explorer_recovers_from_a_decoy_key_only_with_drop():
    from env.state import DROP

    maze = env.resolve_maze(DECOY)
    cap = 3 * solve(maze).optimal_actions
    stuck, _, without = play(build_agent("builtin/explorer", Protocol()), maze, cap)
    solved, _, actions = play(build_agent("builtin/explorer", Protocol()), maze, 10 * cap, DROPPING)
    assert DROP not in without and DROP in actions and solved
