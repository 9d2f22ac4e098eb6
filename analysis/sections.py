"""A section of the report, declared once beside its analysis (docs/report.md).

Each analysis module declares its sections as ``Section`` values: the key (its anchor and its
entry under ``definitions`` in metrics.json), the title, the text (markdown: what every column
means, and every choice made where the study is silent), and ``build``, which computes its tables
and draws its figures from a ``Context``. ``analysis.report.SECTIONS`` lists them in the order the
report shows them; adding a section is one declaration there and one in its module.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import matplotlib.pyplot as plt
    import pandas as pd

    from analysis.load import Traces
    from analysis.steps import StepTable


@dataclass
class Context:
    """What a section is built from: the runs, their steps in DuckDB, each arm's colour, the
    tables of the sections built before it (and, for a section built ``last``, the headline), and
    the user's price of a GPU-hour, if given."""

    traces: Traces
    steps: StepTable
    colors: dict[str, str]
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    headline: dict[str, Any] = field(default_factory=dict)
    gpu_hour_usd: float | None = None  # the price of a GPU-hour (``gridbench report --gpu-hour-usd``)


@dataclass
class Built:
    """A section's tables (one CSV each) and figures (one PNG each), in the order shown; ``json``
    adds top-level entries to metrics.json."""

    tables: dict[str, pd.DataFrame]
    figures: dict[str, plt.Figure] = field(default_factory=dict)
    json: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Section:
    key: str
    title: str
    text: str
    build: Callable[[Context], Built | None]  # None: the section has nothing to show for these runs
    last: bool = False  # built after every other section and the headline (it reads theirs)


def drawn(**specs: tuple[pd.DataFrame, Callable[[], plt.Figure]]) -> dict[str, plt.Figure]:
    """Draw each figure whose table has rows; an empty table gets no empty figure."""
    return {name: make() for name, (table, make) in specs.items() if not table.empty}
