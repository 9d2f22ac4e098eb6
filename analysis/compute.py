"""Test-time compute: tokens and cost per arm and per episode, thinking per quarter of an episode,
thinking after a step that worked vs one that did not, and the budgets each arm's requests carried.

Medians and means of reasoning tokens come from how often each token count occurs (a DuckDB
aggregation over the steps), so they are exact without holding the steps in memory."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis import figures
from analysis.load import ALL, BUDGET_COLUMNS, Traces, manifest
from analysis.metrics import order_arms, overview, with_pooled
from analysis.sections import Built, Context, Section
from analysis.stats import counted_median
from analysis.steps import StepTable
from traces import open_store


def tokens(traces: Traces) -> pd.DataFrame:
    """Token totals, per-episode means and medians, cost per arm and per solve."""
    eps = with_pooled(traces.episodes, traces.references)
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
    # the study compares spend as a multiple of the most frugal model's (references spend nothing)
    arms = t[(t["arm"] != ALL) & ~t["arm"].isin(traces.references)]
    least = arms["mean_tokens_out_per_episode"].min() if len(arms) else float("nan")
    t["tokens_out_vs_least"] = t["mean_tokens_out_per_episode"] / least if least and least > 0 else float("nan")
    return order_arms(t, traces)


def cost_by_tier(traces: Traces, st: StepTable) -> pd.DataFrame:
    """Cost per arm and tier (``standard``, ``flex``, ``batch``: how the calls were bought,
    docs/providers.md): steps, calls and USD at the tier's price. Steps with no calls (built-in
    agents, steps from an action list) are left out; runs from before tiers count as standard."""
    t = st.query("""SELECT arm, coalesce(tier, 'standard') AS bought, count(*) AS steps, sum(calls) AS calls,
                           sum(cost_usd) AS cost_usd
                    FROM steps WHERE calls > 0 GROUP BY arm, bought ORDER BY arm, bought""")
    t = t.rename(columns={"bought": "tier"})
    if t.empty:
        return t
    t["steps"] = t["steps"].astype(int)
    t["calls"] = t["calls"].astype(int)
    t["cost_per_call_usd"] = t["cost_usd"] / t["calls"]
    return order_arms(t, traces)


SERVED_COLUMNS = ["run", "model_name", "engine", "replicas", "gpus_per_replica", "serving_h", "gpu_hours",
                  "gpu_hour_usd", "gpu_cost_usd"]


def _busy_hours(starts: pd.Series, ends: pd.Series) -> float:
    """Hours covered by the union of the intervals [start, end]: time when at least one of them ran."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(zip(starts, ends, strict=True)):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += (cur_e - cur_s).total_seconds()
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += (cur_e - cur_s).total_seconds()
    return total / 3600


def served_cost(traces: Traces, gpu_hour_usd: float | None) -> pd.DataFrame:
    """Each model a run served itself (its manifest's sweep entry has a ``serve`` block): its GPUs
    (replicas x tensor-parallel GPUs per replica for vLLM; llama.cpp serves on CPU: 0), its serving
    hours (the union of its episodes' wall-clock intervals, errors included: the time at least one
    of its episodes was in flight; server start-up and idle time between episodes are not in the
    traces), GPU-hours = GPUs x serving hours, and at ``gpu_hour_usd`` their cost in USD."""
    eps = pd.concat([traces.episodes, traces.errors], ignore_index=True)
    rows = []
    for d in traces.run_dirs:
        m = manifest(d)
        run = m.get("run") or open_store(d).name
        for entry in (m.get("sweep") or {}).get("models") or []:
            serve = entry.get("serve") if isinstance(entry, dict) else None
            if not serve:
                continue
            mine = eps[(eps["run"] == run) & (eps["model_name"] == entry.get("name"))]
            if mine.empty:
                continue
            replicas = int(serve.get("replicas") or 1)
            per = int(serve.get("tensor_parallel_size") or 1) if serve.get("engine") == "vllm" else 0
            hours = _busy_hours(pd.to_datetime(mine["started_at"], utc=True), pd.to_datetime(mine["finished_at"], utc=True))
            gpu_hours = replicas * per * hours
            rows.append({"run": run, "model_name": entry["name"], "engine": serve.get("engine"), "replicas": replicas,
                         "gpus_per_replica": per, "serving_h": hours, "gpu_hours": gpu_hours,
                         "gpu_hour_usd": gpu_hour_usd if gpu_hour_usd is not None else float("nan"),
                         "gpu_cost_usd": gpu_hours * gpu_hour_usd if gpu_hour_usd is not None else float("nan")})
    return pd.DataFrame(rows, columns=SERVED_COLUMNS)


