"""The study's headline findings, each beside the same figure recomputed from this run.

The study's numbers are facts quoted by section or figure (docs/study.md lists every one, with
the table that recomputes it); the sentences here are our own. Each finding reads the tables the
report has already computed, so the side-by-side view and the detailed sections can never
disagree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.load import ALL, BANDS, Traces
from analysis.metrics import NEAR, SHORT_PATH, solves_by_condition
from analysis.sections import Built, Context, Section
from env.study_facts import STUDY_ABLATION, STUDY_MODEL_NAMES, STUDY_USAGE

Tables = dict[str, pd.DataFrame]


def ablation_table(solves: pd.DataFrame) -> pd.DataFrame:
    """The study's ablation solve rates beside this run's, for the conditions and models both have
    (``solves``: ``metrics.solves_by_condition``); empty when the run has none of its conditions."""
    if solves.empty:
        return pd.DataFrame()
    run = solves.set_index(["condition", "model_name"])
    rows = []
    for condition, rates in STUDY_ABLATION.items():
        for model, rate in zip(STUDY_MODEL_NAMES, rates, strict=True):
            if (condition, model) not in run.index:
                continue
            r = run.loc[(condition, model)]
            rows.append({"condition": condition, "model_name": model, "study_solve_rate": rate / 100,
                         "solve_rate": float(r["solve_rate"]), "solves": int(r["solves"]),
                         "episodes": int(r["episodes"])})
    return pd.DataFrame(rows)


def usage_table(queries: pd.DataFrame) -> pd.DataFrame:
    """The study's final-run usage per model beside this run's arms of the same name."""
    if queries.empty:
        return pd.DataFrame()
    rows = []
    for _, r in queries.iterrows():
        if r["arm"] not in STUDY_USAGE:
            continue
        _, study_queries, _, study_mean, study_median = STUDY_USAGE[r["arm"]]
        rows.append({"model_name": r["arm"], "study_queries": study_queries, "queries": int(r["queries"]),
                     "study_mean_tokens_out_per_query": study_mean,
                     "mean_tokens_out_per_query": _num(r["mean_tokens_out_per_query"]),
                     "study_median_tokens_out_per_query": study_median,
                     "median_tokens_out_per_query": _num(r.get("median_tokens_out_per_query"))})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Finding:
    key: str
    finding: str  # what is measured, in our words
    study: str  # the study's figure, with where it says so
    source: str  # the report table and columns (or metrics.json key) that recompute it
    compute: Callable[[Tables, dict], tuple[str, dict]]  # -> (this run, in words; its numbers)


def _arms(t: pd.DataFrame) -> pd.DataFrame:
    return t[t["arm"] != ALL] if (t["arm"] != ALL).any() else t


def _pooled(t: pd.DataFrame) -> pd.DataFrame:
    """The pooled rows (arm ``all``), or the single arm's rows when there is only one."""
    return t[t["arm"] == ALL] if (t["arm"] == ALL).any() else t


def _num(v) -> float | None:
    return None if v is None or (isinstance(v, float) and not np.isfinite(v)) or pd.isna(v) else float(v)


def _pct(v) -> str:
    v = _num(v)
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _f(v, digits: int = 3) -> str:
    v = _num(v)
    return "n/a" if v is None else f"{v:.{digits}f}"


def _g(v) -> str:
    v = _num(v)
    return "n/a" if v is None else f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def _n(count: int, thing: str) -> str:
    return f"{count} {thing}" if count == 1 else f"{count} {thing}s"


def _per_arm(t: pd.DataFrame, cell: Callable[[pd.Series], str]) -> str:
    return "; ".join(f"{r['arm']} {cell(r)}" for _, r in _arms(t).iterrows()) or "n/a"


# ---- the findings ---------------------------------------------------------------------------
def _solves(t: Tables, h: dict) -> tuple[str, dict]:
    s = t["solves"]
    per = _per_arm(s, lambda r: f"{int(r['solves'])}/{int(r['episodes'])}")
    return (f"{h['solves']} of {h['episodes']} episodes ({per})",
            {"solves": h["solves"], "episodes": h["episodes"],
             "per_arm": {r["arm"]: int(r["solves"]) for _, r in _arms(s).iterrows()}})


def _unsolved_mazes(t: Tables, h: dict) -> tuple[str, dict]:
    return (f"{h['mazes_solved_by_none']} of {h['mazes']} mazes",
            {"mazes_solved_by_none": h["mazes_solved_by_none"], "mazes": h["mazes"]})


