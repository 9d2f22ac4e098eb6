"""Ablation view: each protocol condition against its run's baseline, paired by maze.

For each run, model and condition, every maze that both the condition and the baseline ran gives
one difference (condition minus baseline; repeats are averaged first). The effect is the mean
difference over those mazes, with a 95% bootstrap interval resampling mazes. Mazes only one
side ran are left out; ``mazes`` says how many pairs remain. The baseline is the run's condition
that changes nothing (``analysis.protocols.baselines``); ``differs_in`` names every protocol field
in which the model's condition differs from its baseline, so a condition that changed more than
its own field (the study's ``baseline_thinking`` changes the models' settings) shows it.
"""

from __future__ import annotations

import pandas as pd

from analysis import figures
from analysis.load import Traces
from analysis.protocols import baselines, differing, own_view_first, protocol_of
from analysis.sections import Built, Context, Section
from analysis.stats import mean_ci


def ablation(traces: Traces) -> pd.DataFrame:
    eps = traces.episodes
    if eps["condition"].nunique() < 2:
        return pd.DataFrame()
    base_of = baselines(traces)
    per = eps.assign(solved=eps["solved"].astype(float)).groupby(
        ["run", "model_name", "condition", "maze_id"])[["solved", "progress_action"]].mean()
    protocols = {k: protocol_of(g["protocol"].iloc[0])
                 for k, g in own_view_first(eps).groupby(["run", "model_name", "condition"])}
    rows = []
    for (run, model), g in eps.groupby(["run", "model_name"], sort=True):
        baseline = base_of[str(run)]
        if (run, model, baseline) not in protocols:
            continue
        base = per.loc[(run, model, baseline)]
        for cond in sorted(set(g["condition"]) - {baseline}):
            c = per.loc[(run, model, cond)]
            both = base.merge(c, left_index=True, right_index=True, suffixes=("_base", "_cond"))
            if both.empty:
                continue
            row = {"run": run, "model_name": model, "condition": cond, "baseline": baseline, "mazes": len(both),
                   "differs_in": ", ".join(differing(protocols[(run, model, cond)], protocols[(run, model, baseline)])),
                   "baseline_solve_rate": both["solved_base"].mean(),
                   "condition_solve_rate": both["solved_cond"].mean(),
                   "baseline_progress": both["progress_action_base"].mean(),
                   "condition_progress": both["progress_action_cond"].mean()}
            row.update(mean_ci(both["solved_cond"] - both["solved_base"]).as_dict("solve_rate_diff"))
            row.update(mean_ci(both["progress_action_cond"] - both["progress_action_base"]).as_dict("progress_diff"))
            rows.append(row)
    out = pd.DataFrame(rows)
    if not out.empty and out["run"].nunique() == 1:
        out = out.drop(columns="run")
    return out


# ---- sections ------------------------------------------------------------------------------------

def _ablation(ctx: Context) -> Built | None:
    table = ablation(ctx.traces)
    if table.empty:
        return None  # no condition has a baseline to set it beside
    return Built({"ablation": table}, {"ablation": figures.ablation(table)})


ABLATION_SECTION = Section(
    "ablation", "Ablations",
    "Each condition against its run's baseline (the condition that changes nothing) for the same "
    "model, paired by maze: per maze the condition's mean minus the baseline's (repeats averaged), "
    "then the mean over mazes run under both, with a 95% bootstrap interval resampling mazes. "
    "`differs_in` names every protocol field in which the model's condition differs from its "
    "baseline: more than one is a comparison of more than one change.",
    _ablation,
)