def with_served_cost(tok: pd.DataFrame, traces: Traces, served: pd.DataFrame) -> pd.DataFrame:
    """``tokens`` with each served arm's GPU-hours and their cost beside the recorded cost:
    ``gpu_hours`` and ``gpu_cost_usd`` (a served model's, shared among its arms by their episodes'
    summed ``wall_s``), and ``total_cost_usd`` (recorded USD plus GPU USD: the column in which a
    served arm and a hosted one compare). Unchanged when no run served a model."""
    if served.empty:
        return tok
    eps = traces.episodes
    wall = eps.groupby(["run", "model_name", "arm"])["wall_s"].sum().reset_index()
    share = wall.merge(served, on=["run", "model_name"])
    model_wall = share.groupby(["run", "model_name"])["wall_s"].transform("sum")
    share["frac"] = (share["wall_s"] / model_wall).where(model_wall > 0, 1.0 / share.groupby(
        ["run", "model_name"])["wall_s"].transform("size"))
    per_arm = share.assign(gpu_hours=share["gpu_hours"] * share["frac"],
                           gpu_cost_usd=share["gpu_cost_usd"] * share["frac"]).groupby("arm")[
        ["gpu_hours", "gpu_cost_usd"]].sum(min_count=1)
    out = tok.copy()
    out["gpu_hours"] = out["arm"].map(per_arm["gpu_hours"])
    out["gpu_cost_usd"] = out["arm"].map(per_arm["gpu_cost_usd"])
    pooled = out["arm"] == ALL
    if pooled.any():
        models = out[(out["arm"] != ALL) & ~out["arm"].isin(traces.references)]
        out.loc[pooled, "gpu_hours"] = models["gpu_hours"].sum(min_count=1)
        out.loc[pooled, "gpu_cost_usd"] = models["gpu_cost_usd"].sum(min_count=1)
    out["total_cost_usd"] = out["cost_usd"].fillna(0) + out["gpu_cost_usd"].fillna(0)
    unknown = out["cost_usd"].isna() | (out["gpu_hours"].notna() & out["gpu_cost_usd"].isna())
    out.loc[unknown, "total_cost_usd"] = float("nan")
    return out


QUERY_COLUMNS = ["arm", "episodes", "steps", "queries", "queries_per_episode", "parse_failures", "tokens_out",
                 "mean_tokens_out_per_query", "median_tokens_out_per_query", "single_call_steps"]


def queries(traces: Traces, st: StepTable) -> pd.DataFrame:
    """Model calls (queries) per arm beside its steps: how many, how many gave no action, and the
    output tokens per query. A query is not a step: re-queried replies add calls to the step they
    led to, and a step taken from an earlier query's list has none (docs/traces.md). The mean is
    the episodes' output tokens over their calls; the median is over the steps made by exactly one
    call (each such step's tokens are one query's), the calls of other steps being summed per step."""
    eps = with_pooled(traces.episodes, traces.references)
    if "calls" not in eps or eps["calls"].fillna(0).sum() == 0:
        return pd.DataFrame(columns=QUERY_COLUMNS)
    medians = st.per_arm("median(tokens_out) AS median_tokens_out_per_query, count(*) AS single_call_steps",
                         where="calls = 1")
    rows = []
    for arm, g in eps.groupby("arm", sort=False):
        calls = int(g["calls"].fillna(0).sum())
        rows.append({"arm": arm, "episodes": len(g), "steps": int(g["steps"].sum()), "queries": calls,
                     "queries_per_episode": calls / len(g), "parse_failures": int(g["parse_failures"].fillna(0).sum())
                     if "parse_failures" in g else 0,
                     "tokens_out": int(g["tokens_out"].fillna(0).sum()),
                     "mean_tokens_out_per_query": float(g["tokens_out"].fillna(0).sum() / calls) if calls else float("nan")})
    t = pd.DataFrame(rows).merge(medians, on="arm", how="left")
    return order_arms(t[QUERY_COLUMNS], traces)


