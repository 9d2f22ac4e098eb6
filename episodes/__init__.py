"""One episode, without Ray: the loop that plays it (``episode``), the rules that end it
(``termination``), the one builder and checker of its step rows (``step_row``, shared by the loop,
a resumed episode and replay) and its replay from a stored run (``replay``). The orchestrator
hosts these loops in Ray actors; a plain Python script, a test or ``gridbench replay`` calls them
directly.

Public API::

    from episodes import run_episode, replay
    result = await run_episode(maze, agent, protocol, identity)  # EpisodeResult: episode and steps
    check = replay("results/quickstart", episode_id)  # ReplayResult: mismatches, frames

Names load on first use, so ``import episodes`` costs nothing until one is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from episodes.episode import EpisodeResult, Suspended, run_episode
    from episodes.replay import ReplayResult, replay
    from episodes.termination import TerminationRules

_HOMES = {
    **dict.fromkeys(("EpisodeResult", "Suspended", "run_episode"), "episodes.episode"),
    **dict.fromkeys(("ReplayResult", "replay"), "episodes.replay"),
    "TerminationRules": "episodes.termination",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'episodes' has no attribute {name!r}")


__all__ = ["EpisodeResult", "ReplayResult", "Suspended", "TerminationRules", "replay", "run_episode"]
