"""Who runs what where: the sweep format, the Ray runtime (driver, actors, journals, batches)
and model servers. The only package that imports Ray.

Public API::

    from orchestrator import load_sweep, Driver, connect
    sweep = load_sweep("quickstart")                  # validated; sweep.episodes() is the matrix
    connect()                                         # an embedded Ray (or join RAY_ADDRESS)
    outcome = Driver(sweep, "results/quickstart").execute()

The run format itself (records, tables, storage, compaction, the manifest) is ``traces``; one
episode without Ray (its loop, termination rules and replay) is ``episodes``; the ``gridbench``
command and the web pages are ``app``. Names load on first use, so that importing one of them
pays for Ray only when it needs Ray.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.connect import connect
    from orchestrator.driver import Driver, RunOutcome
    from orchestrator.sweep import EpisodeSpec, ModelEntry, Sweep, load_sweep, shipped_sweeps

_HOMES = {
    "connect": "orchestrator.connect",
    **dict.fromkeys(("Driver", "RunOutcome"), "orchestrator.driver"),
    **dict.fromkeys(("EpisodeSpec", "ModelEntry", "Sweep", "load_sweep", "shipped_sweeps"), "orchestrator.sweep"),
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'orchestrator' has no attribute {name!r}")


__all__ = ["Driver", "EpisodeSpec", "ModelEntry", "RunOutcome", "Sweep", "connect", "load_sweep", "shipped_sweeps"]