def _ended_near(t: Tables, h: dict) -> tuple[str, dict]:
    p = _pooled(t["near_goal"]).iloc[0]
    return (f"{int(p[f'ended_within_{NEAR}'])} of {int(p['unsolved'])} unsolved episodes",
            {"ended_near_unsolved": int(p[f"ended_within_{NEAR}"]), "unsolved": int(p["unsolved"])})


def _came_near(t: Tables, h: dict) -> tuple[str, dict]:
    p = _pooled(t["near_goal"]).iloc[0]
    return (f"{int(p[f'came_within_{NEAR}'])} of {int(p['unsolved'])} unsolved episodes",
            {"near_unsolved": int(p[f"came_within_{NEAR}"]), "unsolved": int(p["unsolved"])})


def _closest(t: Tables, h: dict) -> tuple[str, dict]:
    return f"{_g(h['median_closest_action'])} actions", {"median_closest_action": h["median_closest_action"]}


def _band(band: str) -> Callable[[Tables, dict], tuple[str, dict]]:
    def compute(t: Tables, h: dict) -> tuple[str, dict]:
        b = _pooled(t["bands"])
        b = b[b["band"].astype(str) == band]
        if b.empty:
            return "no episodes in this band", {}
        r = b.iloc[0]
        note = r["mean_progress_action_ci_note"]
        ci = (f" (95% CI {_f(r['mean_progress_action_ci_low'])} to {_f(r['mean_progress_action_ci_high'])}"
              f"{'; ' + note if note else ''})" if _num(r["mean_progress_action_ci_low"]) is not None
              else f" (no interval: {note})" if note else "")
        return (f"{_f(r['mean_progress_action'])}{ci}, clipped {_f(r['mean_progress_action_clipped'])}; "
                f"{_n(int(r['solves']), 'solve')} in {_n(int(r['episodes']), 'episode')}",
                {"mean_progress_action": r["mean_progress_action"], "ci_low": r["mean_progress_action_ci_low"],
                 "ci_high": r["mean_progress_action_ci_high"], "ci_note": note,
                 "mean_progress_action_clipped": r["mean_progress_action_clipped"], "solves": int(r["solves"]),
                 "episodes": int(r["episodes"])})
    return compute


def _switch_gate(t: Tables, h: dict) -> tuple[str, dict]:
    return (f"{_n(h['solves_with_switch_gate'], 'solve')} in {_n(h['episodes_with_switch_gate'], 'episode')}",
            {"solves": h["solves_with_switch_gate"], "episodes": h["episodes_with_switch_gate"]})


def _key_door(t: Tables, h: dict) -> tuple[str, dict]:
    return (f"{h['solves_with_key_door']} of {h['solves']} solves",
            {"solves_with_key_door": h["solves_with_key_door"], "solves": h["solves"]})


def _solved_mazes(t: Tables, h: dict) -> tuple[str, dict]:
    if not h["solves"]:
        return "no solves", {}
    return (f"{_n(h['solves_with_switches'], 'solve')} with a switch, {h['solves_with_distractors']} with a distractor; "
            f"longest optimal path {h['solves_max_optimal_actions']} actions",
            {k: h[k] for k in ("solves_with_switches", "solves_with_distractors", "solves_max_optimal_actions")})


def _grids(t: Tables, h: dict) -> tuple[str, dict]:
    g = _pooled(t["solves_by_grid"])
    return ("; ".join(f"{r['grid']} {int(r['solves'])}/{int(r['episodes'])}" for _, r in g.iterrows()),
            {str(r["grid"]): {"solves": int(r["solves"]), "episodes": int(r["episodes"])} for _, r in g.iterrows()})


def _r2(subset: str, labels: tuple[str, ...]) -> Callable[[Tables, dict], tuple[str, dict]]:
    def compute(t: Tables, h: dict) -> tuple[str, dict]:
        ax = t["difficulty_axes"]
        ax = ax[ax["subset"] == subset].set_index("label")
        n = int(ax["n"].max()) if len(ax) else 0
        vals = {lab: _num(ax.loc[lab, "r2"]) if lab in ax.index else None for lab in labels}
        inc = {lab: _num(ax.loc[lab, "r2_increment"]) if lab in ax.index else None for lab in labels}
        told = {lab: bool(ax.loc[lab, "distinguishable"]) if lab in ax.index else None for lab in labels}
        return (f"{n} episodes; " + ", ".join(
                    f"{lab} {_f(v)} (increment {_f(inc[lab])}{'' if told[lab] else ', not told from 0'})"
                    for lab, v in vals.items()),
                {"episodes": n, "r2": vals, "r2_increment": inc, "distinguishable": told})
    return compute


