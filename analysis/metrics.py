"""Outcome tables: solves, terminations, progress, closest approach, path bands, difficulty axes.

Every table has one row per arm (run / model / condition) and group, plus pooled rows with
``arm == "all"`` when there is more than one arm, so the study's pooled sentences ("3 of 33
8x8 episodes") and the per-model view come from the same table.
"""

from __future__ import annotations

from collections.abc import Collection

import pandas as pd

from agents.model import is_builtin
from analysis import figures
from analysis.load import ALL, BANDS, GROUP, HORIZON_BANDS, HORIZON_EDGES, Traces, grid_order
from analysis.sections import Built, Context, Section, drawn
from analysis.stats import ALPHA, cluster_ratio_ci, holm, property_r2, solve_rate_ci
from traces import ENDINGS, ERROR

PROPERTIES = {
    "optimal_actions": "optimal path (actions)",
    "n_gates": "gates",
    "n_switches": "switches",
    "n_keys": "keys",
    "n_doors": "doors",
    "n_distractors": "distractors",
    "grid_side": "grid side (cells)",
    "chain_length": "chain length",
}
NEAR = 3  # "within 3 actions of the goal"
SHORT_PATH = 45  # the study's restricted subset: optimal path <= 45 actions


def with_pooled(eps: pd.DataFrame, references: Collection[str]) -> pd.DataFrame:
    """The rows once per arm, and the model arms' rows once more as arm ``all`` when there are
    several model arms. ``references`` (``Traces.references``: built-in agents) keep their own
    rows and are never pooled."""
    models = eps[~eps["arm"].isin(list(references))]
    if models["arm"].nunique() <= 1:
        return eps
    pooled = models.assign(arm=ALL, run=ALL, model_name=ALL, condition=ALL)
    return pd.concat([eps, pooled], ignore_index=True)


def order_arms(t: pd.DataFrame, traces: Traces) -> pd.DataFrame:
    """Rows in arm order (the models, the pooled row, then the references), with the arm's run,
    model and condition as columns (an empty table gets them too, so that its CSV still names its
    columns)."""
    if "arm" not in t:
        return t
    order = {a: i for i, a in enumerate([*traces.models, ALL, *traces.references])}
    t = t.sort_values("arm", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)
    parts = traces.episodes.drop_duplicates("arm").set_index("arm")[GROUP]
    t = t.drop(columns=[c for c in GROUP if c in t])
    ids = parts.reindex(t["arm"]).reset_index(drop=True)
    pooled = (t["arm"] == ALL).to_numpy()
    ids.loc[pooled, GROUP] = ALL
    return pd.concat([ids, t], axis=1)


