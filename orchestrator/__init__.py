"""Who runs what where: the sweep format, the Ray runtime (driver, actors, journals, batches)
and model servers. The only package that imports Ray.

Public API::

    from orchestrator import load_sweep, run_sweep
    from traces import open_store
    sweep = load_sweep("quickstart")                  # validated; sweep.episodes() is the matrix
    result = run_sweep(sweep, open_store("results").child(sweep.run_name))  # Ray, servers, driver, compaction
    result.outcome.exit_code, result.seconds

    from orchestrator import Driver                   # the loop alone, on a Ray already connected
    from orchestrator.connect import connect  # not from the face: ``orchestrator.connect`` is the module
    connect()                                         # an embedded Ray (or join RAY_ADDRESS)
    outcome = Driver(sweep, "results/quickstart").execute()

The run format itself (records, tables, storage, compaction, the manifest) is ``traces``; one
episode without Ray (its loop, termination rules and replay) is ``episodes``; the ``gridbench``
command and the web pages are ``app``. Names load on first use, so that importing one of them
pays for Ray only when it needs Ray.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from env.lazy import lazy_face

_FACE = {
    "orchestrator.driver": ("Driver", "RunOutcome"),
    "orchestrator.run": ("RunResult", "run_sweep"),
    "orchestrator.sweep": ("EpisodeSpec", "ModelEntry", "Sweep", "load_sweep", "shipped_sweeps"),
}
if TYPE_CHECKING:  # the table as imports, for the type checker (env.lazy says why)
    from orchestrator.driver import Driver, RunOutcome  # noqa: F401
    from orchestrator.run import RunResult, run_sweep  # noqa: F401
    from orchestrator.sweep import EpisodeSpec, ModelEntry, Sweep, load_sweep, shipped_sweeps  # noqa: F401
else:
    __getattr__, __dir__, __all__ = lazy_face(__name__, _FACE)
