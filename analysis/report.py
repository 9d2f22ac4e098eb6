"""Assemble every analysis into ``report/``: report.md, a self-contained report.html, one PNG per
figure, one CSV per table and metrics.json.

The folder is built under a temporary name next to its destination and renamed into place
when complete, so a failed report never leaves a half-written folder behind.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from markdown_it import MarkdownIt

from analysis import ablation as ablation_mod
from analysis import compute, failure, figures, metrics, protocols, study
from analysis import steps as steps_mod
from analysis.load import GROUP, Traces, load_runs
from env.errors import BadInput
from env.files import atomic_folder

FORMAT = "gridbench.report/1"


@dataclass
class Section:
    key: str
    title: str
    text: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    figures: dict[str, plt.Figure] = field(default_factory=dict)


def _clean(x):
    """JSON-safe scalars: NaN/inf become null, numpy numbers become Python numbers."""
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        return None if not math.isfinite(float(x)) else float(x)
    if isinstance(x, np.bool_):
        return bool(x)
    if isinstance(x, pd.Timestamp):
        return x.isoformat()
    if x is pd.NA or x is pd.NaT:
        return None
    return x


def _column_values(col: pd.Series) -> list:
    """A column as JSON-safe Python values (``_clean``), a whole column at a time: per-episode
    tables have a row per episode."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        col = col.astype(str)
    values = col.tolist()
    if pd.api.types.is_float_dtype(col.dtype) and not isinstance(col.dtype, pd.api.extensions.ExtensionDtype):
        return [v if math.isfinite(v) else None for v in values]
    if pd.api.types.is_integer_dtype(col.dtype) and not isinstance(col.dtype, pd.api.extensions.ExtensionDtype):
        return values
    return [_clean(v) for v in values]


def _records(df: pd.DataFrame) -> list[dict]:
    names = [str(c) for c in df.columns]
    columns = [_column_values(df.iloc[:, i]) for i in range(df.shape[1])]
    return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]


def _fmt(v) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        return f"{v:.3f}" if abs(float(v)) < 1000 else f"{v:,.0f}"
    if isinstance(v, (int, np.integer)):
        return f"{v:,}" if abs(int(v)) >= 10000 else str(v)
    return str(v)


def _shown(df: pd.DataFrame, max_rows: int) -> pd.DataFrame:
    """The rows and columns a page shows: the arm label already names the run, model and
    condition, so those columns stay in the CSV only."""
    shown = df.head(max_rows)
    if "arm" in shown:
        shown = shown.drop(columns=[c for c in GROUP if c in shown])
    return shown


def _md_table(df: pd.DataFrame, max_rows: int = 60) -> str:
    if df.empty:
        return "_(no rows)_\n"
    shown = _shown(df, max_rows)
    lines = ["| " + " | ".join(map(str, shown.columns)) + " |", "|" + "---|" * len(shown.columns)]
    for row in shown.itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v).replace("|", "/") for v in row) + " |")
    if len(df) > max_rows:
        lines.append(f"\n_{len(df) - max_rows} more rows in the CSV._")
    return "\n".join(lines) + "\n"


# Section texts and summary lines are markdown: commonmark, with raw HTML off so that anything
# that is not markdown is escaped rather than passed through.
_MARKDOWN = MarkdownIt("commonmark", {"html": False})


def _md_html(text: str) -> str:
    return _MARKDOWN.render(text)


def _md_inline(text: str) -> str:
    return _MARKDOWN.renderInline(text)


def _html_table(df: pd.DataFrame, max_rows: int = 60) -> str:
    if df.empty:
        return "<p><em>(no rows)</em></p>"
    shown = _shown(df, max_rows)
    # prose columns read left-aligned; numbers stay right-aligned
    prose = [shown[c].map(lambda v: isinstance(v, str) and len(v) > 24).any() for c in shown.columns]
    # long column names may wrap after an underscore, so a wide table still fits the page
    names = [html.escape(str(c)).replace("_", "_<wbr>") for c in shown.columns]
    head = "".join(f"<th class='prose'>{n}</th>" if wide else f"<th>{n}</th>"
                   for n, wide in zip(names, prose, strict=True))
    body = "".join("<tr>" + "".join(
        f"<td class='prose'>{_md_inline(_fmt(v))}</td>" if wide else f"<td>{html.escape(_fmt(v))}</td>"
        for v, wide in zip(row, prose, strict=True)) + "</tr>" for row in shown.itertuples(index=False))
    more = f"<p><em>{len(df) - max_rows} more rows in the CSV.</em></p>" if len(df) > max_rows else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def _figures(**specs: tuple[pd.DataFrame, Callable[[], plt.Figure]]) -> dict[str, plt.Figure]:
    """Draw each figure whose table has rows; an empty table gets no empty figure."""
    return {name: make() for name, (table, make) in specs.items() if not table.empty}


