"""Failure modes: what interaction verbs achieved, live switches, wall bumps, drift over an episode,
when progress stopped (failure onset), per-step oracle regret and the distance-to-goal horizon.

All take the annotated steps of ``analysis.steps.annotate`` (a DuckDB table: each analysis is
one aggregation over it) and report one row per arm, plus the pooled arm ``all`` when there are
several.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import figures
from analysis.load import Traces
from analysis.metrics import order_arms, with_pooled
from analysis.sections import Built, Context, Section, drawn
from analysis.steps import StepTable

LAST = 30  # the study looks at the last 30 actions of failed episodes


def verbs(traces: Traces, st: StepTable) -> pd.DataFrame:
    """Pickups issued vs keys taken; toggles issued vs doors opened, doors closed, switches flipped."""
    t = st.per_arm("""
        count(*) FILTER (WHERE action = 'pickup') AS pickup_actions,
        count(*) FILTER (WHERE action = 'pickup' AND event IN ('pickup', 'swap')) AS keys_picked_up,
        count(*) FILTER (WHERE action = 'pickup' AND event = 'swap') AS pickup_swaps,
        count(*) FILTER (WHERE action = 'toggle') AS toggle_actions,
        count(*) FILTER (WHERE action = 'toggle' AND event IN ('door_unlocked', 'door_opened')) AS doors_opened,
        count(*) FILTER (WHERE action = 'toggle' AND event = 'door_closed') AS doors_closed,
        count(*) FILTER (WHERE action = 'toggle' AND event IN ('switch_on', 'switch_off')) AS switches_flipped,
        count(*) FILTER (WHERE action = 'toggle' AND event = 'noop') AS toggles_nothing""")
    t["pickup_efficiency"] = t["keys_picked_up"] / t["pickup_actions"].replace(0, np.nan)
    t["toggle_efficiency"] = (t["toggle_actions"] - t["toggles_nothing"]) / t["toggle_actions"].replace(0, np.nan)
    return order_arms(t, traces)


def live_switch(traces: Traces, st: StepTable) -> pd.DataFrame:
    """Among episodes whose maze has a live switch: how many stood on one, and how many solved."""
    eps = traces.episodes
    has_live = {mid: any(s.controls for s in m.switches) for mid, m in traces.mazes.items() if m is not None}
    eps = eps.assign(has_live=eps["maze_id"].map(has_live))
    stood = st.per_episode("bool_or(on_live_switch) AS stood")
    eps = eps.merge(stood, on=["run", "episode_id"], how="left")
    eps["stood"] = eps["stood"].eq(True)  # null: no step on a known maze
    unknown = eps.groupby("arm")["has_live"].apply(lambda s: int(s.isna().sum()))
    live = eps[eps["has_live"].eq(True)]
    t = with_pooled(live, traces.references).groupby("arm", sort=False).agg(
        episodes_with_live_switch=("episode_id", "size"),
        stood_on_live_switch=("stood", "sum"),
        solved=("solved", "sum"),
    ).reset_index()
    t["episodes_maze_unknown"] = t["arm"].map(unknown).fillna(unknown.sum() if len(unknown) else 0).astype(int)
    for c in ("stood_on_live_switch", "solved"):
        t[c] = t[c].astype(int)
    return order_arms(t, traces)


def last_actions(traces: Traces, st: StepTable, last: int = LAST) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Bumps among the last ``last`` steps of each failed episode.

    Returns (per-episode table, per-arm summary). ``bump_share`` pools every blocked forward;
    ``wall_bump_share`` only those facing a wall. The summary's shares pool the windows (total
    bumps / total steps in the windows); ``episodes_wall_bump_majority`` counts failed episodes
    whose window is more than half wall bumps.
    """
    failed = traces.episodes.loc[~traces.episodes["solved"], ["run", "episode_id", "arm", "termination"]]
    tail = st.per_episode(
        "count(*) AS window, count(*) FILTER (WHERE bump) AS bumps, sum(wall_bump::INTEGER)::DOUBLE AS wall_bumps",
        where=f"step > n_steps - {int(last)} AND ep IN (SELECT ep FROM episode_keys WHERE NOT solved)")
    per = tail.merge(failed[["run", "episode_id", "arm"]], on=["run", "episode_id"])
    per = per[["run", "episode_id", "arm", "window", "bumps", "wall_bumps"]].merge(
        failed[["run", "episode_id", "termination"]], on=["run", "episode_id"])
    per["bump_share"] = per["bumps"] / per["window"]
    per["wall_bump_share"] = per["wall_bumps"] / per["window"]
    per["wall_bump_majority"] = per["wall_bumps"] > per["window"] / 2
    rows = []
    for arm, g in with_pooled(per, traces.references).groupby("arm", sort=False):
        rows.append({
            "arm": arm, "failed_episodes": len(g), "window_steps": int(g["window"].sum()),
            "bump_share": g["bumps"].sum() / g["window"].sum(),
            "wall_bump_share": g["wall_bumps"].sum(min_count=1) / g["window"].sum(),
            "episodes_wall_bump_majority": int(g["wall_bump_majority"].sum()),
            "episodes_bump_majority": int((g["bumps"] > g["window"] / 2).sum()),
            "stalled_episodes": int((g["termination"] == "stall").sum()),
            "stalled_wall_bump_majority": int((g["wall_bump_majority"] & (g["termination"] == "stall")).sum()),
        })
    summary = pd.DataFrame(rows, columns=["arm", "failed_episodes", "window_steps", "bump_share", "wall_bump_share",
                                          "episodes_wall_bump_majority", "episodes_bump_majority", "stalled_episodes",
                                          "stalled_wall_bump_majority"])
    return per, order_arms(summary, traces)


