"""Test-time compute: tokens and cost per arm and per episode, thinking per quarter of an episode,
thinking after a step that worked vs one that did not, and the budgets each arm's requests carried."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.load import BUDGET_COLUMNS, Traces
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


# The two readings of "a move that worked" (study, "Test-time Compute"). Each maps a group name
# to the steps in it; a step's group decides where the NEXT turn's reasoning tokens are counted.
AFTER_GROUPS = {
    # the step changed the position, the carried key or a mechanism, or it did not (turns,
    # bumps and no-ops); the second group is also split into its two parts
    "state": {
        "worked": lambda g: g["state_change"] == "changed",
        "achieved nothing": lambda g: g["state_change"] != "changed",
        "turned": lambda g: g["state_change"] == "facing",
        "no change": lambda g: g["state_change"] == "none",
    },
    # the oracle action distance fell, or it did not (stayed: neutral, rose: wasted)
    "distance": {
        "progress": lambda g: g["outcome"] == "progress",
        "no progress": lambda g: g["outcome"] != "progress",
        "neutral": lambda g: g["outcome"] == "neutral",
        "wasted": lambda g: g["outcome"] == "wasted",
    },
}


def _next_turn_reasoning(st: pd.DataFrame) -> pd.DataFrame:
    """Each step that has a next turn in its episode, with that turn's reasoning tokens."""
    same = st["episode_id"].eq(st["episode_id"].shift(-1)) & st["run"].eq(st["run"].shift(-1))
    s = st.assign(next_reasoning=st["tokens_reasoning"].shift(-1).where(same))
    return s[same & s["next_reasoning"].notna()]


def thinking_after(traces: Traces, st: pd.DataFrame) -> pd.DataFrame:
    """Median reasoning tokens on the turn after a step, by what that step did.

    ``definition`` ``state``: ``worked`` (the step changed the position, the carried key or a
    mechanism) vs ``achieved nothing`` (it did not), the latter split into ``turned`` (only the
    facing changed) and ``no change`` (a bump or a no-op). ``definition`` ``distance``:
    ``progress`` (the step cut the oracle action distance) vs ``no progress`` (neutral or wasted),
    and those two parts. Turns whose reasoning token count is unknown are left out; ``turns`` is
    how many remain.
    """
    cols = ["arm", "definition", "after", "turns", "median_reasoning_tokens", "mean_reasoning_tokens"]
    if st.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for arm, g in with_pooled(_next_turn_reasoning(st)).groupby("arm", sort=False):
        for definition, groups in AFTER_GROUPS.items():
            for name, select in groups.items():
                v = g.loc[select(g), "next_reasoning"].astype(float)
                rows.append({"arm": arm, "definition": definition, "after": name, "turns": len(v),
                             "median_reasoning_tokens": float(v.median()) if len(v) else np.nan,
                             "mean_reasoning_tokens": float(v.mean()) if len(v) else np.nan})
    return order_arms(pd.DataFrame(rows, columns=cols), traces)


def thinking_quarters(traces: Traces, st: pd.DataFrame) -> pd.DataFrame:
    """Reasoning tokens per turn in each quarter of the episode (``analysis.steps`` quarters).

    Turns whose reasoning count is unknown are left out; ``turns`` is how many remain and
    ``episodes`` how many episodes they come from.
    """
    cols = ["arm", "quarter", "turns", "episodes", "median_reasoning_tokens", "mean_reasoning_tokens",
            "reasoning_tokens"]
    known = st[st["tokens_reasoning"].notna()] if not st.empty else st
    if known.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for (arm, q), g in with_pooled(known).groupby(["arm", "quarter"], sort=False):
        v = g["tokens_reasoning"].astype(float)
        rows.append({"arm": arm, "quarter": int(q), "turns": len(v), "episodes": g["episode_id"].nunique(),
                     "median_reasoning_tokens": float(v.median()), "mean_reasoning_tokens": float(v.mean()),
                     "reasoning_tokens": int(v.sum())})
    t = pd.DataFrame(rows, columns=cols).sort_values("quarter", kind="stable")
    return order_arms(t, traces)


def _values(s: pd.Series) -> str:
    """The distinct known values of a column, in order, as one cell ("" when none is known)."""
    known = s.dropna()
    if known.empty:
        return ""
    vals = sorted(known.unique(), key=lambda v: (isinstance(v, str), v))
    return ", ".join(str(int(v)) if isinstance(v, (int, float, np.integer, np.floating)) else str(v) for v in vals)


def budgets(traces: Traces, st: pd.DataFrame) -> pd.DataFrame:
    """What each arm's requests allowed: thinking budget, effort level, output-token cap.

    Per arm (no pooled row: the point is to compare arms) the steps, and for each budget column
    the steps where it is known and its distinct known values.
    """
    rows = []
    for arm, g in st.groupby("arm", sort=False):
        row: dict = {"arm": arm, "steps": len(g)}
        for col in BUDGET_COLUMNS:
            row[f"{col}_steps"] = int(g[col].notna().sum())
            row[col] = _values(g[col])
        rows.append(row)
    return order_arms(pd.DataFrame(rows), traces)


def budget_warnings(table: pd.DataFrame) -> list[str]:
    """One sentence per way the arms' budgets differ, empty when they got the same ones.

    A column counts where it is known: arms with no known value for it are left out of its
    comparison. Arms that got a thinking-token budget and arms that got only an effort level
    are not comparable, and that is said too.
    """
    if table.empty or len(table) < 2:
        return []
    out = []
    for col in BUDGET_COLUMNS:
        known = table[table[f"{col}_steps"] > 0]
        if known[col].nunique() > 1:
            out.append(f"{col} differs between arms: "
                       + "; ".join(f"{a} {v}" for a, v in zip(known["arm"], known[col], strict=True)) + ".")
    tokens_only = table[(table["thinking_budget_steps"] > 0)]["arm"].tolist()
    effort_only = table[(table["thinking_budget_steps"] == 0) & (table["reasoning_effort_steps"] > 0)]["arm"].tolist()
    if tokens_only and effort_only:
        out.append(f"thinking was limited by a token budget for {', '.join(tokens_only)} but by an effort level "
                   f"for {', '.join(effort_only)}.")
    return out