def _toggles(t: Tables, h: dict) -> tuple[str, dict]:
    v = _pooled(t["verbs"]).iloc[0]
    keys = ("toggle_actions", "switches_flipped", "doors_opened", "toggles_nothing")
    return (f"{int(v['toggle_actions'])} toggles: {int(v['switches_flipped'])} flipped a switch, "
            f"{int(v['doors_opened'])} opened a door, {int(v['toggles_nothing'])} did nothing",
            {k: int(v[k]) for k in keys})


def _pickups(t: Tables, h: dict) -> tuple[str, dict]:
    v = _pooled(t["verbs"]).iloc[0]
    return (f"{int(v['pickup_actions'])} pickups, {int(v['keys_picked_up'])} took a key",
            {"pickup_actions": int(v["pickup_actions"]), "keys_picked_up": int(v["keys_picked_up"])})


def _live(t: Tables, h: dict) -> tuple[str, dict]:
    live = _pooled(t["live_switch"])
    if live.empty:
        return "no episode on a maze with a live switch", {}
    r = live.iloc[0]
    return (f"{int(r['stood_on_live_switch'])} of {int(r['episodes_with_live_switch'])} episodes",
            {"stood": int(r["stood_on_live_switch"]), "episodes": int(r["episodes_with_live_switch"])})


def _walls(t: Tables, h: dict) -> tuple[str, dict]:
    la = t["last_actions"]
    if la.empty:
        return "no failed episodes", {}
    return (_per_arm(la, lambda r: f"{_pct(r['wall_bump_share'])} wall bumps, "
                                   f"{int(r['stalled_wall_bump_majority'])} of {int(r['stalled_episodes'])} "
                                   "stalled episodes mostly wall bumps"),
            {r["arm"]: {"wall_bump_share": _num(r["wall_bump_share"]),
                        "stalled_wall_bump_majority": int(r["stalled_wall_bump_majority"]),
                        "stalled_episodes": int(r["stalled_episodes"])} for _, r in _arms(la).iterrows()})


def _quarter_trend(col: str) -> Callable[[Tables, dict], tuple[str, dict]]:
    def compute(t: Tables, h: dict) -> tuple[str, dict]:
        q = _arms(t["quarters"])
        if q.empty:
            return "no steps", {}
        per = {arm: [_num(v) for v in g.sort_values("quarter")[col]] for arm, g in q.groupby("arm", sort=False)}
        text = "; ".join(f"{arm} " + " / ".join(_pct(v) for v in vals) for arm, vals in per.items())
        return f"Q1 / Q2 / Q3 / Q4: {text}", per
    return compute


def _times_least(v) -> str:
    """A spend as a multiple of the most frugal arm's, in words; none when that arm spent nothing."""
    return "no multiple: the most frugal arm spent no output tokens" if _num(v) is None else f"{_f(v, 1)}x the least"


def _tokens(t: Tables, h: dict) -> tuple[str, dict]:
    tok = _arms(t["tokens"])
    return (_per_arm(tok, lambda r: f"{_g(r['mean_tokens_out_per_episode'])} output tokens per episode "
                                    f"({_times_least(r['tokens_out_vs_least'])}), {_n(int(r['solves']), 'solve')}"),
            {r["arm"]: {"tokens_out_vs_least": _num(r["tokens_out_vs_least"]), "solves": int(r["solves"])}
             for _, r in tok.iterrows()})


def _thinking_after(t: Tables, h: dict) -> tuple[str, dict]:
    ta = _arms(t["thinking_after"])
    if ta.empty or ta["turns"].sum() == 0:
        return "no reasoning counts recorded", {}
    cells: list[str] = []
    values: dict[str, dict[str, dict[str, float | None]]] = {}  # arm -> reading -> figures
    for arm, g in ta.groupby("arm", sort=False):
        g = g.set_index("after")
        parts = []
        for nothing, worked, label in (("achieved nothing", "worked", "state"), ("no progress", "progress", "distance")):
            parts.append(f"{label} {_g(g.loc[nothing, 'median_reasoning_tokens'])} after {nothing} "
                         f"({int(g.loc[nothing, 'turns'])} turns) vs {_g(g.loc[worked, 'median_reasoning_tokens'])} "
                         f"after {worked} ({int(g.loc[worked, 'turns'])})")
            values.setdefault(arm, {})[label] = {
                "nothing_median": _num(g.loc[nothing, "median_reasoning_tokens"]), "nothing_turns": int(g.loc[nothing, "turns"]),
                "worked_median": _num(g.loc[worked, "median_reasoning_tokens"]), "worked_turns": int(g.loc[worked, "turns"])}
        cells.append(f"{arm}: " + " / ".join(parts))
    return "; ".join(cells), values