QUARTER_KINDS = {"revisit": "revisits", "turn": "turns", "unseen": "unseen cell", "bump": "bumps",
                 "wall_bump": "wall bumps", "moved": "moves"}


def _share(count: pd.Series, total: pd.Series) -> pd.Series:
    return count / total.replace(0, np.nan)


def quarters(traces: Traces, st: StepTable) -> pd.DataFrame:
    """Revisits, turns, steps onto an unseen cell (and bumps, moves) as shares of the steps in each
    quarter of the episode, pooled over the arm's episodes."""
    # wall bumps are unknown (null) on steps whose maze was not found: those are left out
    counts = ", ".join(f"count(*) FILTER (WHERE {col}) AS {col}_n, count({col}) AS {col}_known" for col in QUARTER_KINDS)
    t = st.per_arm(f"count(*) AS steps, count(DISTINCT ep) AS episodes, {counts}", by="quarter")
    t["quarter"] = t["quarter"].astype(int)
    for col in QUARTER_KINDS:
        t[f"{col}_share"] = _share(t.pop(f"{col}_n"), t.pop(f"{col}_known"))
    return order_arms(t, traces)


def regret(traces: Traces, st: StepTable) -> pd.DataFrame:
    """Share of steps that reduced, kept or increased the oracle's action distance, per arm."""
    outcomes = ("progress", "neutral", "wasted")
    t = st.per_arm("count(*) AS steps, " + ", ".join(f"count(*) FILTER (WHERE outcome = '{k}') AS {k}"
                                                      for k in outcomes)
                + ", count(*) FILTER (WHERE action_distance IS NULL) AS steps_goal_unreachable")
    for k in outcomes:
        t.insert(t.columns.get_loc(k), f"{k}_share", t.pop(k) / t["steps"])
    return order_arms(t, traces)


