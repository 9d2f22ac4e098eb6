"""Failure modes: what interaction verbs achieved, live switches, wall bumps, drift over an episode,
when progress stopped (failure onset), per-step oracle regret and the distance-to-goal horizon.

All take the annotated steps of ``analysis.steps.annotate`` and report one row per arm, plus
the pooled arm ``all`` when there are several.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.load import Traces
from analysis.metrics import order_arms, with_pooled

LAST = 30  # the study looks at the last 30 actions of failed episodes


def verbs(traces: Traces, st: pd.DataFrame) -> pd.DataFrame:
    """Pickups issued vs keys taken; toggles issued vs doors opened, doors closed, switches flipped."""
    rows = []
    for arm, g in with_pooled(st).groupby("arm", sort=False):
        pick = g[g["action"] == "pickup"]
        tog = g[g["action"] == "toggle"]
        rows.append({
            "arm": arm,
            "pickup_actions": len(pick),
            "keys_picked_up": int(pick["event"].isin(["pickup", "swap"]).sum()),
            "pickup_swaps": int((pick["event"] == "swap").sum()),
            "toggle_actions": len(tog),
            "doors_opened": int(tog["event"].isin(["door_unlocked", "door_opened"]).sum()),
            "doors_closed": int((tog["event"] == "door_closed").sum()),
            "switches_flipped": int(tog["event"].isin(["switch_on", "switch_off"]).sum()),
            "toggles_nothing": int((tog["event"] == "noop").sum()),
        })
    t = pd.DataFrame(rows)
    if not t.empty:
        t["pickup_efficiency"] = t["keys_picked_up"] / t["pickup_actions"].replace(0, np.nan)
        t["toggle_efficiency"] = (t["toggle_actions"] - t["toggles_nothing"]) / t["toggle_actions"].replace(0, np.nan)
    return order_arms(t, traces)


def live_switch(traces: Traces, st: pd.DataFrame) -> pd.DataFrame:
    """Among episodes whose maze has a live switch: how many stood on one, and how many solved."""
    eps = traces.episodes
    has_live = {mid: any(s.controls for s in m.switches) for mid, m in traces.mazes.items() if m is not None}
    eps = eps.assign(has_live=eps["maze_id"].map(has_live))
    stood = st.groupby(["run", "episode_id"])["on_live_switch"].max()
    eps = eps.merge(stood.rename("stood").reset_index(), on=["run", "episode_id"], how="left")
    eps["stood"] = eps["stood"].fillna(0) > 0
    unknown = eps.groupby("arm")["has_live"].apply(lambda s: int(s.isna().sum()))
    live = eps[eps["has_live"].fillna(False).astype(bool)]
    t = with_pooled(live).groupby("arm", sort=False).agg(
        episodes_with_live_switch=("episode_id", "size"),
        stood_on_live_switch=("stood", "sum"),
        solved=("solved", "sum"),
    ).reset_index()
    t["episodes_maze_unknown"] = t["arm"].map(unknown).fillna(unknown.sum() if len(unknown) else 0).astype(int)
    for c in ("stood_on_live_switch", "solved"):
        t[c] = t[c].astype(int)
    return order_arms(t, traces)


def last_actions(traces: Traces, st: pd.DataFrame, last: int = LAST) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Bumps among the last ``last`` steps of each failed episode.

    Returns (per-episode table, per-arm summary). ``bump_share`` pools every blocked forward;
    ``wall_bump_share`` only those facing a wall. The summary's shares pool the windows (total
    bumps / total steps in the windows); ``episodes_wall_bump_majority`` counts failed episodes
    whose window is more than half wall bumps.
    """
    failed = traces.episodes.loc[~traces.episodes["solved"], ["run", "episode_id", "arm", "termination"]]
    s = st.merge(failed[["run", "episode_id"]], on=["run", "episode_id"])
    tail = s[s["step"] > s["n_steps"] - last] if not s.empty else s
    per = tail.groupby(["run", "episode_id", "arm"], sort=False).agg(
        window=("step", "size"), bumps=("bump", "sum"), wall_bumps=("wall_bump", lambda v: v.sum(min_count=1)),
    ).reset_index().merge(failed[["run", "episode_id", "termination"]], on=["run", "episode_id"])
    per["bump_share"] = per["bumps"] / per["window"]
    per["wall_bump_share"] = per["wall_bumps"] / per["window"]
    per["wall_bump_majority"] = per["wall_bumps"] > per["window"] / 2
    rows = []
    for arm, g in with_pooled(per).groupby("arm", sort=False):
        rows.append({
            "arm": arm, "failed_episodes": len(g), "window_steps": int(g["window"].sum()),
            "bump_share": g["bumps"].sum() / g["window"].sum(),
            "wall_bump_share": g["wall_bumps"].sum(min_count=1) / g["window"].sum(),
            "episodes_wall_bump_majority": int(g["wall_bump_majority"].sum()),
            "episodes_bump_majority": int((g["bumps"] > g["window"] / 2).sum()),
            "stalled_episodes": int((g["termination"] == "stall").sum()),
            "stalled_wall_bump_majority": int((g["wall_bump_majority"] & (g["termination"] == "stall")).sum()),
        })
    return per, order_arms(pd.DataFrame(rows), traces)