# The two readings of "a move that worked" (study, "Test-time Compute"). Each maps a group name
# to the steps in it (rows with the steps' state_change and outcome); a step's group decides where
# the NEXT turn's reasoning tokens are counted.
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


def _summary(counts: pd.DataFrame) -> dict[str, float | int]:
    """Turns, median and mean of reasoning tokens given as value counts (``value``, ``n``)."""
    n = int(counts["n"].sum())
    if not n:
        return {"turns": 0, "median_reasoning_tokens": np.nan, "mean_reasoning_tokens": np.nan}
    total = int((counts["value"] * counts["n"]).sum())
    return {"turns": n, "median_reasoning_tokens": counted_median(counts["value"], counts["n"]),
            "mean_reasoning_tokens": total / n}


def thinking_after(traces: Traces, st: StepTable) -> pd.DataFrame:
    """Median reasoning tokens on the turn after a step, by what that step did.

    ``definition`` ``state``: ``worked`` (the step changed the position, the carried key or a
    mechanism) vs ``achieved nothing`` (it did not), the latter split into ``turned`` (only the
    facing changed) and ``no change`` (a bump or a no-op). ``definition`` ``distance``:
    ``progress`` (the step cut the oracle action distance) vs ``no progress`` (neutral or wasted),
    and those two parts. Turns whose reasoning token count is unknown are left out; ``turns`` is
    how many remain.
    """
    cols = ["arm", "definition", "after", "turns", "median_reasoning_tokens", "mean_reasoning_tokens"]
    # how often each next-turn count follows each kind of step: small, whatever the steps
    counts = st.query("SELECT arm, state_change, outcome, next_reasoning AS value, count(*) AS n FROM steps "
                      "WHERE next_reasoning IS NOT NULL GROUP BY ALL")
    rows = []
    for arm, g in with_pooled(counts, traces.references).groupby("arm", sort=False):
        for definition, groups in AFTER_GROUPS.items():
            for name, select in groups.items():
                rows.append({"arm": arm, "definition": definition, "after": name, **_summary(g[select(g)])})
    return order_arms(pd.DataFrame(rows, columns=cols), traces)


def thinking_quarters(traces: Traces, st: StepTable) -> pd.DataFrame:
    """Reasoning tokens per turn in each quarter of the episode (``analysis.steps`` quarters).

    Turns whose reasoning count is unknown are left out; ``turns`` is how many remain and
    ``episodes`` how many episodes they come from.
    """
    cols = ["arm", "quarter", "turns", "episodes", "median_reasoning_tokens", "mean_reasoning_tokens",
            "reasoning_tokens"]
    known = "tokens_reasoning IS NOT NULL"
    counts = st.query(f"SELECT arm, quarter, tokens_reasoning AS value, count(*) AS n FROM steps WHERE {known} "
                      "GROUP BY ALL")
    episodes = st.per_arm("count(DISTINCT ep) AS episodes", by="quarter", where=known)
    episodes = episodes.set_index(["arm", "quarter"])["episodes"]
    rows = []
    for (arm, q), g in with_pooled(counts, traces.references).groupby(["arm", "quarter"], sort=True):
        rows.append({"arm": arm, "quarter": int(q), **_summary(g), "episodes": int(episodes[(arm, q)]),
                     "reasoning_tokens": int((g["value"] * g["n"]).sum())})
    t = pd.DataFrame(rows, columns=cols).sort_values("quarter", kind="stable")
    return order_arms(t, traces)


def _values(s: pd.Series) -> str:
    """The distinct known values of a column, in order, as one cell ("" when none is known)."""
    known = s.dropna()
    if known.empty:
        return ""
    vals = sorted(known.unique(), key=lambda v: (isinstance(v, str), v))

    def text(v: object) -> str:
        if isinstance(v, (bool, np.bool_)):
            return "on" if v else "off"
        return str(int(v)) if isinstance(v, (int, float, np.integer, np.floating)) else str(v)

    return ", ".join(text(v) for v in vals)


