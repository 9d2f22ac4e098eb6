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


@pytest.fixture(scope="session")
def example_midway(example_maze):
    """The design example after 12 optimal actions: key taken, door open, switch on."""
    return walk_actions(example_maze, solve(example_maze).plan[:12])


@pytest.fixture(scope="session")
def walk():
    return walk_actions