QUARTER_KINDS = {"revisit": "revisits", "turn": "turns", "unseen": "unseen cell", "bump": "bumps",
                 "wall_bump": "wall bumps", "moved": "moves"}


def quarters(traces: Traces, st: pd.DataFrame) -> pd.DataFrame:
    """Revisits, turns, steps onto an unseen cell (and bumps, moves) as shares of the steps in each
    quarter of the episode, pooled over the arm's episodes."""
    rows = []
    for (arm, q), g in with_pooled(st).groupby(["arm", "quarter"], sort=False):
        row = {"arm": arm, "quarter": int(q), "steps": len(g), "episodes": g["episode_id"].nunique()}
        for col in QUARTER_KINDS:
            # wall bumps are unknown (NaN) on steps whose maze was not found: those are left out
            row[f"{col}_share"] = float(g[col].astype(float).mean())
        rows.append(row)
    t = pd.DataFrame(rows)
    if t.empty:
        return t
    return order_arms(t.sort_values("quarter", kind="stable"), traces)


def regret(traces: Traces, st: pd.DataFrame) -> pd.DataFrame:
    """Share of steps that reduced, kept or increased the oracle's action distance, per arm."""
    rows = []
    for arm, g in with_pooled(st).groupby("arm", sort=False):
        c = g["outcome"].value_counts()
        n = len(g)
        rows.append({"arm": arm, "steps": n,
                     **{f"{k}_share": c.get(k, 0) / n for k in ("progress", "neutral", "wasted")},
                     "steps_goal_unreachable": int(g["action_distance"].isna().sum())})
    return order_arms(pd.DataFrame(rows), traces)


def horizon(traces: Traces, st: pd.DataFrame) -> pd.DataFrame:
    """Mean remaining action distance, as a share of the start distance, at each step, per arm.

    An episode that has ended keeps its final distance (0 when solved) until the longest episode
    of the arm ends, so the curve is the state of all episodes at that step; ``running`` says how
    many were still going. Steps where the goal had become unreachable count as 1 (no progress).
    """
    if st.empty:
        return pd.DataFrame(columns=["arm", "step", "mean_remaining", "episodes", "running"])
    d0 = traces.episodes.set_index(["run", "episode_id"])["d_start_action"].astype(float)
    rows = []
    for arm, g in st.groupby("arm", sort=False):
        width = int(g["step"].max())
        mat = []
        for (run, eid), e in g.groupby(["run", "episode_id"], sort=False):
            start = d0.get((run, eid), np.nan)
            if not start or np.isnan(start):
                continue
            rem = (e["action_distance"].astype(float) / start).fillna(1.0).to_numpy()
            curve = np.full(width + 1, rem[-1])
            curve[0] = 1.0
            curve[1: len(rem) + 1] = rem
            mat.append((curve, len(rem)))
        if not mat:
            continue
        curves = np.stack([c for c, _ in mat])
        lengths = np.array([n for _, n in mat])
        for t in range(width + 1):
            rows.append({"arm": arm, "step": t, "mean_remaining": float(curves[:, t].mean()),
                         "episodes": len(mat), "running": int((lengths >= t).sum())})
    return order_arms(pd.DataFrame(rows), traces)


