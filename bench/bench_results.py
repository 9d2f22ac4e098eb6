"""Where bench scripts hand their figures to ``bench/run_all.py``.

Each script calls ``record`` where it decides a goal. When ``GRIDBENCH_BENCH_RESULTS`` names a
file, one JSON line per figure is appended to it; otherwise nothing happens, so every script
still runs on its own exactly as before.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RESULTS_ENV = "GRIDBENCH_BENCH_RESULTS"


def record(figure: str, goal: str, measured: str, ratio: float | None, met: bool | None, **extra: Any) -> None:
    """One figure: what it is, its goal and the measured value (both as shown), the ratio the
    goal is judged on, and whether it is met (None: reported without a goal)."""
    path = os.environ.get(RESULTS_ENV)
    if not path:
        return
    row = {"figure": figure, "goal": goal, "measured": measured,
           "ratio": None if ratio is None else float(ratio), "met": None if met is None else bool(met), **extra}
    # O_APPEND keeps each line whole even if two scripts ever write at once
    with open(Path(path), "a", encoding="utf-8") as f:
        f.write(json.dumps(row, default=str) + "\n")


def read(path: str | os.PathLike) -> list[dict[str, Any]]:
    p = Path(path)
    if not p.is_file():
        return []
    rows = []
    for line in p.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a script killed mid-line loses that line only
    return rows