def _rates(eps: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Solves per group with the solve rate's 95% interval (``analysis.stats.solve_rate_ci``: exact
    binomial where the trials are independent, its method named in ``solve_rate_ci_method``)."""
    rows = []
    for key, g in eps.groupby(["arm", *by], sort=False, dropna=False):
        rate, method = solve_rate_ci(g["solved"], g["maze_id"])
        rows.append({**dict(zip(["arm", *by], key if isinstance(key, tuple) else (key,), strict=True)),
                     "episodes": len(g), "mazes": g["maze_id"].nunique(), "solves": int(g["solved"].sum()),
                     **rate.as_dict("solve_rate"), "solve_rate_ci_method": method,
                     "mean_progress_action": float(g["progress_action"].mean()),
                     "mean_progress_action_clipped": float(g["progress_action_clipped"].mean())})
    return pd.DataFrame(rows)


def solves(traces: Traces, by: str | None = None) -> pd.DataFrame:
    """Solves / episodes (and mean action progress) per arm, optionally split by a column."""
    eps = with_pooled(traces.episodes, traces.references)
    t = _rates(eps, [by] if by else [])
    if by == "band":
        t["band"] = pd.Categorical(t["band"], categories=list(BANDS), ordered=True)
        t = t.sort_values(["band"], kind="stable")
    elif by == "grid":
        t = t.sort_values("grid", key=lambda g: g.map(grid_order), kind="stable")
    elif by:
        t = t.sort_values([by], kind="stable")
    return order_arms(t, traces)


def terminations(traces: Traces) -> pd.DataFrame:
    """How episodes ended, per arm; error episodes are counted here and nowhere else."""
    allep = pd.concat([traces.episodes, traces.errors.assign(arm=_error_arms(traces))], ignore_index=True)
    eps = with_pooled(allep, traces.references)
    t = pd.crosstab(eps["arm"], eps["termination"])
    for c in (*ENDINGS, ERROR):
        if c not in t:
            t[c] = 0
    t = t[[*ENDINGS, ERROR, *[c for c in t if c not in (*ENDINGS, ERROR)]]]
    t["episodes"] = t.sum(axis=1)
    return order_arms(t.reset_index(), traces)


def solves_by_condition(eps: pd.DataFrame) -> pd.DataFrame:
    """Solves per model and condition of the episodes ``eps``, over the runs together."""
    t = eps.groupby(["condition", "model_name"]).agg(episodes=("solved", "size"), solves=("solved", "sum"))
    t["solve_rate"] = t["solves"] / t["episodes"]
    return t.reset_index()


def _error_arms(traces: Traces) -> pd.Series:
    return arms_of(traces, traces.errors)


def arms_of(traces: Traces, rows: pd.DataFrame) -> pd.Series:
    """The arm label of each row that names a run, model and condition (error episodes, steps):
    the label its arm has in the report, else ``run/model [condition]`` for an arm with no
    episode but errors."""
    if rows.empty:
        return pd.Series(dtype="object")
    lookup = traces.episodes.drop_duplicates(["run", "model_name", "condition"]).set_index(
        ["run", "model_name", "condition"])["arm"]
    keys = list(zip(rows["run"], rows["model_name"], rows["condition"].fillna("baseline"), strict=True))
    return pd.Series([lookup.get(k, f"{k[0]}/{k[1]} [{k[2]}]") for k in keys], index=rows.index)


def progress(traces: Traces) -> pd.DataFrame:
    """Mean action and tile progress and the closest approach, per arm."""
    eps = with_pooled(traces.episodes, traces.references)
    near = (eps["closest_action"] <= NEAR) & ~eps["solved"]
    t = eps.assign(near_unsolved=near, farther=eps["progress_action"] < 0).groupby("arm", sort=False).agg(
        episodes=("episode_id", "size"),
        mean_progress_action=("progress_action", "mean"),
        mean_progress_action_clipped=("progress_action_clipped", "mean"),
        ended_farther=("farther", "sum"),
        mean_progress_tile=("progress_tile", "mean"),
        mean_progress_tile_clipped=("progress_tile_clipped", "mean"),
        median_closest_action=("closest_action", "median"),
        near_unsolved=("near_unsolved", "sum"),
    ).reset_index()
    t["near_unsolved"] = t["near_unsolved"].astype(int)
    t["ended_farther"] = t["ended_farther"].astype(int)
    return order_arms(t, traces)


def near_goal(traces: Traces) -> pd.DataFrame:
    """Unsolved episodes near the goal, two ways: that came within ``NEAR`` actions of it at some
    step (``came_within``, the closest approach) and that ended within ``NEAR`` actions of it
    (``ended_within``, the final action distance)."""
    eps = with_pooled(traces.episodes, traces.references)
    unsolved = ~eps["solved"]
    t = eps.assign(
        unsolved=unsolved,
        came_within=unsolved & (eps["closest_action"] <= NEAR),
        ended_within=unsolved & (eps["d_end_action"] <= NEAR),
        end_unsolved=eps["d_end_action"].astype("float64").where(unsolved),
        closest_unsolved=eps["closest_action"].astype("float64").where(unsolved),
    ).groupby("arm", sort=False).agg(
        episodes=("episode_id", "size"), unsolved=("unsolved", "sum"),
        came_within=("came_within", "sum"), ended_within=("ended_within", "sum"),
        median_closest_unsolved=("closest_unsolved", "median"), median_end_unsolved=("end_unsolved", "median"),
    ).reset_index()
    for c in ("unsolved", "came_within", "ended_within"):
        t[c] = t[c].astype(int)
    return order_arms(t.rename(columns={"came_within": f"came_within_{NEAR}", "ended_within": f"ended_within_{NEAR}"}),
                      traces)


def overview(traces: Traces) -> pd.DataFrame:
    """The headline per arm: episodes, solves, mean action progress with its maze-bootstrap 95%
    interval, tokens and cost."""
    rows = []
    for arm, g in with_pooled(traces.episodes, traces.references).groupby("arm", sort=False):
        prog = cluster_ratio_ci(g["progress_action"], g["maze_id"])
        cost = g["cost_usd"]
        rows.append({
            "arm": arm, "reference": arm in traces.references,
            "episodes": len(g), "mazes": g["maze_id"].nunique(), "solves": int(g["solved"].sum()),
            **prog.as_dict("mean_progress_action"),
            "mean_progress_action_clipped": float(g["progress_action_clipped"].mean()),
            "tokens_out": int(g["tokens_out"].fillna(0).sum()),
            "tokens_reasoning": int(g["tokens_reasoning"].fillna(0).sum()),
            "mean_tokens_out_per_episode": float(g["tokens_out"].mean()),
            "cost_usd": float(cost.sum()) if cost.notna().any() else float("nan"),
        })
    return order_arms(pd.DataFrame(rows), traces)


def closest_approach(traces: Traces) -> pd.DataFrame:
    """One row per episode: the least action distance it reached, and whether it solved."""
    cols = ["run", "arm", "episode_id", "maze_id", "optimal_actions", "closest_action", "solved"]
    return traces.episodes[cols].sort_values(["arm", "closest_action"]).reset_index(drop=True)


def bands(traces: Traces, column: str = "band") -> pd.DataFrame:
    """Per optimal-path band (the study's, or with ``horizon_band`` gridbench's longer ones): solves
    / episodes and mean progress with maze-bootstrap intervals, of the model arms only (a
    reference's bands say nothing of the mazes' difficulty for models)."""
    eps = with_pooled(traces.model_episodes, ())
    names = BANDS if column == "band" else HORIZON_BANDS
    rows = []
    for (arm, band), g in eps.groupby(["arm", column], sort=False):
        prog = cluster_ratio_ci(g["progress_action"], g["maze_id"])
        rate, method = solve_rate_ci(g["solved"], g["maze_id"])
        rows.append({
            "arm": arm, "band": band, "episodes": len(g), "mazes": g["maze_id"].nunique(),
            "solves": int(g["solved"].sum()),
            **rate.as_dict("solve_rate"), "solve_rate_ci_method": method, **prog.as_dict("mean_progress_action"),
            "mean_progress_action_clipped": float(g["progress_action_clipped"].mean()),
        })
    if not rows:  # references only: no model episode in any band; the CSV still names its columns
        return order_arms(pd.DataFrame(columns=["arm", "band", "episodes", "mazes", "solves", "solve_rate",
                                                "mean_progress_action"]), traces)
    t = pd.DataFrame(rows)
    t["band"] = pd.Categorical(t["band"], categories=list(names), ordered=True)
    return order_arms(t.sort_values("band", kind="stable"), traces)


def difficulty_axes(traces: Traces) -> pd.DataFrame:
    """One regression per maze property, on all episodes and on episodes with optimal <= 45, of
    the model arms only: with references in, the model term would be the gap between the oracle
    and the random agent, not anything of the models.

    ``p_value`` (maze-clustered) tests the property's increment over the model-only fit;
    ``p_value_holm`` corrects it over the properties of the subset (Holm), and ``distinguishable``
    is an adjusted p-value below the report's alpha: only then can the increment be told from 0."""
    eps = traces.model_episodes
    parts = []
    for subset, frame in (("all", eps), (f"optimal<={SHORT_PATH}", eps[eps["optimal_actions"] <= SHORT_PATH])):
        t = pd.DataFrame([{"subset": subset, "label": label, **property_r2(frame, prop)}
                          for prop, label in PROPERTIES.items()])
        t["p_value_holm"] = holm(t["p_value"])
        t["distinguishable"] = t["p_value_holm"] < ALPHA
        parts.append(t)
    return pd.concat(parts, ignore_index=True)


