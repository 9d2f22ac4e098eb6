import pytest
from oracle_mazes import random_mazes


@pytest.fixture(scope="session")
def mazes_random():
    return random_mazes(1234, 80) + random_mazes(99, 20, size=9)