def sections(traces: Traces) -> tuple[list[Section], dict, dict]:
    """Compute every table and figure; the headline numbers and the study's findings beside this
    run's, for metrics.json."""
    if traces.episodes.empty:
        where = ", ".join(str(d) for d in traces.run_dirs) or "runs"
        raise BadInput(where, "episodes", f"all {len(traces.errors)} episodes ended in error: nothing to report "
                                          "(rerun them with `gridbench run --retry-errors`)")
    colors = figures.arm_colors(traces.arms)
    st = steps_mod.annotate(traces)
    try:
        return _sections(traces, st, colors)
    finally:
        st.close()


def _sections(traces: Traces, st: steps_mod.StepTable, colors: dict[str, str]) -> tuple[list[Section], dict, dict]:
    out: list[Section] = []

    budgets = compute.budgets(traces, st)
    out.append(Section(
        "overview", "Overview",
        "One row per model (arm), pooled as `all` when there are several: episodes, mazes, solves, "
        "mean action progress (`progress_action`, defined under *Progress*) with its 95% interval "
        "(mazes resampled, as under *Progress by optimal path length*), output and reasoning tokens, "
        "mean output tokens per episode and cost in USD. `budgets` shows what each arm's requests "
        "carried, over the steps where it was recorded: `thinking` (on or off by the provider's own "
        "switch; empty when the provider has none), `thinking_budget` (a thinking-token budget; empty "
        "when there was none), `reasoning_effort` (the effort level sent; empty for the provider's "
        "default) and `max_output_tokens` (the output cap), each with the number of steps it is known "
        "for. Runs recorded before budgets were traced show them empty. The summary warns when the "
        "arms' thinking was controlled differently (switch, effort level or thinking budget), naming "
        "each arm's controls, since the study equalised the output cap only; and when the output caps "
        "differ.",
        {"overview": metrics.overview(traces), "budgets": budgets},
    ))

    arm_protocols = protocols.arm_protocols(traces)
    flags = protocols.comparison_flags(traces)
    out.append(Section(
        "protocols", "Protocols",
        "The protocol each arm ran (`protocols`: its main fields, the protocol hash of docs/protocol.md, and "
        "`serving`, how a served model was served; the full protocol is each episode's `protocol` column), "
        "and the comparisons that set arms side by side whose protocols differ in more than what is "
        "compared (`comparison_flags`): `models`, arms of one run and condition that differ in any field "
        "(a model comparison should differ in the model only; the study's ablation gave each model its own "
        "thinking settings), and `conditions`, a condition that differs from its run's baseline in more "
        "than its own field (the baseline is the condition that changes nothing). The summary names both.",
        {"protocols": arm_protocols, "comparison_flags": flags},
    ))

    solves = metrics.solves(traces)
    by = {col: metrics.solves(traces, col) for col in ("grid", "category", "content")}
    terms = metrics.terminations(traces)
    out.append(Section(
        "solves", "Solves",
        "An episode is solved when the agent enters the goal cell. Rows per model (arm) and, "
        "with several arms, pooled as `all`. `content` groups mazes by mechanisms: key-door "
        "(at least one key and one door), switch-gate (at least one switch and one gate), both, none. "
        "Episodes that ended in an infrastructure `error` are excluded from every metric and "
        "counted only in the terminations table.",
        {"solves": solves, "solves_by_grid": by["grid"], "solves_by_category": by["category"],
         "solves_by_content": by["content"], "terminations": terms},
        {"solves": figures.solves_per_arm(solves, colors), "solves_by_maze": figures.solves_by(by, colors),
         "terminations": figures.terminations(terms)},
    ))

    prog = metrics.progress(traces)
    closest = metrics.closest_approach(traces)
    near = metrics.near_goal(traces)
    out.append(Section(
        "progress", "Progress and closest approach",
        "`progress_action = clip(1 - d_end / d_start, 0, 1)` over oracle action distances (barriers "
        "count), `progress_tile` the same over tile distances (barriers ignored); solved episodes "
        "score 1. Closest approach is the least action distance reached during the episode; "
        f"`near_unsolved` counts unsolved episodes that came within {metrics.NEAR} actions of the goal. "
        f"`near_goal` tells two things apart among unsolved episodes: `came_within_{metrics.NEAR}`, "
        f"those that **came** within {metrics.NEAR} actions of the goal at some step (closest approach, "
        f"the same count as `near_unsolved`), and `ended_within_{metrics.NEAR}`, those that **ended** "
        f"within {metrics.NEAR} actions of it (`d_end_action`, the distance after the last step); with "
        "the median closest and final distances of unsolved episodes.",
        {"progress": prog, "closest_approach": closest, "near_goal": near},
        {"progress": figures.progress(prog, colors),
         "closest_approach": figures.closest(closest, colors, metrics.NEAR),
         **_figures(near_goal=(near[near["unsolved"] > 0] if not near.empty else near,
                               lambda: figures.near_goal(traces.episodes, colors, metrics.NEAR)))},
    ))

    bands = metrics.bands(traces)
    out.append(Section(
        "bands", "Progress by optimal path length",
        "Episodes grouped by the maze's optimal number of actions (<=30, 31-45, 46-60, >=61). "
        "Intervals are 95% percentile bootstrap intervals (9,999 replicates, fixed seed) that "
        "resample mazes, keeping all episodes of a drawn maze (scipy.stats.bootstrap over per-maze "
        "sums and counts). No interval is given with fewer than two mazes.",
        {"bands": bands}, {"bands": figures.bands(bands, colors)} if not bands.empty else {},
    ))

    axes = metrics.difficulty_axes(traces)
    out.append(Section(
        "difficulty", "Difficulty axes",
        "For each maze property one OLS regression `progress_action ~ property + C(model)` (the "
        "model fixed effect is the arm; dropped when there is one arm). `r2` is the full model's "
        "R^2 = 1 - SS_res / SS_tot: the share of the variance in action progress explained by the "
        "property and the model together (the study's definition). `r2_model_only` is the R^2 of "
        "the model term alone and `r2_increment = r2 - r2_model_only` the property's own share. "
        "A property that is constant in the subset adds nothing (increment 0, no slope). "
        "`grid_side` is the larger grid dimension in cells.",
        {"difficulty_axes": axes}, {"difficulty_axes": figures.difficulty(axes)},
    ))

    verbs = failure.verbs(traces, st)
    live = failure.live_switch(traces, st)
    per_last, last = failure.last_actions(traces, st)
    quarters = failure.quarters(traces, st)
    figs = _figures(verbs=(verbs, lambda: figures.verbs(verbs, colors)),
                    last_actions=(per_last, lambda: figures.last_bumps(per_last, last, colors, failure.LAST)),
                    quarters=(quarters, lambda: figures.quarters(quarters, colors)))
    out.append(Section(
        "failure", "Failure modes",
        "Verbs: `pickup` actions issued vs keys taken (events pickup and swap); `toggle` actions "
        "issued vs doors opened (door_unlocked, door_opened), doors closed, switches flipped "
        "(switch_on, switch_off) and nothing (noop). Live switch: among episodes whose maze has a "
        "switch that controls at least one gate (read from the maze file, matched by id and "
        "checksum), those in which the agent stood on such a switch after some step. Last actions: "
        f"the last {failure.LAST} steps of each unsolved episode (fewer if it was shorter); "
        "`wall_bump_share` counts forwards blocked by a wall, `bump_share` every blocked forward "
        "(walls, keys, closed doors and gates); shares pool the windows. Quarters: each episode's "
        "steps split into four equal parts by step index; a revisit is a move onto a cell stood on "
        "before, an unseen step a move onto a cell never stood on (the start counts as seen), a "
        "turn a left/right action; shares are of all steps in that quarter, pooled over episodes.",
        {"verbs": verbs, "live_switch": live, "last_actions": last, "last_actions_episodes": per_last,
         "quarters": quarters},
        figs,
    ))

    onset_per, onset = failure.onset(traces, st)
    unsolved = onset_per[~onset_per["solved"]]
    out.append(Section(
        "onset", "Failure onset",
        "When an episode stopped making progress. **Definition used:** the failure onset is the last "
        "step that reached a new minimum of the oracle action distance, lower than the start "
        "distance and than every distance before it (`onset_step`, 0 when no step did); "
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
        {"failure_onset": onset, "failure_onset_episodes": onset_per},
        _figures(failure_onset=(unsolved, lambda: figures.onset(onset_per, colors))),
    ))

    tok = compute.tokens(traces)
    queries = compute.queries(traces, st)
    think = compute.thinking_after(traces, st)
    think_q = compute.thinking_quarters(traces, st)
    figs = {"tokens": figures.tokens(tok, colors)}
    if not think_q.empty and think_q["reasoning_tokens"].sum() > 0:
        figs["thinking_quarters"] = figures.thinking_quarters(think_q, colors)
    if not think.empty and think["turns"].sum() > 0:
        figs["thinking_after"] = figures.thinking_after(think, colors)
    out.append(Section(
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
        "the steps made by exactly one call (docs/report.md).",
        {"tokens": tok, "queries": queries, "thinking_quarters": think_q, "thinking_after": think}, figs,
    ))

    reg = failure.regret(traces, st)
    hor = failure.horizon(traces, st)
    figs = _figures(regret=(reg, lambda: figures.regret(reg)), horizon=(hor, lambda: figures.horizon(hor, colors)))
    out.append(Section(
        "regret", "Per-step oracle regret and horizon",
        "Each step is `progress` if it lowered the oracle action distance, `neutral` if it left "
        "it unchanged, `wasted` if it raised it (making the goal unreachable counts as wasted, "
        "staying unreachable as neutral). The horizon plot shows the mean remaining action "
        "distance as a share of the start distance at each step; an ended episode keeps its final "
        "value (0 when solved); steps with the goal unreachable count as 1.",
        {"regret": reg, "horizon": hor}, figs,
    ))

    abl = ablation_mod.ablation(traces)
    if not abl.empty:
        out.append(Section(
            "ablation", "Ablations",
            "Each condition against its run's baseline (the condition that changes nothing) for the same "
            "model, paired by maze: per maze the condition's mean minus the baseline's (repeats averaged), "
            "then the mean over mazes run under both, with a 95% bootstrap interval resampling mazes. "
            "`differs_in` names every protocol field in which the model's condition differs from its "
            "baseline: more than one is a comparison of more than one change.",
            {"ablation": abl}, {"ablation": figures.ablation(abl)},
        ))

    head: dict[str, Any] = dict(metrics.headline(traces))  # the headline figures, then what the findings cite
    head["arms"] = traces.arms
    head["runs"] = sorted(traces.episodes["run"].unique().tolist())
    head["mazes_unresolved"] = sorted(m for m, v in traces.mazes.items() if v is None)
    unreproduced = unreproduced_study_mazes(traces)
    if unreproduced:  # only then: a run without them reports exactly what it reported before
        head["study_mazes_unreproduced"] = unreproduced
    head["budget_warnings"] = compute.budget_warnings(budgets)
    head["protocol_warnings"] = protocols.flag_warnings(flags)
    tables = {k: v for s in out for k, v in s.tables.items()}
    recomputed, findings = study.findings(tables, head)
    study_tables = {"study_findings": recomputed,
                    "study_ablation": study.ablation_table(metrics.solves_by_condition(traces)),
                    "study_usage": study.usage_table(queries)}
    out.insert(1, Section(
        "study", "The study's findings, recomputed",
        "Each headline figure of the study beside the same quantity computed from these runs, with "
        "the table and columns that hold it (docs/study.md lists every quantitative statement of the "
        "study and how to recompute it). The study ran three models (Claude, Kimi, Qwen) on 50 "
        "evaluation mazes, one episode each (150 episodes); where it gives a figure for one of its "
        "models, this run's figure is given for every arm. A run of other models, mazes or "
        "protocols need not agree with the study. `study_ablation`: the study's ablation solve rates "
        "(its twelve conditions, 15 mazes per model) beside this run's, for the conditions and models "
        "(named claude, kimi, qwen) the run has; `study_usage`: its final run's queries and output tokens "
        "per query beside this run's arms of those names.",
        {k: v for k, v in study_tables.items() if not v.empty or k == "study_findings"},
    ))
    return out, head, findings