def _thinking_quarters(t: Tables, h: dict) -> tuple[str, dict]:
    tq = _arms(t["thinking_quarters"])
    if tq.empty:
        return "no reasoning counts recorded", {}
    per = {arm: [_num(v) for v in g.sort_values("quarter")["median_reasoning_tokens"]]
           for arm, g in tq.groupby("arm", sort=False)}
    return ("median per turn, Q1 / Q2 / Q3 / Q4: "
            + "; ".join(f"{arm} " + " / ".join(_g(v) for v in vals) for arm, vals in per.items()), per)


def _terminations(t: Tables, h: dict) -> tuple[str, dict]:
    r = _pooled(t["terminations"]).iloc[0]
    n = int(r["episodes"]) - int(r["error"])
    return (f"{int(r['solved']) + int(r['step_cap'])} of {n} by a solve or the step cap "
            f"({int(r['solved'])} solved, {int(r['step_cap'])} step cap), {int(r['stall'])} by the stall watchdog",
            {"solved": int(r["solved"]), "step_cap": int(r["step_cap"]), "stall": int(r["stall"]), "episodes": n})


def _onset(t: Tables, h: dict) -> tuple[str, dict]:
    o = _arms(t["failure_onset"])
    return (_per_arm(o, lambda r: "no unsolved episodes" if not r["unsolved_episodes"] else
                     f"{int(r['onset_first_half'])} of {int(r['unsolved_episodes'])} unsolved episodes "
                     f"(median onset at {_pct(r['median_onset_share'])} of the episode)"),
            {r["arm"]: {"onset_first_half": int(r["onset_first_half"]), "unsolved": int(r["unsolved_episodes"]),
                        "median_onset_share": _num(r["median_onset_share"])} for _, r in o.iterrows()})


def _budgets(t: Tables, h: dict) -> tuple[str, dict]:
    b = t["budgets"]
    if b.empty:
        return "no steps", {}
    columns = ("thinking", "thinking_budget", "reasoning_effort", "max_output_tokens")
    known = b[[f"{c}_steps" for c in columns]].to_numpy().sum()
    if not known:
        return "not recorded in these traces", {"differ": False, "per_arm": {}}
    per = _per_arm(b, lambda r: f"thinking {r['thinking'] or 'no switch'}, thinking budget "
                                f"{r['thinking_budget'] or 'none'}, effort {r['reasoning_effort'] or 'none'}, "
                                f"output cap {r['max_output_tokens'] or 'not recorded'}")
    warning = h.get("budget_warnings") or []
    return (("DIFFERENT: " if warning else "") + per,
            {"differ": bool(warning),
             "per_arm": {r["arm"]: {c: r[c] or None for c in columns} for _, r in b.iterrows()}})