def horizon(traces: Traces, st: StepTable) -> pd.DataFrame:
    """Mean remaining action distance, as a share of the start distance, at each step, per arm.

    An episode that has ended keeps its final distance (0 when solved) until the longest episode
    of the arm ends, so the curve is the state of all episodes at that step; ``running`` says how
    many were still going. Steps where the goal had become unreachable count as 1 (no progress).
    Episodes with no start distance (or 0) are left out.
    """
    cols = ["arm", "step", "mean_remaining", "episodes", "running"]
    # per arm: the longest step, and per place in an episode the remaining share summed over the
    # episodes still running there; per episode length, the episodes of that length and their
    # final shares summed (an ended episode keeps its final share)
    remaining = "coalesce(s.action_distance / k.d_start, 1.0)"
    counted = "FROM steps s JOIN episode_keys k USING (ep) WHERE k.d_start IS NOT NULL AND k.d_start <> 0"
    width = st.query("SELECT arm, max(step) AS width FROM steps GROUP BY arm").set_index("arm")["width"]
    running = st.query(f"SELECT s.arm, s.position, sum({remaining}) AS total {counted} GROUP BY ALL")
    ended = st.query(f"SELECT s.arm, s.n_steps AS length, count(*) AS episodes, sum({remaining}) AS total "
                     f"{counted} AND s.position = s.n_steps GROUP BY ALL")
    parts = []
    for arm, w in width.items():
        e = ended[ended["arm"] == arm]
        n = int(e["episodes"].sum())
        if not n:
            continue
        w = int(w)
        by_place = np.zeros(w + 1)
        r = running[running["arm"] == arm]
        by_place[r["position"].to_numpy()] = r["total"].to_numpy()
        lengths = np.zeros(w + 2)
        finals = np.zeros(w + 2)
        np.add.at(lengths, np.minimum(e["length"].to_numpy(), w + 1), e["episodes"].to_numpy())
        np.add.at(finals, np.minimum(e["length"].to_numpy(), w + 1), e["total"].to_numpy())
        # episodes that ended before step t: lengths < t
        ended_count = np.concatenate([[0.0], np.cumsum(lengths)[:w]])
        ended_total = np.concatenate([[0.0], np.cumsum(finals)[:w]])
        mean = (by_place + ended_total) / n
        mean[0] = 1.0
        parts.append(pd.DataFrame({"arm": arm, "step": np.arange(w + 1), "mean_remaining": mean, "episodes": n,
                                   "running": (n - ended_count).astype(int)}))
    t = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)
    return order_arms(t, traces)


EARLY = 0.5  # an unsolved episode "fails early" when its last progress came in its first half


def onset(traces: Traces, st: StepTable) -> tuple[pd.DataFrame, pd.DataFrame]:
    """When each episode stopped making progress (the study's Figures 7-8): per episode and per arm.

    ``onset_step`` is the last step, other than a turn, that reached a new minimum of the oracle
    action distance: lower than the start distance and than the distance after every earlier step
    that was not a turn (0 when no step did; the goal unreachable counts as infinitely far; turns
    only change the facing, which the action distance counts: ``analysis.steps``, ``new_min``). ``onset_share = onset_step / steps``: the
    episode made no novel progress after that share of its steps. ``novel_onset_step`` and
    ``novel_onset_share`` do the same for the last step that reached a never-seen (position,
    carried key, mechanism state) combination, the trace's ``novel`` column. A solved episode's
    onset is its last step.

    The per-arm table counts unsolved episodes only: medians and means of both shares, and how
    many episodes had their onset in the first half (``onset_share <= 0.5``), in the first
    quarter, or never progressed at all.
    """
    eps = traces.episodes[["run", "episode_id", "arm", "maze_id", "solved", "termination", "steps"]]
    last = st.per_episode("max(step) FILTER (WHERE new_min) AS onset_step, "
                            "max(step) FILTER (WHERE novel) AS novel_onset_step")
    per = eps.merge(last, on=["run", "episode_id"], how="left")
    per[["onset_step", "novel_onset_step"]] = per[["onset_step", "novel_onset_step"]].fillna(0).astype(int)
    n = per["steps"].replace(0, np.nan)
    per["onset_share"] = per["onset_step"] / n
    per["novel_onset_share"] = per["novel_onset_step"] / n

    rows = []
    for arm, g in with_pooled(per, traces.references).groupby("arm", sort=False):
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


# ---- sections ------------------------------------------------------------------------------------

