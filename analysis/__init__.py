"""What the traces say: metrics, statistics, figures and the report.

Public API::

    from analysis import build_report, load_runs
    traces = load_runs(["results/quickstart"])           # episodes, errors, mazes; steps unread
    metrics = build_report(["results/quickstart"])       # writes results/quickstart/report/

The modules behind it: ``load`` (runs to tables), ``metrics`` (solves, progress, bands,
difficulty axes), ``steps`` (the steps streamed into DuckDB once, with their per-step derived columns), ``failure`` (verbs, live switches, wall
bumps, quarters, regret, horizon), ``compute`` (tokens, thinking, cost), ``ablation``, ``twins`` (variants against their
originals, invariance, attribution), ``ranking`` (pairs of arms, the planner), ``discovery``,
``stats`` (maze bootstrap, regressions), ``figures`` and ``report``.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Traces", "build_report", "load_runs", "write_report"]
_HOMES = {"Traces": "analysis.load", "load_runs": "analysis.load",
          "build_report": "analysis.report", "write_report": "analysis.report"}


def __getattr__(name: str) -> Any:
    # lazy: reading traces should not pay for matplotlib, scipy and statsmodels
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'analysis' has no attribute {name!r}")
