"""One episode, without Ray: the loop that plays it (``episode``), the rules that end it
(``termination``), the one builder and checker of its step rows (``step_row``, shared by the loop,
a resumed episode and replay) and its replay from a stored run (``replay``). The orchestrator
hosts these loops in Ray actors; a plain Python script, a test or ``gridbench replay`` calls them
directly.

Public API::

    from episodes import run_episode
    from episodes.replay import replay  # not from the face: ``episodes.replay`` is the module
    result = await run_episode(maze, agent, protocol, identity)  # EpisodeResult: episode and steps
    check = replay("results/quickstart", episode_id)  # ReplayResult: mismatches, frames

Names load on first use, so ``import episodes`` costs nothing until one is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from env.lazy import lazy_face

_FACE = {
    "episodes.episode": ("EpisodeResult", "Suspended", "run_episode"),
    "episodes.replay": ("ReplayResult",),
    "episodes.termination": ("TerminationRules",),
}
if TYPE_CHECKING:  # the table as imports, for the type checker (env.lazy says why)
    from episodes.episode import EpisodeResult, Suspended, run_episode  # noqa: F401
    from episodes.replay import ReplayResult  # noqa: F401
    from episodes.termination import TerminationRules  # noqa: F401
else:
    __getattr__, __dir__, __all__ = lazy_face(__name__, _FACE)