def unreproduced_study_mazes(traces: Traces) -> list[dict]:
    """The study's mazes in the run whose stored optimal count no published file reproduces
    (``meta.study.reproduced`` false, docs/generator.md#the-studys-sets)."""
    out = []
    for maze_id, maze in sorted(traces.mazes.items()):
        study = (getattr(maze.meta, "study", None) or {}) if maze is not None and maze.meta else {}
        if study.get("reproduced") is False:
            out.append({"maze_id": maze_id, "set": study.get("set"), "stored_optimal": study.get("stored_optimal"),
                        "optimal": study.get("optimal")})
    return out


def _summary_lines(head: dict, secs: list[Section]) -> list[str]:
    t = {k: v for s in secs for k, v in s.tables.items()}
    lines = [
        f"{head['episodes']} episodes ({head['error_episodes']} more ended in infrastructure errors and "
        f"are excluded) over {head['mazes']} mazes; {head['solves']} solved; "
        f"{head['mazes_solved_by_none']} mazes solved by no model.",
        f"Mean action progress {head['mean_progress_action']:.3f}, tile progress {head['mean_progress_tile']:.3f}; "
        f"median closest approach {head['median_closest_action']:g} actions; "
        f"{head['near_unsolved']} unsolved episodes came within {metrics.NEAR} actions of the goal at some "
        f"step, {head['ended_near_unsolved']} ended within {metrics.NEAR} actions of it.",
        f"Episodes with a switch-gate mechanism: {head['episodes_with_switch_gate']}, solved: "
        f"{head['solves_with_switch_gate']}.",
    ]
    if head["solves"]:
        lines.append(f"Solved episodes: longest optimal path {head['solves_max_optimal_actions']} actions; "
                     f"{head['solves_with_switches']} on mazes with a switch, {head['solves_with_distractors']} "
                     "on mazes with distractors.")
    ax = t.get("difficulty_axes")
    if ax is not None and ax["r2_increment"].notna().any():
        top = ax[ax["subset"] == "all"].sort_values("r2_increment", ascending=False).iloc[0]
        lines.append(f"Strongest single difficulty axis: {top['label']} (R^2 {top['r2']:.3f} with the model "
                     f"term, increment {top['r2_increment']:.3f}).")
    onset = t.get("failure_onset")
    if onset is not None and not onset.empty:
        arms = onset[onset["arm"] != metrics.ALL] if (onset["arm"] != metrics.ALL).any() else onset
        arms = arms[arms["unsolved_episodes"] > 0]
        if not arms.empty:
            lines.append("Failure onset (last new minimum of the oracle distance), unsolved episodes whose onset "
                         "came in their first half: " + "; ".join(
                             f"{r.arm} {r.onset_first_half} of {r.unsolved_episodes}" for r in arms.itertuples()) + ".")
    for m in head.get("study_mazes_unreproduced", []):
        lines.append(f"Maze {m['maze_id']} is one of the study's ({m['set']}), but no published file of it "
                     f"reproduces the optimal count the study stored ({m['stored_optimal']} actions): this run "
                     f"scores it against gridbench's count of the file it has ({m['optimal']}).")
    if head["mazes_unresolved"]:
        lines.append(f"Maze files not found for {len(head['mazes_unresolved'])} maze ids; analyses that "
                     "need the maze (wall bumps, live switches) leave those episodes out.")
    return lines