FINDINGS: tuple[Finding, ...] = (
    Finding("solves", "episodes solved",
            "6 of 150 (Claude 4, Kimi 1, Qwen 1, of 50 each; summary and Figure 4)",
            "`solves`: solves, episodes; metrics.json headline.solves", _solves),
    Finding("mazes_solved_by_none", "mazes no model solved", "45 of 50 (summary)",
            "headline.mazes_solved_by_none, headline.mazes", _unsolved_mazes),
    Finding("ended_near_goal", f"unsolved episodes that ended within {NEAR} actions of the goal",
            "none (summary)", f"`near_goal`: ended_within_{NEAR}; headline.ended_near_unsolved", _ended_near),
    Finding("came_near_goal", f"unsolved episodes that came within {NEAR} actions of the goal at some step",
            "none: only the six solves got that close (Figure 5)",
            f"`near_goal`: came_within_{NEAR}; headline.near_unsolved", _came_near),
    Finding("closest_approach", "median closest approach to the goal", "47.5 actions (Figure 5)",
            "headline.median_closest_action; `closest_approach`", _closest),
    *(Finding(f"band {band}", f"mean action progress, optimal path {band} actions", study,
              "`bands` (pooled row): mean_progress_action and its CI, solves, episodes", _band(band))
      for band, study in zip(BANDS, (
          "0.287 (95% CI 0.163 to 0.423); 5 solves in 39 episodes (Figure 6)",
          "0.240 (0.164 to 0.333); 1 solve in 30 (Figure 6)",
          "0.141 (0.089 to 0.205); 0 in 15 (Figure 6)",
          "0.070 (0.058 to 0.084); 0 in 66 (Figure 6)"), strict=True)),
    Finding("switch_gate_solves", "solves on mazes with a switch and a gate",
            "0 solves in 105 episodes (summary; Failure Modes)",
            "headline.solves_with_switch_gate, headline.episodes_with_switch_gate; `solves_by_content`", _switch_gate),
    Finding("key_door_solves", "solves on mazes with a key and a door", "4 of the 6 solves (summary; Failure Modes)",
            "headline.solves_with_key_door; `solves_by_content`", _key_door),
    Finding("solved_mazes", "what the solved mazes had",
            "no switch, no distractor, optimal path of 45 actions or less (Solve Rates and Progress)",
            "headline.solves_with_switches, solves_with_distractors, solves_max_optimal_actions", _solved_mazes),
    Finding("grid_solves", "solves by grid size", "8x8 3/33, 10x10 3/57, 14x14 0/60 (Solve Rates and Progress)",
            "`solves_by_grid` (pooled rows): solves, episodes", _grids),
    Finding("r2_all", "R^2 of progress ~ property + model, all episodes",
            "optimal path 0.171, gates 0.122, switches 0.104, distractors 0.030 (Difficulty Axes)",
            "`difficulty_axes` subset all: r2",
            _r2("all", ("optimal path (actions)", "gates", "switches", "distractors"))),
    Finding("r2_short", f"the same on episodes with an optimal path of {SHORT_PATH} actions or less",
            "69 episodes; gates 0.255, switches 0.247, optimal path 0.012 (Difficulty Axes)",
            f"`difficulty_axes` subset optimal<={SHORT_PATH}: r2, n",
            _r2(f"optimal<={SHORT_PATH}", ("gates", "switches", "optimal path (actions)"))),
    Finding("toggles", "what toggle actions did",
            "132 toggles: 2 flipped a switch, 15 opened a door, 115 did nothing (Failure Modes)",
            "`verbs`: toggle_actions, switches_flipped, doors_opened, toggles_nothing", _toggles),
    Finding("pickups", "what pickup actions did", "220 pickups, 27 took a key (Failure Modes)",
            "`verbs`: pickup_actions, keys_picked_up", _pickups),
    Finding("live_switch", "switch-gate episodes in which the agent stood on a live switch",
            "38 of 105 (Failure Modes)", "`live_switch`: stood_on_live_switch, episodes_with_live_switch", _live),
    Finding("wall_bumps", "wall bumps in the last 30 actions of failed episodes",
            "Claude: 91%; in 41 of its 46 stalled episodes more than half (Failure Modes, Figures 7-8)",
            "`last_actions`: wall_bump_share, stalled_wall_bump_majority, stalled_episodes", _walls),
    Finding("revisits", "revisits by quarter of the episode", "Kimi: 2.7% in the first quarter, 21.2% in the last "
            "(Failure Modes)", "`quarters`: revisit_share", _quarter_trend("revisit_share")),
    Finding("turns", "turns by quarter", "Qwen: 44.5% in the first quarter, peaking at 59.6% in the third "
            "(Failure Modes)", "`quarters`: turn_share", _quarter_trend("turn_share")),
    Finding("unseen", "steps onto an unseen cell by quarter", "Qwen: 24.5% in the first quarter, 2.4% in the last "
            "(Failure Modes)", "`quarters`: unseen_share", _quarter_trend("unseen_share")),
    Finding("tokens", "output tokens and solves", "Kimi and Qwen spent over 20x Claude's output tokens and solved "
            "1 each against Claude's 4 (summary; Test-time Compute, Figure 9)",
            "`tokens`: mean_tokens_out_per_episode, tokens_out_vs_least, solves", _tokens),
    Finding("thinking_after", "median reasoning tokens on the turn after a move that achieved nothing vs one that "
            "worked (state and distance definitions)",
            "Claude: 234 across 1301 turns after nothing, 579 across 299 after a move that worked (Test-time Compute)",
            "`thinking_after`: median_reasoning_tokens, turns", _thinking_after),
    Finding("thinking_quarters", "reasoning tokens per turn over the episode",
            "Claude reasons less as an episode goes on (Test-time Compute; no number given)",
            "`thinking_quarters`: median_reasoning_tokens", _thinking_quarters),
    Finding("terminations", "how episodes ended", "11 of 150 by a solve or the step cap; the stall watchdog ended "
            "the rest (Evaluation Environment)", "`terminations`: solved, step_cap, stall", _terminations),
    Finding("failure_onset", "unsolved episodes whose last progress came in their first half",
            "most of Claude's episodes stop progressing early (Figures 7-8; no number given)",
            "`failure_onset`: onset_first_half, unsolved_episodes, median_onset_share", _onset),
    Finding("budgets", "the budgets each model's requests carried",
            "the same 64k output budget for every model (Evaluation Setup); its run: thinking on by each "
            "provider's switch, Claude at effort xhigh, no thinking-token budget for any model",
            "`budgets`: thinking, thinking_budget, reasoning_effort, max_output_tokens; headline.budget_warnings",
            _budgets),
)