def strongest_axis(axes: pd.DataFrame, subset: str = "all") -> tuple[pd.Series | None, pd.Series | None]:
    """The property with the largest R^2 increment in ``subset`` (None when no property has one),
    and the same row again only when its increment is distinguishable from zero (its
    maze-clustered p-value, Holm-corrected over the subset's properties, below the alpha)."""
    g = axes[(axes["subset"] == subset) & axes["r2_increment"].notna()]
    if g.empty:
        return None, None
    top = g.sort_values("r2_increment", ascending=False, kind="stable").iloc[0]
    return top, (top if bool(top["distinguishable"]) else None)


def unsolved_by_all(eps: pd.DataFrame) -> dict[str, int]:
    """How many distinct mazes ``eps`` ran, and how many none of its arms solved."""
    per_maze = eps.groupby("maze_id")["solved"].any()
    return {"mazes": int(len(per_maze)), "mazes_solved_by_none": int((~per_maze).sum())}


def headline(traces: Traces) -> dict[str, float | None]:
    """The headline figures of the model arms (references apart: ``reference_headline``); with
    references only they count nothing (0 episodes, no means)."""
    eps = traces.model_episodes
    errors = traces.errors
    if "model" in errors:
        errors = errors[~errors["model"].fillna("").map(is_builtin).astype(bool)]
    near = (eps["closest_action"] <= NEAR) & ~eps["solved"]
    return {
        "episodes": int(len(eps)), "error_episodes": int(len(errors)),
        "solves": int(eps["solved"].sum()), **unsolved_by_all(eps),
        "mean_progress_action": float(eps["progress_action"].mean()),
        "mean_progress_action_clipped": float(eps["progress_action_clipped"].mean()),
        "episodes_ended_farther": int((eps["progress_action"] < 0).sum()),
        "episodes_goal_unreachable": int((~eps["solved"] & eps["d_end_action"].isna()).sum()),
        "mean_progress_tile": float(eps["progress_tile"].mean()),
        "median_closest_action": float(eps["closest_action"].median()) if len(eps) else float("nan"),
        "near_unsolved": int(near.sum()),
        "ended_near_unsolved": int((~eps["solved"] & (eps["d_end_action"] <= NEAR)).sum()),
        "episodes_optimal_le_45": int((eps["optimal_actions"] <= SHORT_PATH).sum()),
        "solves_with_switch_gate": int(eps.loc[eps["content"].isin(["switch-gate only", "both"]), "solved"].sum()),
        "episodes_with_switch_gate": int(eps["content"].isin(["switch-gate only", "both"]).sum()),
        **solved_mazes(eps),
    }


