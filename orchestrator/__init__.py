"""Who runs what where: sweeps, the episode loop, the Ray runtime, model servers, the web pages
and the command line. The only package that imports Ray.

Public API::

    from orchestrator import load_sweep, run_episode, Driver, connect
    sweep = load_sweep("quickstart")                  # validated; sweep.episodes() is the matrix
    connect()                                         # an embedded Ray (or join RAY_ADDRESS)
    outcome = Driver(sweep, "results/quickstart").execute()

The run format itself (records, tables, storage, compaction, the manifest) is ``traces``; the
``gridbench`` command is ``orchestrator.cli``. Names load on first use, so that importing one
of them pays for Ray only when it needs Ray.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.connect import connect
    from orchestrator.driver import Driver, RunOutcome
    from orchestrator.episode import EpisodeResult, Suspended, run_episode
    from orchestrator.replay import replay
    from orchestrator.sweep import EpisodeSpec, ModelEntry, Sweep, load_sweep, shipped_sweeps

_HOMES = {
    "connect": "orchestrator.connect",
    **dict.fromkeys(("Driver", "RunOutcome"), "orchestrator.driver"),
    **dict.fromkeys(("EpisodeResult", "Suspended", "run_episode"), "orchestrator.episode"),
    "replay": "orchestrator.replay",
    **dict.fromkeys(("EpisodeSpec", "ModelEntry", "Sweep", "load_sweep", "shipped_sweeps"), "orchestrator.sweep"),
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")


__all__ = ["Driver", "EpisodeResult", "EpisodeSpec", "ModelEntry", "RunOutcome", "Suspended", "Sweep", "connect",
           "load_sweep", "replay", "run_episode", "shipped_sweeps"]
