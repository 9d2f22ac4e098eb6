"""What the traces say: metrics, statistics, figures and the report.

Public API::

    from analysis import build_report, load_runs
    traces = load_runs(["results/quickstart"])           # episodes, errors, mazes; steps unread
    metrics = build_report(["results/quickstart"])       # writes results/quickstart/report/

The modules behind it: ``load`` (runs to tables), ``metrics`` (solves, progress, bands,
difficulty axes), ``steps`` (the steps streamed into DuckDB once, with their per-step derived columns), ``failure`` (verbs, live switches, wall
bumps, quarters, regret, horizon), ``compute`` (tokens, thinking, cost), ``ablation``, ``twins`` (variants against their
originals, invariance, attribution), ``ranking`` (pairs of arms, the planner), ``discovery``,
``stats`` (maze bootstrap, regressions), ``figures`` and ``report``. Names load on first use:
reading traces does not pay for matplotlib, scipy and statsmodels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from env.lazy import lazy_face

_FACE = {
    "analysis.load": ("Traces", "load_runs"),
    "analysis.report": ("build_report", "write_report"),
}
if TYPE_CHECKING:  # the table as imports, for the type checker (env.lazy says why)
    from analysis.load import Traces, load_runs  # noqa: F401
    from analysis.report import build_report, write_report  # noqa: F401
else:
    __getattr__, __dir__, __all__ = lazy_face(__name__, _FACE)