def _png(fig: plt.Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=figures.DPI)
    plt.close(fig)
    return buf.getvalue()


CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;font-size:12px;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 6px;
text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}img{max-width:100%}
code{background:#f3f3f3;padding:0 3px}table{display:block;overflow-x:auto;max-width:100%}
th{max-width:9em;vertical-align:bottom}td.prose,th.prose{text-align:left;min-width:14em;max-width:32em}li{margin:.2em 0}
.warn{background:#fff3cd;border:1px solid #e9c46a;padding:.5em 1em}"""


def _check_replaceable(out_dir: Path) -> None:
    """Only an earlier report (or nothing) may be replaced: never a run or an unrelated folder."""
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise BadInput(str(out_dir), "", "exists and is not a folder")
    if not any(out_dir.iterdir()):
        return
    try:
        fmt = json.loads((out_dir / "metrics.json").read_text()).get("format")
    except (OSError, ValueError, AttributeError):
        fmt = None
    if fmt != FORMAT:
        raise BadInput(str(out_dir), "", "exists and is not a gridbench report; not overwriting it")


def write_report(traces: Traces, out_dir: str | Path,
                 progress: Callable[[str], None] | None = None) -> dict:
    """Write the report folder; returns metrics.json's content."""
    out_dir = Path(out_dir)
    _check_replaceable(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    secs, head, findings = sections(traces)
    try:
        with atomic_folder(out_dir) as tmp:
            md = ["# gridbench report", "", f"Runs: {', '.join(head['runs'])}. Arms: {', '.join(head['arms'])}.", ""]
            warnings = [f"**Warning: the arms got different budgets.** {w}" for w in head["budget_warnings"]]
            warnings += [f"**Warning: protocols differ beyond what is compared.** {w}" for w in head["protocol_warnings"]]
            md += [f"> {w}" for w in warnings] + ([""] if warnings else [])
            md += [f"- {line}" for line in _summary_lines(head, secs)] + [""]
            body = [f"<h1>gridbench report</h1><p>Runs: {html.escape(', '.join(head['runs']))}. "
                    f"Arms: {html.escape(', '.join(head['arms']))}.</p>"]
            body += [f"<p class='warn'>{_md_inline(w)}</p>" for w in warnings]
            body += ["<ul>"] + [f"<li>{_md_inline(line)}</li>" for line in _summary_lines(head, secs)]
            body += ["</ul>", "<p>Sections: " + " &middot; ".join(
                f"<a href='#{s.key}'>{html.escape(s.title)}</a>" for s in secs) + "</p>"]
            tables_json: dict[str, list] = {}
            figure_files: list[str] = []
            for s in secs:
                md += [f"## {s.title}", "", s.text, ""]
                body += [f"<h2 id='{s.key}'>{html.escape(s.title)}</h2>", _md_html(s.text)]
                for name, fig in s.figures.items():
                    if progress:
                        progress(f"figure {name}")
                    png = _png(fig)
                    (tmp / f"{name}.png").write_bytes(png)
                    figure_files.append(f"{name}.png")
                    md += [f"![{name}]({name}.png)", ""]
                    b64 = base64.b64encode(png).decode()
                    body.append(f'<figure><img alt="{name}" src="data:image/png;base64,{b64}"></figure>')
                for name, df in s.tables.items():
                    df.to_csv(tmp / f"{name}.csv", index=False)
                    tables_json[name] = _records(df)
                    md += [f"**{name}** ([CSV]({name}.csv))", "", _md_table(df), ""]
                    body += [f"<h3>{html.escape(name)} <small>(<a href='{name}.csv'>CSV</a>)</small></h3>",
                             _html_table(df)]
            metrics_json = _clean({
                "format": FORMAT, "headline": head, "study_findings": findings,
                "definitions": {s.key: s.text for s in secs},
                "figures": figure_files, "tables": tables_json,
            })
            (tmp / "metrics.json").write_text(json.dumps(metrics_json, indent=1, allow_nan=False))
            (tmp / "report.md").write_text("\n".join(md))
            (tmp / "report.html").write_text(
                "<!doctype html><html><head><meta charset='utf-8'><title>gridbench report</title>"
                f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>")
    except BaseException:
        plt.close("all")
        raise
    return metrics_json


def build_report(run_dirs: Sequence[str | Path], out_dir: str | Path | None = None,
           progress: Callable[[str], None] | None = None) -> dict:
    """Load runs and write their report (default: ``<run>/report`` for a single run)."""
    dirs = [Path(d) for d in run_dirs]
    if out_dir is None:
        out_dir = dirs[0] / "report"
    traces = load_runs(dirs)
    return write_report(traces, out_dir, progress)
