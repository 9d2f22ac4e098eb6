"""The study's one-shot example: its maze and the action list it gave as the solution
(``agents/prompts/study_example.yaml`` says where both come from)."""

from __future__ import annotations

from functools import cache

import yaml

from agents.actions import EGOCENTRIC_TOKENS
from agents.prompt import PROMPTS_DIR
from env.maze import Maze, load_maze


@cache
def example() -> tuple[Maze, tuple[str, ...]]:
    spec = yaml.safe_load((PROMPTS_DIR / "study_example.yaml").read_text())
    actions = tuple(spec["actions"])
    unknown = [a for a in actions if a not in EGOCENTRIC_TOKENS]
    if unknown:
        raise ValueError(f"agents/prompts/study_example.yaml: {unknown[0]!r} is not an action token")
    return load_maze(PROMPTS_DIR / spec["maze"]), actions