def reference_headline(traces: Traces) -> dict[str, dict[str, float | int]]:
    """Each reference arm's episodes, mazes, solves and mean action progress: reported beside the
    models' headline, never added to it."""
    out: dict[str, dict[str, float | int]] = {}
    eps = traces.episodes
    for arm in traces.references:
        g = eps[eps["arm"] == arm]
        out[arm] = {"episodes": int(len(g)), "mazes": int(g["maze_id"].nunique()), "solves": int(g["solved"].sum()),
                    "mean_progress_action": float(g["progress_action"].mean())}
    return out


def solved_mazes(eps: pd.DataFrame) -> dict[str, int | None]:
    """What the solved episodes' mazes had: the study notes all its solves had no switch, no
    distractor and a short optimal path."""
    won = eps[eps["solved"]]
    return {
        "solves_max_optimal_actions": int(won["optimal_actions"].max()) if len(won) else None,
        "solves_with_switches": int((won["n_switches"] > 0).sum()),
        "solves_with_key_door": int(won["content"].isin(["key-door only", "both"]).sum()),
        "solves_with_distractors": int((won["n_distractors"] > 0).sum()),
    }


# ---- sections ------------------------------------------------------------------------------------

def _solves(ctx: Context) -> Built:
    t, colors = ctx.traces, ctx.colors
    by = {col: solves(t, col) for col in ("grid", "category", "content")}
    all_solves, terms = solves(t), terminations(t)
    return Built({"solves": all_solves, "solves_by_grid": by["grid"], "solves_by_category": by["category"],
                  "solves_by_content": by["content"], "terminations": terms},
                 {"solves": figures.solves_per_arm(all_solves, colors), "solves_by_maze": figures.solves_by(by, colors),
                  "terminations": figures.terminations(terms)})