EARLY = 0.5  # an unsolved episode "fails early" when its last progress came in its first half


def onset(traces: Traces, st: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """When each episode stopped making progress (the study's Figures 7-8): per episode and per arm.

    ``onset_step`` is the last step that reached a new minimum of the oracle action distance:
    lower than the start distance and than every distance before it (0 when no step did; the
    goal unreachable counts as infinitely far). ``onset_share = onset_step / steps``: the
    episode made no novel progress after that share of its steps. ``novel_onset_step`` and
    ``novel_onset_share`` do the same for the last step that reached a never-seen (position,
    carried key, mechanism state) combination, the trace's ``novel`` column. A solved episode's
    onset is its last step.

    The per-arm table counts unsolved episodes only: medians and means of both shares, and how
    many episodes had their onset in the first half (``onset_share <= 0.5``), in the first
    quarter, or never progressed at all.
    """
    key = ["run", "episode_id"]
    eps = traces.episodes[["run", "episode_id", "arm", "maze_id", "solved", "termination", "steps",
                           "d_start_action"]]
    if st.empty:
        per = eps.assign(onset_step=0, novel_onset_step=0)
    else:
        s = st[[*key, "step", "action_distance", "novel"]].merge(eps[[*key, "d_start_action"]], on=key, how="left")
        d = s["action_distance"].astype("float64").fillna(np.inf)
        start = s["d_start_action"].astype("float64").fillna(np.inf)
        by = [s["run"], s["episode_id"]]
        before = d.groupby(by).cummin().groupby(by).shift(1).fillna(np.inf)
        new_min = d < np.minimum(before, start)
        novel = s["novel"].fillna(False).astype(bool)
        last = s[key].assign(onset_step=s["step"].where(new_min, 0), novel_onset_step=s["step"].where(novel, 0))
        last = last.groupby(key, sort=False)[["onset_step", "novel_onset_step"]].max().reset_index()
        per = eps.merge(last, on=key, how="left")
    per[["onset_step", "novel_onset_step"]] = per[["onset_step", "novel_onset_step"]].fillna(0).astype(int)
    n = per["steps"].replace(0, np.nan)
    per["onset_share"] = per["onset_step"] / n
    per["novel_onset_share"] = per["novel_onset_step"] / n
    per = per.drop(columns=["d_start_action"])

    rows = []
    for arm, g in with_pooled(per).groupby("arm", sort=False):
        u = g[~g["solved"]]
        rows.append({
            "arm": arm, "episodes": len(g), "unsolved_episodes": len(u),
            "median_onset_share": float(u["onset_share"].median()) if len(u) else np.nan,
            "mean_onset_share": float(u["onset_share"].mean()) if len(u) else np.nan,
            "onset_first_half": int((u["onset_share"] <= EARLY).sum()),
            "onset_first_quarter": int((u["onset_share"] <= EARLY / 2).sum()),
            "never_progressed": int((u["onset_step"] == 0).sum()),
            "median_novel_onset_share": float(u["novel_onset_share"].median()) if len(u) else np.nan,
            "novel_onset_first_half": int((u["novel_onset_share"] <= EARLY).sum()),
        })
    return order_arms(per, traces), order_arms(pd.DataFrame(rows), traces)
