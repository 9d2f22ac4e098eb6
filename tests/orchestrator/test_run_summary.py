"""The table `gridbench run` prints when it ends reads progress as the report does (the study's
unclipped formula) and marks a built-in agent's rows as references."""

from __future__ import annotations

import pandas as pd
from rich.console import Console

from app.commands.run import _summary_table
from orchestrator.driver import RunOutcome
from orchestrator.sweep import load_sweep


def _row(model: str, solved: bool, d_start: int, d_end: int) -> dict:
    clipped = min(max(1 - d_end / d_start, 0.0), 1.0)
    return {"model_name": model, "condition": "baseline", "termination": "solved" if solved else "stall",
            "solved": solved, "d_start_action": d_start, "d_end_action": d_end, "progress_action": clipped,
            "steps": 10, "tokens_in": 100, "tokens_out": 10, "cost_usd": 0.0}


def test_the_run_summary_reads_unclipped_progress_and_marks_references():
    sweep = load_sweep("quickstart")
    # the model ends 30 actions from a goal 10 away (progress -2) and halfway on another (0.5):
    # the study's mean is -0.75, the clipped trace column's 0.25
    episodes = pd.DataFrame([_row("smollm2-135m", False, 10, 30), _row("smollm2-135m", False, 10, 5),
                             _row("oracle", True, 10, 0)])
    outcome = RunOutcome(run_dir="results/quickstart", planned=3, skipped=0, ran=3, errors=0, episodes=episodes)
    console = Console(record=True, width=200)
    console.print(_summary_table(outcome, sweep))
    lines = {line.split("│")[1].strip(): line for line in console.export_text().splitlines() if "│" in line}
    assert "-0.750" in lines["smollm2-135m"] and "0.250" not in lines["smollm2-135m"]
    assert "1.000" in lines["oracle (reference)"]
    assert not any(name.startswith("all") for name in lines)