def _progress(ctx: Context) -> Built:
    t, colors = ctx.traces, ctx.colors
    prog, closest, near = progress(t), closest_approach(t), near_goal(t)
    return Built({"progress": prog, "closest_approach": closest, "near_goal": near},
                 {"progress": figures.progress(prog, colors), "closest_approach": figures.closest(closest, colors, NEAR),
                  **drawn(near_goal=(near[near["unsolved"] > 0] if not near.empty else near,
                                     lambda: figures.near_goal(t.episodes, colors, NEAR)))})


def _bands(ctx: Context) -> Built:
    table = bands(ctx.traces)
    return Built({"bands": table}, {"bands": figures.bands(table, ctx.colors)} if not table.empty else {})


def _horizon(ctx: Context) -> Built | None:
    if not (ctx.traces.model_episodes["optimal_actions"] >= HORIZON_EDGES[1]).any():
        return None  # nothing past the study's horizon: its bands say it all
    table = bands(ctx.traces, "horizon_band")
    return Built({"horizon_bands": table}, {"horizon_bands": figures.bands(table, ctx.colors, HORIZON_BANDS)})


def _difficulty(ctx: Context) -> Built:
    axes = difficulty_axes(ctx.traces)
    # references only: no model episode to regress, nothing to draw
    return Built({"difficulty_axes": axes}, {"difficulty_axes": figures.difficulty(axes)} if axes["n"].max() else {})


SOLVES_SECTION = Section(
    "solves", "Solves",
    "An episode is solved when the agent enters the goal cell. Rows per arm and, with several "
    "model arms, pooled as `all` (references, the built-in agents, keep rows of their own and are "
    "never pooled). Grids are ordered by their number of cells (then width, then height: 9x6 < 8x7 "
    "< 8x8 < 10x10 < 14x14). The solve rate's 95% interval names its method "
    "(`solve_rate_ci_method`): the exact binomial (Clopper-Pearson) interval over the episodes when "
    "each maze gives the row one episode, over the mazes when a maze's episodes all agree, else the "
    "maze bootstrap (flagged by `_ci_note` as under *Progress by optimal path length*). `content` groups mazes by mechanisms: key-door "
    "(at least one key and one door), switch-gate (at least one switch and one gate), both, none. "
    "Episodes that ended in an infrastructure `error` are excluded from every metric and "
    "counted only in the terminations table.",
    _solves,
)


