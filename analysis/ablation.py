"""Ablation view: each protocol condition against ``baseline``, paired by maze.

For each model and condition, every maze that both the condition and the baseline ran gives
one difference (condition minus baseline; repeats are averaged first). The effect is the mean
difference over those mazes, with a 95% bootstrap interval resampling mazes. Mazes only one
side ran are left out; ``mazes`` says how many pairs remain.
"""

from __future__ import annotations

import pandas as pd

from analysis.load import Traces
from analysis.stats import mean_ci

BASELINE = "baseline"


def ablation(traces: Traces) -> pd.DataFrame:
    eps = traces.episodes
    if BASELINE not in set(eps["condition"]) or eps["condition"].nunique() < 2:
        return pd.DataFrame()
    per = eps.assign(solved=eps["solved"].astype(float)).groupby(
        ["model_name", "condition", "maze_id"])[["solved", "progress_action"]].mean()
    rows = []
    for model in sorted(eps["model_name"].unique()):
        if (model, BASELINE) not in per.index.droplevel("maze_id"):
            continue
        base = per.loc[(model, BASELINE)]
        for cond in sorted(set(eps.loc[eps["model_name"] == model, "condition"]) - {BASELINE}):
            c = per.loc[(model, cond)]
            both = base.merge(c, left_index=True, right_index=True, suffixes=("_base", "_cond"))
            if both.empty:
                continue
            row = {"model_name": model, "condition": cond, "mazes": len(both),
                   "baseline_solve_rate": both["solved_base"].mean(),
                   "condition_solve_rate": both["solved_cond"].mean(),
                   "baseline_progress": both["progress_action_base"].mean(),
                   "condition_progress": both["progress_action_cond"].mean()}
            row.update(mean_ci(both["solved_cond"] - both["solved_base"]).as_dict("solve_rate_diff"))
            row.update(mean_ci(both["progress_action_cond"] - both["progress_action_base"]).as_dict("progress_diff"))
            rows.append(row)
    return pd.DataFrame(rows)
