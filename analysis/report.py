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
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from markdown_it import MarkdownIt

from analysis import (
    ablation,
    compute,
    discovery,
    failure,
    figures,
    incidents,
    metrics,
    protocols,
    ranking,
    study,
    twins,
    validity,
)
from analysis import steps as steps_mod
from analysis.load import ALL, GROUP, Traces, load_runs
from analysis.sections import Built, Context, Section
from env.errors import BadInput
from env.files import atomic_folder

FORMAT = "gridbench.report/1"


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


# the report's sections in the order it shows them, each declared beside its analysis
SECTIONS: tuple[Section, ...] = (
    compute.OVERVIEW_SECTION, study.STUDY_SECTION, protocols.PROTOCOLS_SECTION, validity.VALIDITY_SECTION,
    metrics.SOLVES_SECTION,
    metrics.PROGRESS_SECTION, metrics.BANDS_SECTION, metrics.HORIZON_SECTION, metrics.DIFFICULTY_SECTION, failure.FAILURE_SECTION,
    failure.ONSET_SECTION, compute.COMPUTE_SECTION, incidents.INCIDENTS_SECTION, failure.REGRET_SECTION, ablation.ABLATION_SECTION,
    twins.PAIRED_SECTION, twins.INVARIANCE_SECTION, twins.PROJECTION_SECTION, twins.MECHANISM_SECTION, twins.ATTRIBUTION_SECTION, ranking.RANKING_SECTION,
    discovery.DISCOVERY_SECTION,
)


def sections(traces: Traces, steps: steps_mod.StepTable | None = None,
             gpu_hour_usd: float | None = None) -> tuple[list[tuple[Section, Built]], dict]:
    """Build every section (``SECTIONS``): those built ``last`` after the others and the headline.
    Returns the sections shown, in order, and the headline figures for metrics.json. ``steps``:
    the runs' steps already annotated (``analysis.steps.annotate``), else they are annotated here;
    closed either way once the sections are built. ``gpu_hour_usd``: the price of a GPU-hour, which
    costs the models a run served itself (``compute.served_cost``)."""
    if traces.episodes.empty:
        if steps is not None:
            steps.close()
        where = ", ".join(str(d) for d in traces.run_dirs) or "runs"
        raise BadInput(where, "episodes", f"all {len(traces.errors)} episodes ended in error: nothing to report "
                                          "(rerun them with `gridbench run --retry-errors`)")
    if steps is None:
        steps = steps_mod.annotate(traces)
    try:
        ctx = Context(traces, steps, figures.arm_colors(traces.arms), gpu_hour_usd=gpu_hour_usd)
        built: dict[str, Built | None] = {}
        for last in (False, True):
            if last:
                ctx.headline = headline(ctx)
            for s in SECTIONS:
                if s.last == last:
                    part = built[s.key] = s.build(ctx)
                    ctx.tables.update(part.tables if part is not None else {})
    finally:
        steps.close()
    return [(s, b) for s in SECTIONS if (b := built[s.key]) is not None], ctx.headline


def headline(ctx: Context) -> dict[str, Any]:
    """The headline figures, then what the summary and the study's findings cite."""
    traces = ctx.traces
    head: dict[str, Any] = dict(metrics.headline(traces))
    head["arms"] = traces.arms
    head["references"] = metrics.reference_headline(traces)
    head["no_valid_action"] = validity.no_valid_action(ctx.tables["action_validity"])
    head["runs"] = sorted(traces.episodes["run"].unique().tolist())
    head["mazes_unresolved"] = sorted(m for m, v in traces.mazes.items() if v is None)
    unreproduced = study.unreproduced_mazes(traces)
    if unreproduced:  # only then: a run without them reports exactly what it reported before
        head["study_mazes_unreproduced"] = unreproduced
    head["budget_warnings"] = compute.budget_warnings(ctx.tables["budgets"])
    head["protocol_warnings"] = protocols.flag_warnings(ctx.tables["comparison_flags"])
    return head