PROGRESS_SECTION = Section(
    "progress", "Progress and closest approach",
    "`progress_action = 1 - d_end / d_start` over oracle action distances (barriers count), the "
    "study's formula, **not clipped**: an episode that ended farther from the goal than it started "
    "scores below 0 (`ended_farther` counts them); `progress_tile` the same over tile distances "
    "(barriers ignored). **Definition used** where the study is silent: solved episodes score 1, an "
    "episode whose goal became unreachable (or whose start distance is unknown) scores 0. The traces' "
    "clipped reading, `clip(1 - d_end / d_start, 0, 1)`, is kept as `mean_progress_action_clipped` and "
    "`mean_progress_tile_clipped`. Closest approach is the least action distance reached during the episode; "
    f"`near_unsolved` counts unsolved episodes that came within {NEAR} actions of the goal. "
    f"`near_goal` tells two things apart among unsolved episodes: `came_within_{NEAR}`, "
    f"those that **came** within {NEAR} actions of the goal at some step (closest approach, "
    f"the same count as `near_unsolved`), and `ended_within_{NEAR}`, those that **ended** "
    f"within {NEAR} actions of it (`d_end_action`, the distance after the last step); with "
    "the median closest and final distances of unsolved episodes.",
    _progress,
)


BANDS_SECTION = Section(
    "bands", "Progress by optimal path length",
    "Episodes of the model arms (references, the built-in agents, are left out) grouped by the maze's "
    "optimal number of actions (<=30, 31-45, 46-60, >=61). "
    "Intervals are 95% percentile bootstrap intervals (9,999 replicates, fixed seed) that "
    "resample mazes, keeping all episodes of a drawn maze (scipy.stats.bootstrap over per-maze "
    "sums and counts). `_ci_note` says what an interval rests on: `fewer than 10 mazes` (too few "
    "for a bootstrap to cover well: read it as indicative); `no variation between mazes` or "
    "`fewer than 2 mazes`, and then no interval is given rather than one of zero width. Solve rates "
    "take the exact binomial interval where it applies (`solve_rate_ci_method`, as under *Solves*). "
    "Progress is the study's unclipped formula; `mean_progress_action_clipped` is the clipped mean.",
    _bands,
)


HORIZON_SECTION = Section(
    "horizon", "Progress past the study's horizon",
    "Only when a run has mazes of 150 optimal actions or more (the `long-horizon` set): the same "
    "table and figure as *Progress by optimal path length*, with the study's last band (>=61, where "
    "its plans stop at 132 actions) split into gridbench's own bands 61-149, 150-249, 250-399 and "
    ">=400 actions (gridbench's choice; the study has none past 132). Same intervals and notes.",
    _horizon,
)


DIFFICULTY_SECTION = Section(
    "difficulty", "Difficulty axes",
    "For each maze property one OLS regression `progress_action ~ property + C(model)` over the "
    "model arms' episodes (references, the built-in agents, are left out: with them the model term would "
    "be the gap between the oracle and the random agent; the model fixed effect is the arm, dropped when "
    "there is one arm). `r2` is the full model's "
    "R^2 = 1 - SS_res / SS_tot: the share of the variance in action progress explained by the "
    "property and the model together (the study's definition). `r2_model_only` is the R^2 of "
    "the model term alone and `r2_increment = r2 - r2_model_only` the property's own share. "
    "`p_value` tests the slope (so the increment) with standard errors clustered by maze (statsmodels "
    "`cov_type='cluster'`, t with mazes - 1 degrees of freedom: a maze run by several arms is one "
    "cluster); `p_value_iid` treats episodes as independent; `p_value_holm` corrects `p_value` over the "
    "subset's properties (Holm) and `distinguishable` is that below 0.05. **Headline rule:** the summary "
    "names the property with the largest increment the strongest axis only when it is distinguishable, "
    "for all episodes and for the restricted subset alike. "
    "A property that is constant in the subset adds nothing (increment 0, no slope). "
    "`grid_side` is the larger grid dimension in cells. The figure draws each property's increment "
    "(its own share) with `r2` written beside it: when the model term dominates, `r2` is nearly the same "
    "for every property. A subset with no regression to fit says so instead of drawing bars.",
    _difficulty,
)