def budgets(traces: Traces, st: StepTable) -> pd.DataFrame:
    """What each arm's requests allowed: thinking budget, effort level, output-token cap.

    Per arm (no pooled row: the point is to compare arms) the steps, and for each budget column
    the steps where it is known and its distinct known values.
    """
    # quoted: a budget column may be a word SQL keeps for itself (constraint)
    known = ", ".join(f'count("{col}") AS "{col}_steps"' for col in BUDGET_COLUMNS)
    t = st.query(f"SELECT arm, count(*) AS steps, {known} FROM steps GROUP BY arm ORDER BY arm")
    for col in BUDGET_COLUMNS:
        seen = st.query(f'SELECT DISTINCT arm, "{col}" AS value FROM steps WHERE "{col}" IS NOT NULL')
        values = seen.groupby("arm")["value"].agg(_values)
        t.insert(t.columns.get_loc(f"{col}_steps") + 1, col, [values.get(a, "") for a in t["arm"]])
    return order_arms(t, traces)


# the per-step columns that say how much a model may think, apart from the output cap
THINKING_CONTROLS = ("thinking", "reasoning_effort", "thinking_budget")


def budget_warnings(table: pd.DataFrame) -> list[str]:
    """One sentence per way the arms' budgets differ, empty when they got the same ones.

    Arms whose budgets were recorded (an output cap is known: built-in agents and runs from
    before the columns have none) are compared. When their thinking controls differ (the
    switch, the effort level, the thinking-token budget), the sentence names each arm's and
    says that the study equalised the output cap only; a differing output cap is its own sentence.
    """
    if table.empty or len(table) < 2:
        return []
    recorded = table[table["max_output_tokens_steps"] > 0]
    if len(recorded) < 2:
        return []
    out = []
    controls = {arm: tuple(row[c] for c in THINKING_CONTROLS) for arm, row in zip(
        recorded["arm"], recorded.to_dict("records"), strict=True)}
    if len(set(controls.values())) > 1:
        described = "; ".join(f"{arm} {_controls(values)}" for arm, values in controls.items())
        out.append(f"the arms' thinking was controlled differently: {described}. The study equalised the output "
                   "cap only (64,000 tokens for every model), not how much each model thinks.")
    if recorded["max_output_tokens"].nunique() > 1:
        out.append("max_output_tokens differs between arms: "
                   + "; ".join(f"{a} {v}" for a, v in zip(recorded["arm"], recorded["max_output_tokens"], strict=True))
                   + ".")
    return out


def _controls(values: tuple[str, ...]) -> str:
    """An arm's thinking controls in words (each value as the budgets table shows it)."""
    thinking, effort, budget = values
    switch = f"thinking {thinking}" if thinking else "no thinking switch"
    return (f"{switch}, " + (f"effort {effort}" if effort else "no effort level") + ", "
            + (f"a thinking budget of {budget}" if budget else "no thinking budget"))


# ---- sections ------------------------------------------------------------------------------------

def _overview(ctx: Context) -> Built:
    return Built({"overview": overview(ctx.traces), "budgets": budgets(ctx.traces, ctx.steps)})


def _compute(ctx: Context) -> Built:
    tok = tokens(ctx.traces)
    think, think_q = thinking_after(ctx.traces, ctx.steps), thinking_quarters(ctx.traces, ctx.steps)
    spent = tok[["mean_tokens_out_per_episode", "mean_tokens_reasoning_per_episode"]].fillna(0).to_numpy()
    figs = {"tokens": figures.tokens(tok, ctx.colors)} if (spent > 0).any() else {}  # built-in agents spend none
    # no reasoning token at all (no arm thinks, or none is counted): nothing to draw
    if not think_q.empty and think_q["reasoning_tokens"].sum() > 0:
        figs["thinking_quarters"] = figures.thinking_quarters(think_q, ctx.colors)
        if not think.empty and think["turns"].sum() > 0:
            figs["thinking_after"] = figures.thinking_after(think, ctx.colors)
    served = served_cost(ctx.traces, ctx.gpu_hour_usd)
    tables = {"tokens": with_served_cost(tok, ctx.traces, served), "queries": queries(ctx.traces, ctx.steps),
              "thinking_quarters": think_q, "thinking_after": think, "cost_by_tier": cost_by_tier(ctx.traces, ctx.steps)}
    if not served.empty:
        tables["served_cost"] = served
    return Built(tables, figs)