def _model_lines(head: dict) -> list[str]:
    """The headline of the model arms (references are never counted in it)."""
    models = " of the models" if head["references"] else ""
    lines = [
        f"{head['episodes']} episodes{models} ({head['error_episodes']} more ended in infrastructure errors and "
        f"are excluded) over {head['mazes']} mazes; {head['solves']} solved; "
        f"{head['mazes_solved_by_none']} mazes solved by no model.",
        f"Mean action progress {head['mean_progress_action']:.3f} as the study computes it (1 - d_end / d_start, "
        f"unclipped: {head['episodes_ended_farther']} episodes ended farther from the goal than they started), "
        f"{head['mean_progress_action_clipped']:.3f} clipped to [0, 1]; tile progress {head['mean_progress_tile']:.3f}; "
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
    return lines


def _summary_lines(head: dict, shown: list[tuple[Section, Built]]) -> list[str]:
    t = {k: v for _, b in shown for k, v in b.tables.items()}
    lines = _model_lines(head) if head["episodes"] else [
        "No model arm: these runs hold references (built-in agents) only, each reported in rows of its own; "
        "nothing is pooled, regressed or set beside the study."]
    ax = t.get("difficulty_axes")
    if ax is not None:
        lines += [line for subset in ax["subset"].unique() if (line := _axis_line(ax, subset))]
    onset = t.get("failure_onset")
    if onset is not None and not onset.empty:
        arms = onset[(onset["arm"] != ALL) & ~onset["arm"].isin(list(head["references"]))]
        arms = arms[arms["unsolved_episodes"] > 0]
        if not arms.empty:
            lines.append("Failure onset (last new minimum of the oracle distance, turns left out), unsolved episodes "
                         "whose onset "
                         "came in their first half: " + "; ".join(
                             f"{r.arm} {r.onset_first_half} of {r.unsolved_episodes}" for r in arms.itertuples()) + ".")
    for m in head.get("study_mazes_unreproduced", []):
        lines.append(f"Maze {m['maze_id']} is one of the study's ({m['set']}), but no published file of it "
                     f"reproduces the optimal count the study stored ({m['stored_optimal']} actions): this run "
                     f"scores it against gridbench's count of the file it has ({m['optimal']}).")
    if head["references"]:
        refs = head["references"]
        lines.append("References (built-in agents, in rows of their own, never pooled with the models): " + "; ".join(
            f"{arm} {r['solves']} of {r['episodes']} solved" for arm, r in refs.items()) + ".")
    if head["mazes_unresolved"]:
        lines.append(f"Maze files not found for {len(head['mazes_unresolved'])} maze ids; analyses that "
                     "need the maze (wall bumps, live switches) leave those episodes out.")
    return lines


def _axis_line(ax: pd.DataFrame, subset: str) -> str | None:
    """The summary's sentence on the difficulty axes of one subset: the strongest axis only when its
    increment over the model-only fit can be told from zero (``metrics.strongest_axis``)."""
    top, named = metrics.strongest_axis(ax, subset)
    if top is None:
        return None
    where = "" if subset == "all" else f" (episodes with {subset.replace('optimal', 'optimal path ')} actions)"
    numbers = (f"R^2 {top['r2']:.3f} with the model term, increment {top['r2_increment']:.4f}, "
               f"maze-clustered p {top['p_value']:.3g}, Holm-adjusted {top['p_value_holm']:.3g}")
    if named is not None:
        return f"Strongest single difficulty axis{where}: {top['label']} ({numbers})."
    return (f"No single difficulty axis stands out{where}: the largest increment over the model term "
            f"({top['label']}: {numbers}) cannot be told from zero at the 0.05 level.")


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


class _Page:
    """report.md and report.html, written side by side as the sections are."""

    def __init__(self, head: dict, shown: list[tuple[Section, Built]]):
        runs, arms = ", ".join(head["runs"]), ", ".join(head["arms"])
        warnings = [f"**Warning: the arms got different budgets.** {w}" for w in head["budget_warnings"]]
        warnings += [f"**Warning: protocols differ beyond what is compared.** {w}" for w in head["protocol_warnings"]]
        warnings = [f"**Warning: no valid action.** {w}" for w in validity.warnings(head["no_valid_action"])] + warnings
        summary = _summary_lines(head, shown)
        self.md = ["# gridbench report", "", f"Runs: {runs}. Arms: {arms}.", ""]
        self.md += [f"> {w}" for w in warnings] + ([""] if warnings else [])
        self.md += [f"- {line}" for line in summary] + [""]
        self.body = [f"<h1>gridbench report</h1><p>Runs: {html.escape(runs)}. Arms: {html.escape(arms)}.</p>"]
        self.body += [f"<p class='warn'>{_md_inline(w)}</p>" for w in warnings]
        self.body += ["<ul>"] + [f"<li>{_md_inline(line)}</li>" for line in summary]
        self.body += ["</ul>", "<p>Sections: " + " &middot; ".join(
            f"<a href='#{s.key}'>{html.escape(s.title)}</a>" for s, _ in shown) + "</p>"]

    def section(self, s: Section) -> None:
        self.md += [f"## {s.title}", "", s.text, ""]
        self.body += [f"<h2 id='{s.key}'>{html.escape(s.title)}</h2>", _md_html(s.text)]

    def figure(self, name: str, png: bytes) -> None:
        self.md += [f"![{name}]({name}.png)", ""]
        b64 = base64.b64encode(png).decode()
        self.body.append(f'<figure><img alt="{name}" src="data:image/png;base64,{b64}"></figure>')

    def table(self, name: str, df: pd.DataFrame) -> None:
        self.md += [f"**{name}** ([CSV]({name}.csv))", "", _md_table(df), ""]
        self.body += [f"<h3>{html.escape(name)} <small>(<a href='{name}.csv'>CSV</a>)</small></h3>", _html_table(df)]

    def html(self) -> str:
        return ("<!doctype html><html><head><meta charset='utf-8'><title>gridbench report</title>"
                f"<style>{CSS}</style></head><body>{''.join(self.body)}</body></html>")


def write_report(traces: Traces, out_dir: str | Path, progress: Callable[[str], None] | None = None,
                 steps: steps_mod.StepTable | None = None, gpu_hour_usd: float | None = None) -> dict:
    """Write the report folder; returns metrics.json's content. ``steps``: as for ``sections``."""
    out_dir = Path(out_dir)
    try:
        _check_replaceable(out_dir)
        out_dir.parent.mkdir(parents=True, exist_ok=True)
    except BaseException:
        if steps is not None:
            steps.close()
        raise
    shown, head = sections(traces, steps, gpu_hour_usd)
    try:
        with atomic_folder(out_dir) as tmp:
            page = _Page(head, shown)
            tables_json: dict[str, list] = {}
            figure_files: list[str] = []
            for section, built in shown:
                page.section(section)
                for name, fig in built.figures.items():
                    if progress:
                        progress(f"figure {name}")
                    png = _png(fig)
                    (tmp / f"{name}.png").write_bytes(png)
                    figure_files.append(f"{name}.png")
                    page.figure(name, png)
                for name, df in built.tables.items():
                    df.to_csv(tmp / f"{name}.csv", index=False)
                    tables_json[name] = _records(df)
                    page.table(name, df)
            metrics_json = _clean({
                "format": FORMAT, "headline": head, **{k: v for _, b in shown for k, v in b.json.items()},
                "definitions": {s.key: s.text for s, _ in shown},
                "figures": figure_files, "tables": tables_json,
            })
            (tmp / "metrics.json").write_text(json.dumps(metrics_json, indent=1, allow_nan=False))
            (tmp / "report.md").write_text("\n".join(page.md))
            (tmp / "report.html").write_text(page.html())
    except BaseException:
        plt.close("all")
        raise
    return metrics_json


def build_report(run_dirs: Sequence[str | Path], out_dir: str | Path | None = None,
           progress: Callable[[str], None] | None = None, gpu_hour_usd: float | None = None) -> dict:
    """Load runs and write their report (default: ``<run>/report`` for a single run)."""
    dirs = [Path(d) for d in run_dirs]
    if out_dir is None:
        out_dir = dirs[0] / "report"
    traces = load_runs(dirs)
    return write_report(traces, out_dir, progress, gpu_hour_usd=gpu_hour_usd)