def model_rows(tables: Tables, references: list[str]) -> Tables:
    """The tables without the references' rows: the study compared models, and a built-in agent's
    figures beside them (the oracle's solves, its spend of nothing) would read as a model's."""
    return {k: t[~t["arm"].isin(references)] if "arm" in t else t for k, t in tables.items()}


NO_MODELS = "no model arm: these runs hold references (built-in agents) only"


def findings(tables: Tables, head: dict) -> tuple[pd.DataFrame, dict]:
    """The findings table (finding, study, this run, source) and its machine-readable form, of
    the model arms (``head["references"]`` left out)."""
    tables = model_rows(tables, list(head.get("references") or ()))
    rows, values = [], {}
    for f in FINDINGS:
        try:
            nums: dict
            if not head["episodes"]:
                text, nums = NO_MODELS, {}
            else:
                text, nums = f.compute(tables, head)
        except (KeyError, IndexError):  # a table this run has no rows for
            text, nums = "not computed for this run", {}
        rows.append({"key": f.key, "finding": f.finding, "study": f.study, "this_run": text, "source": f.source})
        values[f.key] = {"finding": f.finding, "study": f.study, "this_run": text, "values": nums, "source": f.source}
    return pd.DataFrame(rows), values


def unreproduced_mazes(traces: Traces) -> list[dict]:
    """The study's mazes in the run whose stored optimal count no published file reproduces
    (``meta.study.reproduced`` false, docs/generator.md#the-studys-sets)."""
    out = []
    for maze_id, maze in sorted(traces.mazes.items()):
        study = (getattr(maze.meta, "study", None) or {}) if maze is not None and maze.meta else {}
        if study.get("reproduced") is False:
            out.append({"maze_id": maze_id, "set": study.get("set"), "stored_optimal": study.get("stored_optimal"),
                        "optimal": study.get("optimal")})
    return out


# ---- sections ------------------------------------------------------------------------------------

def _study(ctx: Context) -> Built:
    recomputed, found = findings(ctx.tables, ctx.headline)
    references = ctx.traces.references
    tables = {"study_findings": recomputed,
              "study_ablation": ablation_table(solves_by_condition(ctx.traces.model_episodes)),
              "study_usage": usage_table(model_rows(ctx.tables, references)["queries"])}
    return Built({k: v for k, v in tables.items() if not v.empty or k == "study_findings"},
                 json={"study_findings": found})


STUDY_SECTION = Section(
    "study", "The study's findings, recomputed",
    "Each headline figure of the study beside the same quantity computed from these runs, with "
    "the table and columns that hold it (docs/study.md lists every quantitative statement of the "
    "study and how to recompute it). The study ran three models (Claude, Kimi, Qwen) on 50 "
    "evaluation mazes, one episode each (150 episodes); where it gives a figure for one of its "
    "models, this run's figure is given for every model arm. References (the built-in agents) are "
    "left out of every figure here, pooled ones included: the study compared models. A run of other models, mazes or "
    "protocols need not agree with the study. `study_ablation`: the study's ablation solve rates "
    "(its twelve conditions, 15 mazes per model) beside this run's, for the conditions and models "
    "(named claude, kimi, qwen) the run has; `study_usage`: its final run's queries and output tokens "
    "per query beside this run's arms of those names.",
    _study, last=True,
)
