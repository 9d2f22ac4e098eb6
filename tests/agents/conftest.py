import pytest

import env
from agents.types import PastStep
from env.oracle import solve


def walk_actions(maze, actions, start=None):
    """The PastSteps and final state of playing ``actions`` from the maze's start."""
    state = start or env.initial_state(maze)
    history = []
    for i, a in enumerate(actions, start=1):
        nxt, event = env.step(maze, state, a)
        history.append(PastStep(step=i, action=a, event=event, state_before=state, state_after=nxt))
        state = nxt
    return tuple(history), state


@pytest.fixture(scope="session")
def example_maze():
    return env.resolve_maze("example")


# The design example's first 12 optimal actions, written out: the oracle may break ties between
# equally short plans differently, and the golden prompts must not move with it.
MIDWAY = (2, 1, 2, 3, 0, 2, 4, 2, 2, 0, 2, 4)


@pytest.fixture(scope="session")
def example_midway(example_maze):
    """The design example after 12 optimal actions: key taken, door open, switch on."""
    history, state = walk_actions(example_maze, MIDWAY)
    assert solve(example_maze, start=state).optimal_actions == solve(example_maze).optimal_actions - 12
    return history, state


@pytest.fixture(scope="session")
def walk():
    return walk_actions


@pytest.fixture(scope="session")
def midway_actions():
    return MIDWAY
