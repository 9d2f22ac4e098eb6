"""One name rule (env.names) for every name that becomes a file or folder name."""

from __future__ import annotations

import pytest

from env.errors import BadInput
from env.maze import maze_from_dict
from env.names import check_name, is_name
from env.sets import resolve_maze


@pytest.mark.parametrize("name, ok", [
    ("a", True), ("scale-8.v2_x", True), ("x" * 64, True), ("x" * 65, False), ("", False), ("-a", False),
    (".hidden", False), ("a..b", False), ("a/b", False), ("a b", False), (7, False), (None, False)])
def test_the_rule(name, ok):
    assert is_name(name) is ok


def test_every_kind_of_name_follows_it():
    example = resolve_maze("example").to_dict()
    with pytest.raises(BadInput, match="objects\\[0\\].id"):
        maze_from_dict({**example, "objects": [{**example["objects"][0], "id": "k..1"}, *example["objects"][1:]]})
    with pytest.raises(BadInput, match="'a..b' is not a valid run name"):
        check_name("--name", "", "a..b", "run name")
    from orchestrator.sweep import parse_sweep

    with pytest.raises(BadInput, match="conditions\\[0\\].name"):
        parse_sweep({"name": "s", "mazes": "hand", "models": ["builtin/oracle"], "conditions": [{"name": "x" * 65}]})
