"""Test-time compute: tokens and cost per arm and per episode, and thinking after a step that
worked vs one that did not."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.load import Traces
from analysis.metrics import order_arms, with_pooled


def tokens(traces: Traces) -> pd.DataFrame:
    """Token totals, per-episode means and medians, cost per arm and per solve."""
    eps = with_pooled(traces.episodes)
    rows = []
    for arm, g in eps.groupby("arm", sort=False):
        solves = int(g["solved"].sum())
        cost = float(g["cost_usd"].sum(min_count=1)) if g["cost_usd"].notna().any() else float("nan")
        rows.append({
            "arm": arm, "episodes": len(g), "steps": int(g["steps"].sum()), "solves": solves,
            "tokens_in": int(g["tokens_in"].fillna(0).sum()),
            "tokens_out": int(g["tokens_out"].fillna(0).sum()),
            "tokens_reasoning": int(g["tokens_reasoning"].fillna(0).sum()),
            "mean_tokens_out_per_episode": float(g["tokens_out"].mean()),
            "median_tokens_out_per_episode": float(g["tokens_out"].median()),
            "mean_tokens_reasoning_per_episode": float(g["tokens_reasoning"].mean()),
            "tokens_out_per_step": float(g["tokens_out"].sum() / max(int(g["steps"].sum()), 1)),
            "reasoning_estimated_episodes": int(g["reasoning_estimated"].fillna(False).astype(bool).sum()),
            "cost_usd": cost,
            "cost_per_episode_usd": cost / len(g) if len(g) else float("nan"),
            "cost_per_solve_usd": cost / solves if solves else float("nan"),
        })
    t = pd.DataFrame(rows)
    # the study compares spend as a multiple of the most frugal model's
    arms = t[t["arm"] != "all"]
    least = arms["mean_tokens_out_per_episode"].min() if len(arms) else float("nan")
    t["tokens_out_vs_least"] = t["mean_tokens_out_per_episode"] / least if least and least > 0 else float("nan")
    return order_arms(t, traces)


def thinking_after(traces: Traces, st: pd.DataFrame) -> pd.DataFrame:
    """Median reasoning tokens on the turn after a step, by what that step did to the distance.

    ``after`` is ``progress`` (the step cut the action distance), ``no progress`` (it did not:
    neutral or wasted), and the two parts of ``no progress`` separately. Turns whose reasoning
    token count is unknown are left out; ``turns`` is how many remain.
    """
    if st.empty:
        return pd.DataFrame(columns=["arm", "after", "turns", "median_reasoning_tokens", "mean_reasoning_tokens"])
    s = st.copy()
    same = s["episode_id"].eq(s["episode_id"].shift(-1)) & s["run"].eq(s["run"].shift(-1))
    s["next_reasoning"] = s["tokens_reasoning"].shift(-1).where(same)
    s = s[same & s["next_reasoning"].notna()]
    rows = []
    for arm, g in with_pooled(s).groupby("arm", sort=False):
        groups = {
            "progress": g["outcome"] == "progress",
            "no progress": g["outcome"] != "progress",
            "neutral": g["outcome"] == "neutral",
            "wasted": g["outcome"] == "wasted",
        }
        for name, mask in groups.items():
            v = g.loc[mask, "next_reasoning"].astype(float)
            rows.append({"arm": arm, "after": name, "turns": len(v),
                         "median_reasoning_tokens": float(v.median()) if len(v) else np.nan,
                         "mean_reasoning_tokens": float(v.mean()) if len(v) else np.nan})
    return order_arms(pd.DataFrame(rows), traces)