def _failure(ctx: Context) -> Built:
    t, st, colors = ctx.traces, ctx.steps, ctx.colors
    used, live = verbs(t, st), live_switch(t, st)
    per_last, last = last_actions(t, st)
    parts = quarters(t, st)
    return Built({"verbs": used, "live_switch": live, "last_actions": last, "last_actions_episodes": per_last,
                  "quarters": parts},
                 drawn(verbs=(used, lambda: figures.verbs(used, colors)),
                       last_actions=(per_last, lambda: figures.last_bumps(per_last, last, colors, LAST)),
                       quarters=(parts, lambda: figures.quarters(parts, colors))))


def _onset(ctx: Context) -> Built:
    per, table = onset(ctx.traces, ctx.steps)
    unsolved = per[~per["solved"]]
    return Built({"failure_onset": table, "failure_onset_episodes": per},
                 drawn(failure_onset=(unsolved, lambda: figures.onset(per, ctx.colors))))


def _regret(ctx: Context) -> Built:
    reg, hor = regret(ctx.traces, ctx.steps), horizon(ctx.traces, ctx.steps)
    return Built({"regret": reg, "horizon": hor},
                 drawn(regret=(reg, lambda: figures.regret(reg)), horizon=(hor, lambda: figures.horizon(hor, ctx.colors))))


FAILURE_SECTION = Section(
    "failure", "Failure modes",
    "Verbs: `pickup` actions issued vs keys taken (events pickup and swap); `toggle` actions "
    "issued vs doors opened (door_unlocked, door_opened), doors closed, switches flipped "
    "(switch_on, switch_off) and nothing (noop). Live switch: among episodes whose maze has a "
    "switch that controls at least one gate (read from the maze file, matched by id and "
    "checksum), those in which the agent stood on such a switch after some step. Last actions: "
    f"the last {LAST} steps of each unsolved episode (fewer if it was shorter); "
    "`wall_bump_share` counts forwards blocked by a wall, `bump_share` every blocked forward "
    "(walls, keys, closed doors and gates); shares pool the windows. Quarters: each episode's "
    "steps split into four equal parts by step index; a revisit is a move onto a cell stood on "
    "before, an unseen step a move onto a cell never stood on (the start counts as seen), a "
    "turn a left/right action; shares are of all steps in that quarter, pooled over episodes.",
    _failure,
)


ONSET_SECTION = Section(
    "onset", "Failure onset",
    "When an episode stopped making progress. **Definition used:** the failure onset is the last "
    "step, other than a turn, that reached a new minimum of the oracle action distance, lower than "
    "the start distance and than the distance after every earlier step that was not a turn "
    "(`onset_step`, 0 when no step did). Turns are left out because the action distance counts the "
    "facing: a turn toward the goal lowers it by one without the agent going anywhere, and near the "
    "end of a stalled episode such a turn is often the only step that can set a new minimum; "
    "`onset_share = onset_step / steps` is the share of the episode after which it made no "
    "further progress toward the goal. A second reading is given beside it: the last step that "
    "reached a never-seen (position, carried key, mechanism state) combination (`novel_onset_step`, "
    "`novel_onset_share`, from the trace's `novel` column). The novelty reading counts wandering into "
    "new cells as progress, and in an episode the stall watchdog ended its last "
    "`stall_window` steps are never novel by construction, so it mostly measures the watchdog; the "
    "distance reading is the one the summary and the study comparison use. The per-arm table "
    "counts unsolved episodes only (a solve's onset is its last step): medians and means of the "
    "share, how many had their onset in the first half (`onset_first_half`, share <= 0.5) or "
    "first quarter, and how many never got closer than at the start (`never_progressed`). "
    "The figure shows, per arm, the share of unsolved episodes whose onset came at or before "
    "each point of the episode (an empirical CDF): a curve that rises early means early failures.",
    _onset,
)


REGRET_SECTION = Section(
    "regret", "Per-step oracle regret and horizon",
    "Each step is `progress` if it lowered the oracle action distance, `neutral` if it left "
    "it unchanged, `wasted` if it raised it (making the goal unreachable counts as wasted, "
    "staying unreachable as neutral). The horizon plot shows the mean remaining action "
    "distance as a share of the start distance at each step; an ended episode keeps its final "
    "value (0 when solved); steps with the goal unreachable count as 1.",
    _regret,
)