OVERVIEW_SECTION = Section(
    "overview", "Overview",
    "One row per arm, pooled as `all` when there are several model arms (references, the built-in agents, "
    "keep rows of their own, marked `reference`, and are never pooled): episodes, mazes, solves, "
    "mean action progress (`progress_action`, the study's unclipped formula, defined under *Progress*) "
    "with its 95% interval (mazes resampled, as under *Progress by optimal path length*; `_ci_note` "
    "flags an interval on fewer than 10 mazes and replaces one with no variation), the clipped mean "
    "(`mean_progress_action_clipped`), output and reasoning tokens, "
    "mean output tokens per episode and cost in USD. `budgets` shows what each arm's requests "
    "carried, over the steps where it was recorded: `thinking` (on or off by the provider's own "
    "switch; empty when the provider has none), `thinking_budget` (a thinking-token budget; empty "
    "when there was none), `reasoning_effort` (the effort level sent; empty for the provider's "
    "default), `max_output_tokens` (the output cap) and `constraint` (how the reply was "
    "constrained: llama.cpp's `grammar` or vLLM's `structured_outputs`; empty when it was not), each "
    "with the number of steps it is known "
    "for. Runs recorded before budgets were traced show them empty. The summary warns when the "
    "arms' thinking was controlled differently (switch, effort level or thinking budget), naming "
    "each arm's controls, since the study equalised the output cap only; and when the output caps "
    "differ.",
    _overview,
)


COMPUTE_SECTION = Section(
    "compute", "Test-time compute",
    "Token totals and per-episode means from the episode rows; cost in USD as recorded "
    "(per solve = total cost / solves, empty without solves). **Thinking per quarter**: the "
    "reasoning tokens of each turn, grouped by the quarter of its episode the step falls in "
    "(the quarters of *Failure modes*), median and mean per turn. **Thinking after a step**: "
    "the reasoning tokens of turn t+1 grouped by what step t did, under two definitions of a "
    "move that worked, each labelled in the `definition` column. *State*: `worked` when the step "
    "changed the agent's position, the key it carries or a mechanism (a move, a pickup or swap, "
    "a door or switch changing), `achieved nothing` otherwise; that group is split into `turned` "
    "(only the facing changed) and `no change` (a bump, or a pickup, toggle, done or invalid "
    "reply that changed nothing). A turn counts as achieving nothing because it neither reaches "
    "a new cell nor operates anything; the split lets a reader count it the other way. "
    "*Distance*: `progress` when the oracle action distance fell, `no progress` when it stayed "
    "(`neutral`) or rose (`wasted`). Turns whose reasoning count is unknown are left out. "
    "**Queries**: model calls per arm beside its steps (a query is not a step: a re-queried reply adds "
    "calls to the step it led to, a step taken from an earlier query's action list has none), the calls "
    "whose reply gave no action, and output tokens per query: the mean over every call, the median over "
    "the steps made by exactly one call (docs/report.md). **Cost by tier**: per arm and tier "
    "(`standard`, `flex`, `batch`: how the calls were bought, docs/providers.md) the steps with calls, "
    "the calls and their cost in USD at the tier's price. **Served models** (`served_cost`, only when a run "
    "served a model itself): its GPUs (replicas x GPUs per replica from the run's manifest; llama.cpp "
    "serves on CPU: 0), its serving hours (the union of its episodes' wall-clock intervals: the time at "
    "least one was in flight; server start-up and idle time are not in the traces, so this is a lower "
    "bound), GPU-hours and, given `--gpu-hour-usd`, their cost in USD; `tokens` then shows each served "
    "arm's share (by its episodes' summed `wall_s`) as `gpu_hours` and `gpu_cost_usd`, and "
    "`total_cost_usd`, recorded USD plus GPU USD, the column in which served and hosted arms compare.",
    _compute,
)
