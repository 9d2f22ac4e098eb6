"""``gridbench run SWEEP``: a run as the command line shows it. The run itself is one call,
``orchestrator.run.run_sweep``; this module loads the sweep, prints the dry run's tables, the live
progress (``RichReporter``) and what the run did (``show_result``).

Ray, litellm and the driver are imported inside the command, so ``gridbench --help`` and the
other commands stay fast.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console, JustifyMethod
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from app.commands.compact import compacting
from app.progress import building_twins
from app.sealed import sealed_line
from env.errors import BadInput
from orchestrator.reporter import Reporter

if TYPE_CHECKING:
    from env import Maze
    from orchestrator.driver import RunOutcome
    from orchestrator.estimate import ModelEstimate
    from orchestrator.run import RunResult
    from orchestrator.sweep import EpisodeSpec, ModelEntry, Sweep
    from orchestrator.sweep_variants import LeftOut
    from traces import EpisodeRecord, RunStore


def _fmt_tokens(n: float) -> str:
    for unit, size in (("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(int(n))


CLASS_CHARS = 24  # of an error's class on the progress line (the line above the bars gives it whole)


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def error_cause(arm: str, error_class: str | None, message: str | None) -> str:
    """An episode's error in one line: the first line of its message (less the arm's name, which
    the line it goes into gives), led by its class when the message does not name it."""
    first = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    first = first.removeprefix(f"{arm}: ")
    if not first:
        return error_class or "error"
    return first if error_class is None or first.startswith(error_class) else f"{error_class}: {first}"


def _usd(entry: ModelEntry | None, cost: float) -> str:
    """What a model's calls cost, as the run recorded it: ``unknown`` when no price was known to
    record (no ``price``, and litellm's table had none, or the openai client, which has no table),
    ``self-hosted`` for a served model without a price, never a $0.00 that was not paid."""
    known = (entry is None or entry.builtin or entry.config.price is not None
             or (entry.config.client == "litellm" and cost > 0))  # litellm's price table knew the model
    if not known:
        return "self-hosted" if entry is not None and entry.serve is not None else "unknown"
    return f"{cost:.4f}" if 0 < cost < 0.01 else f"{cost:.2f}"  # a few calls of a cheap model are not $0.00


def batch_news(arm: str, before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What a batch arm's rounds did since ``before`` that no answer shows: requests sent again
    because their batch expired or was cancelled before running them, and batches that failed as
    a whole (``orchestrator.batching.BatchBroker.progress``). Neither is an answer of the model."""
    lines = []
    again = int(now.get("again", 0)) - int(before.get("again", 0))
    if again > 0:
        lines.append(f"batch {arm}: {again} request{'s' if again > 1 else ''} went unprocessed (the batch expired "
                     "or was cancelled) and go again in the next round")
    failed = int(now.get("failed", 0)) - int(before.get("failed", 0))
    if failed > 0:
        lines.append(f"batch {arm}: {failed} batch{'es' if failed > 1 else ''} failed as a whole "
                     f"({now.get('last_failure') or 'no reason given'}): its requests get the error a synchronous "
                     "call would, retried where that error is retryable")
    return lines


class RichReporter(Reporter):
    """Live progress on stderr: per model done/total, solves, errors, tokens, spent (against the
    budget, when there is one), concurrency, elapsed time and ETA."""

    def __init__(self, console: Console):
        self.console = console
        self.progress = Progress(
            TextColumn("{task.description:<14}"),
            BarColumn(bar_width=20),
            MofNCompleteColumn(),
            # an arm whose episodes end in error says why at once, not only in the Parquet: the
            # class of its first error here, the whole first line above the bars
            TextColumn("solved {task.fields[solved]:>4}  errors {task.fields[errors]:>3}{task.fields[cause]}  "
                       "tokens {task.fields[tokens]:>7}  {task.fields[spent]:>15}  {task.fields[conc]:>7}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=False,
            refresh_per_second=4,
        )
        self.tasks: dict[str, TaskID] = {}
        self.totals: dict[str, dict[str, float]] = {}
        self.ledger: dict[str, dict[str, float | None]] = {}
        self.first_error: dict[str, str] = {}  # per arm: the cause of its first episode in error
        self.batch_seen: dict[str, dict[str, Any]] = {}  # per batch arm: its progress last shown
        self.entries: dict[str, ModelEntry] = {}

    def _spent(self, name: str, spent: float) -> str:
        shown = _usd(self.entries.get(name), spent)
        return f"${shown}" if shown[0].isdigit() else f"spent {shown}"

    def start(self, sweep: Sweep, planned: dict[str, int], done: dict[str, int]) -> None:
        self.entries = {m.name: m for m in sweep.models}
        names = list(planned)
        if len(names) > 1:
            names.append("all")
        for name in names:
            total = sum(planned.values()) if name == "all" else planned[name]
            already = sum(done.values()) if name == "all" else done.get(name, 0)
            self.totals[name] = {"solved": 0, "errors": 0, "tokens": 0, "cost": 0.0}
            self.tasks[name] = self.progress.add_task(
                name, total=total, completed=already, solved=0, errors=0, tokens="0", spent="$0.00", conc="",
                cause="",
            )
        self.progress.start()

    def episode_done(self, episode: EpisodeRecord) -> None:
        arm = episode.identity.model_name
        if episode.termination == "error" and arm not in self.first_error and arm in self.tasks:
            self.first_error[arm] = error_cause(arm, episode.error_class, episode.error_message)
            self.progress.update(self.tasks[arm], cause=f" ({_shorten(episode.error_class or 'error', CLASS_CHARS)})")
            self.progress.console.print(Text.assemble(("first error", "red"), f" of {arm}: {self.first_error[arm]}"),
                                        soft_wrap=True)
        for name in (arm, "all"):
            if name not in self.tasks:
                continue
            t = self.totals[name]
            t["solved"] += bool(episode.solved)
            t["errors"] += episode.termination == "error"
            t["tokens"] += episode.usage.tokens_in + episode.usage.tokens_out
            t["cost"] += episode.usage.cost_usd
            self.progress.update(self.tasks[name], advance=1, solved=int(t["solved"]), errors=int(t["errors"]),
                                 tokens=_fmt_tokens(t["tokens"]))
            if not self.ledger:
                self.progress.update(self.tasks[name], spent=self._spent(name, t["cost"]))

    def spending(self, ledger: dict[str, dict[str, float | None]], concurrency: dict[str, int]) -> None:
        self.ledger = ledger
        for name, task in self.tasks.items():
            if name == "all":
                spent, limit = sum(float(v["spent"] or 0.0) for v in ledger.values()), self.run_limit
            else:
                spent, limit = float((ledger.get(name) or {}).get("spent") or 0.0), (ledger.get(name) or {}).get("limit")
            self.progress.update(task, spent=self._spent(name, spent) + (f"/${limit:.2f}" if limit else ""),
                                 conc=f"conc {concurrency[name]}" if name in concurrency else "")

    def batches(self, progress: dict[str, dict[str, Any]]) -> None:
        for name, p in progress.items():
            if name in self.tasks:
                flight = ", ".join(f"{b[-8:]} {age:.0f}s" for b, age in p["in_flight"].items()) or "none in flight"
                self.progress.update(self.tasks[name], conc=f"round {p['rounds']}: {flight}")
            for line in batch_news(name, self.batch_seen.get(name, {}), p):
                self.progress.console.print(Text(line, style="yellow"), soft_wrap=True)
            self.batch_seen[name] = p

    def suspended(self, spec: EpisodeSpec, steps: int) -> None:
        self.progress.console.print(
            f"[yellow]budget reached[/]: {spec.model.name} on {spec.maze.id} stopped after step {steps}, resumable")

    run_limit: float | None = None

    def stopping(self, in_flight: int, grace_s: float) -> None:
        self.progress.console.print(
            f"[yellow]stopping[/]: nothing more starts; the {in_flight} episodes running get up to {grace_s:.0f} s "
            "to finish their turn (Ctrl-C again: stop at once, and their calls in flight are asked again on resume)")

    def retrying(self, spec: EpisodeSpec, attempts: int, reason: str) -> None:
        self.progress.console.print(
            f"[yellow]retrying[/] {spec.model.name} on {spec.maze.id} ({reason}; attempt {attempts + 1})"
        )

    def finish(self) -> None:
        self.progress.stop()


def _matrix_table(sweep: Sweep, todo_ids: set[str]) -> Table:
    """Episodes per condition (rows) and model (columns), with what is left to run."""
    specs = sweep.episodes()
    table = Table(title=f"{sweep.name}: {len(sweep.all_mazes)} mazes, {len(sweep.models)} models, "
                        f"{len(sweep.conditions)} conditions, {sweep.repeats} repeats")
    table.add_column("condition")
    table.add_column("changes")
    for m in sweep.models:
        table.add_column(m.name, justify="right")
    table.add_column("total", justify="right")
    table.add_column("to run", justify="right")
    for c in sweep.conditions:
        mine = [s for s in specs if s.condition.name == c.name]
        changed = f"{c.changed}: {getattr(c.protocol, c.changed)}" if c.changed else ""
        if c.models:
            changed = "; ".join([*filter(None, [changed]), *(
                f"{name}: " + ", ".join(f"{k} {v}" for k, v in fields.items()) for name, fields in c.models.items())])
        counts = [str(sum(1 for s in mine if s.model.name == m.name)) for m in sweep.models]
        table.add_row(c.name, changed, *counts, str(len(mine)), str(sum(1 for s in mine if s.episode_id in todo_ids)))
    table.add_row("all", "", *[str(sum(1 for s in specs if s.model.name == m.name)) for m in sweep.models],
                  str(len(specs)), str(len(todo_ids)), style="bold")
    return table


def _left_out_lines(left_out: Sequence[LeftOut]) -> list[str]:
    """One line per twin left out, or, for a kind and reason shared by several, one line that
    counts them and names the first few (``--dry-run --json`` and the manifest list them all)."""
    groups: dict[tuple[str, str], list[LeftOut]] = {}
    for left in left_out:
        groups.setdefault((left.name, left.reason), []).append(left)
    lines = []
    for (name, reason), group in groups.items():
        if len(group) == 1:
            lines.append(group[0].line())
            continue
        first = ", ".join(v.source for v in group[:3])
        more = f" and {len(group) - 3} more" if len(group) > 3 else ""
        lines.append(f"{len(group)} {name} twins left out: {reason} ({first}{more})")
    return lines


def _shown_already_lines(s: Sweep) -> list[str]:
    """One line per projection and arm that does not run its projection twins: the arm's own
    protocol already shows the mazes that way (docs/variants.md#projection-twins)."""
    from env.variants import record_of

    groups: dict[tuple[str, str, str], list[str]] = {}
    for twin, model, condition in s.shown_already():
        record = record_of(twin) or {}
        groups.setdefault((str(record.get("name")), model, condition), []).append(str(record.get("twin_of")))
    lines = []
    for (name, model, condition), sources in groups.items():
        first = ", ".join(sources[:3]) + (f" and {len(sources) - 3} more" if len(sources) > 3 else "")
        lines.append(f"{len(sources)} {name} twins not run by {model} in condition {condition!r}: it already shows "
                     f"its mazes that way, so the originals' episodes are theirs ({first})")
    return lines


def _variant_counts(s: Sweep) -> dict[str, dict[str, int]]:
    """Per kind of twin (``original`` first): the mazes run, those left out, and the episodes."""
    from env.variants import KINDS, ORIGINAL, record_of

    def kind(maze: Maze) -> str:
        record = record_of(maze)
        return record["kind"] if record else ORIGINAL

    out: dict[str, dict[str, int]] = {}

    def count(k: str, what: str) -> None:
        out.setdefault(k, {"mazes": 0, "left_out": 0, "episodes": 0})[what] += 1

    for maze in s.all_mazes:
        count(kind(maze), "mazes")
    for left in s.left_out:
        count(left.kind, "left_out")
    for e in s.episodes():
        count(kind(e.maze), "episodes")
    return {k: out[k] for k in sorted(out, key=lambda k: (k != ORIGINAL, KINDS.index(k) if k in KINDS else 99))}


def _discovery_balance(s: Sweep) -> dict[str, dict[str, int]]:
    """Mazes per mechanism kind and path band of a sweep on discovery-set mazes (their
    ``meta.discovery``), twins not counted; empty when the sweep has none."""
    from env.variants import record_of

    balance: dict[str, dict[str, int]] = {}
    for maze in s.all_mazes:
        label = ((maze.meta.model_extra or {}) if maze.meta else {}).get("discovery")
        if isinstance(label, dict) and record_of(maze) is None:
            row = balance.setdefault(str(label.get("kind")), {})
            row[str(label.get("band"))] = row.get(str(label.get("band")), 0) + 1
    return balance


def _discovery_table(balance: dict[str, dict[str, int]]) -> Table:
    bands = list(dict.fromkeys(b for row in balance.values() for b in row))
    table = Table(title="the set's balance: mazes per mechanism kind and path band")
    table.add_column("kind")
    for b in bands:
        table.add_column(b, justify="right")
    table.add_column("all", justify="right")
    for kind, row in balance.items():
        table.add_row(kind, *[str(row.get(b, 0)) for b in bands], str(sum(row.values())))
    table.add_row("all", *[str(sum(row.get(b, 0) for row in balance.values())) for b in bands],
                  str(sum(sum(row.values()) for row in balance.values())), style="bold")
    return table


def _variant_table(s: Sweep) -> Table:
    table = Table(title=f"each maze and its twins ({len(s.left_out)} left out: on stderr)")
    for col in ("kind", "mazes", "left out", "episodes"):
        table.add_column(col, justify="left" if col == "kind" else "right")
    for k, n in _variant_counts(s).items():
        table.add_row(k, str(n["mazes"]), str(n["left_out"]), str(n["episodes"]))
    return table


def _summary_table(outcome: RunOutcome, sweep: Sweep) -> Table:
    """Per arm and condition: the run's numbers, progress as the report reads it (the study's
    unclipped ``1 - d_end / d_start``, docs/report.md), a built-in agent's rows marked as the
    reference they are. No row pools the arms: the report does that, models apart from references."""
    from analysis.load import study_progress
    from traces import ERROR

    df = outcome.episodes
    table = Table(title=f"{outcome.run_dir}  ({outcome.ran} run now, {outcome.skipped} already complete)")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("model", "left"), ("condition", "left"), ("episodes", "right"), ("solved", "right"), ("errors", "right"),
        ("progress", "right"), ("steps", "right"), ("tokens in/out", "right"), ("cost $", "right"))
    for col, justify in columns:
        table.add_column(col, justify=justify)
    if df is None or not len(df):
        return table
    order_m = {m.name: i for i, m in enumerate(sweep.models)}
    entries = {m.name: m for m in sweep.models}
    order_c = {c.name: i for i, c in enumerate(sweep.conditions)}
    groups = sorted(df.groupby(["model_name", "condition"], sort=False),
                    key=lambda kv: (order_m.get(kv[0][0], 99), order_c.get(kv[0][1], 99)))
    for (model, cond), g in groups:
        ok = g[g["termination"] != ERROR]
        progress = study_progress(ok["d_start_action"], ok["d_end_action"], ok["solved"].fillna(False))
        entry = entries.get(model)
        table.add_row(
            f"{model} (reference)" if entry is not None and entry.builtin else model,
            cond, str(len(g)), str(int(g["solved"].sum())), str(int((g["termination"] == ERROR).sum())),
            f"{progress.mean():.3f}" if len(ok) else "-",
            f"{ok['steps'].mean():.1f}" if len(ok) else "-",
            f"{_fmt_tokens(g['tokens_in'].sum())}/{_fmt_tokens(g['tokens_out'].sum())}",
            _usd(entries.get(model), float(g["cost_usd"].sum())),
        )
    return table


def _bundled_lines(sweep: Sweep) -> list[str]:
    """What an arm served from the bundled model is for, said beside its numbers."""
    from orchestrator.serving.bundled import BUNDLED_TITLE, is_bundled

    return [f"{m.name} is the bundled {BUNDLED_TITLE}, served on the CPU: "
            "it is here to show that the whole pipeline runs (a served model, its requests, parsing, traces, "
            "the report), not to rank; its scores say nothing of what a capable model does"
            for m in sweep.models if m.serve is not None and is_bundled(m.serve.model)]


def _error_lines(outcome: RunOutcome, sweep: Sweep) -> list[str]:
    """Per arm with episodes in error: how many, and the cause of the first (by when it ended)."""
    from traces import ERROR

    df = outcome.episodes
    if df is None or not len(df):
        return []
    errors = df[df["termination"] == ERROR]
    lines = []
    for m in sweep.models:
        mine = errors[errors["model_name"] == m.name]
        if len(mine):
            first = mine.sort_values("finished_at").iloc[0]
            lines.append(f"{m.name}: {len(mine)} episode{'s' if len(mine) > 1 else ''} ended in error; the first: "
                         f"{error_cause(m.name, first['error_class'], first['error_message'])}")
    return lines


def _estimate_table(rows: list[ModelEstimate], max_cost: float | None) -> Table:
    """What the episodes still to run will cost: an upper bound, a typical figure and its source."""
    table = Table(title="cost of the episodes to run (upper bound: every call at the step cap and its output cap; "
                        "typical: see `typical from`)")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("model", "left"), ("episodes", "right"), ("calls <=", "right"), ("calls ~", "right"),
        ("prompt tokens (1st turn)", "right"), ("output cap", "right"), ("output ~/call", "right"),
        ("upper bound", "right"), ("typical", "right"), ("tier", "left"), ("typical at standard", "right"),
        ("typical from", "left"), ("price", "left"))
    for col, justify in columns:  # folded, never cut short: a figure or a source must be read whole
        table.add_column(col, justify=justify, overflow="fold")

    def usd(v: float | None) -> str:
        return "unknown" if v is None else f"${v:,.2f}"

    def gpu_hours(v: float | None) -> str:
        return "unknown" if v is None else f"{v:,.1f} GPU-h"

    for e in rows:
        self_hosted = e.gpus is not None and e.cost_max is None
        figures = ((gpu_hours(e.gpu_hours_max), gpu_hours(e.gpu_hours_typical)) if self_hosted
                   else (usd(e.cost_max), usd(e.cost_typical)))
        table.add_row(e.name, str(e.episodes), f"{e.calls_max:,}", f"{e.calls_typical:,.0f}",
                      f"{e.mean_prompt_tokens:,.0f}" if e.calls_max else "",
                      (f"{e.output_cap_min:,}-{e.output_cap:,}" if e.output_cap_min and e.output_cap_min != e.output_cap
                       else f"{e.output_cap:,}") if e.output_cap else "",
                      f"{e.output_typical:,.0f}" if e.output_typical is not None else "",
                      *figures, e.tier if e.calls_max else "",
                      usd(e.cost_typical_standard) if e.tier != "standard" and not self_hosted else "",
                      e.typical_source, e.price_source)
    priced = [e for e in rows if not (e.gpus is not None and e.cost_max is None)]
    costs_max = [e.cost_max for e in priced]
    costs_typ = [e.cost_typical for e in priced]
    total_max = None if None in costs_max else sum(c for c in costs_max if c is not None)
    total_typ = None if None in costs_typ else sum(c for c in costs_typ if c is not None)
    standard = [e.cost_typical_standard for e in priced]
    total_std = None if None in standard else sum(c for c in standard if c is not None)
    table.add_row("all", str(sum(e.episodes for e in rows)), f"{sum(e.calls_max for e in rows):,}",
                  f"{sum(e.calls_typical for e in rows):,.0f}", "", "", "", usd(total_max), usd(total_typ), "",
                  usd(total_std) if any(e.tier != "standard" for e in priced) else "",
                  "USD of the models with a price" if len(priced) < len(rows) else "",
                  f"--max-cost {max_cost:,.2f}" if max_cost else "", style="bold")
    return table


def _server_commands(sweep: Sweep) -> list[dict[str, object]]:
    """Each served model's exact server command line, as one replica would start it, and the
    weights it serves (a bundled model's pinned checksum; a file's when it is on this machine)."""
    import shlex

    from agents.model import request_name
    from orchestrator.serving.command_lines import llama_cpp_command, llama_cpp_weights, vllm_command
    from orchestrator.serving.spec import NODE_IP, Weights

    out: list[dict[str, object]] = []
    for m in sweep.models:
        if m.serve is None:
            continue
        spec = sweep.serve_spec(m)
        host = "<node-ip>" if spec.host == NODE_IP else spec.host
        if spec.engine == "vllm":
            argv = vllm_command(m.model, spec, host=host, port=spec.port_range[0])
            weights, gpus = Weights(request_name(m.model)), spec.tensor_parallel_size
        else:
            path, weights, chat_format = llama_cpp_weights(spec, start=False)
            argv = llama_cpp_command(m.model, spec, model_path=path, host=host, port=spec.port_range[0],
                                     chat_format=chat_format)
            gpus = 0
        out.append({"model": m.name, "engine": spec.engine, "replicas": spec.replicas, "gpus_per_replica": gpus,
                    "port": f"the first free port of {spec.port_range[0]}-{spec.port_range[1]}",
                    "weights": weights.to_dict(), "argv": argv, "command": shlex.join(argv)})
    return out


def _request_fields(sweep: Sweep) -> list[dict[str, object]]:
    """Per called arm (model x condition): the fields its every request carries besides the model
    and the messages, as the provider family writes them with the entry's params laid over, and
    the image detail written into each image part."""
    from agents.providers import merge_fields
    from orchestrator.sweep import model_conditions

    out: list[dict[str, object]] = []
    for m in sweep.models:
        if not m.called:
            continue
        for c in model_conditions(m, sweep.conditions):
            fields, _ = m.config.family.request_fields(c.protocol, c.protocol.seed)
            fields.update(m.config.tier_facts.request_fields)
            merge_fields(fields, m.config.request_params)
            out.append({"model": m.name, "model_string": m.model, "family": m.config.family.name,
                        "condition": c.name, "fields": fields, "image_detail": m.config.image_detail})
    return out


def _spending_table(outcome: RunOutcome, sweep: Sweep, max_cost: float | None) -> Table:
    """Per model: spent against its budget, and how its concurrency moved (rate limits)."""
    table = Table(title="spending and concurrency")
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("model", "left"), ("spent $", "right"), ("budget $", "right"), ("concurrency", "left"))
    for col, justify in columns:
        table.add_column(col, justify=justify)
    for m in sweep.models:
        entry = outcome.ledger.get(m.name) or {}
        history = outcome.concurrency.get(m.name) or []
        moves = " -> ".join(str(limit) for _, limit, _ in history) if len(history) > 1 else \
            (str(history[0][1]) if history else "")
        table.add_row(m.name, _usd(m, float(entry.get("spent") or 0.0)),
                      f"{entry['limit']:.2f}" if entry.get("limit") else "", moves)
    total = sum(float(v.get("spent") or 0.0) for v in outcome.ledger.values())
    unpriced = _unpriced(outcome, sweep)
    table.add_row("all", f"{total:.2f}" + (" + unknown" if unpriced else ""), f"{max_cost:.2f}" if max_cost else "",
                  "", style="bold")
    return table


def _unpriced(outcome: RunOutcome, sweep: Sweep) -> list[str]:
    """The called models whose cost the run could not record (no price known)."""
    spent = {m.name: float((outcome.ledger.get(m.name) or {}).get("spent") or 0.0) for m in sweep.models}
    if outcome.episodes is not None and len(outcome.episodes):
        spent.update(outcome.episodes.groupby("model_name")["cost_usd"].sum().astype(float).to_dict())
    return [m.name for m in sweep.models if _usd(m, spent.get(m.name, 0.0)) == "unknown"]


def _command_line(sweep: str, model: list[str] | None, mazes: str | None, out: str, name: str | None,
                  address: str | None, retry_errors: bool, max_cost: float | None = None,
                  preflight: bool = True, over_balance: bool = False) -> list[str]:
    """The invocation as the manifest records it: rebuilt from the options, never from raw argv."""
    cmd = ["gridbench", "run", sweep, *(a for m in model or [] for a in ("--model", m))]
    for flag, value in (("--mazes", mazes), ("--out", out), ("--name", name), ("--address", address),
                        ("--max-cost", None if max_cost is None else str(max_cost))):
        if value is not None:
            cmd += [flag, value]
    cmd += ["--retry-errors"] if retry_errors else []
    cmd += ["--over-balance"] if over_balance else []
    return cmd if preflight else [*cmd, "--no-preflight"]


def run_command(
    sweep: str = typer.Argument(..., help="a sweep file, or the name of a shipped sweep (main, ablation, attribution, quickstart, ...)"),
    model: list[str] = typer.Option(None, "--model", help="run only these models (name or model string); repeatable"),
    mazes: str | None = typer.Option(None, "--mazes", help="replace the sweep's mazes: a named set, a folder or a maze id"),
    out: str = typer.Option("results", "--out", help="where runs are kept: a folder, or s3://BUCKET/PREFIX or "
                                                     "gs://BUCKET/PREFIX (credentials from the environment)"),
    name: str | None = typer.Option(None, "--name", help="run name (default: the sweep's name); rerun to resume"),
    address: str | None = typer.Option(None, "--address", help="Ray cluster address (default: an embedded local Ray)"),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="also rerun episodes that ended in error"),
    max_cost: float | None = typer.Option(None, "--max-cost", help="USD the whole run may spend (finished and "
                                          "journaled steps); rerun with a higher value to continue"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the matrix, its cost estimate and the model "
                                 "servers' command lines, and exit"),
    json_out: bool = typer.Option(False, "--json", help="with --dry-run: print the estimate and the server command "
                                  "lines as one JSON document"),
    preflight: bool = typer.Option(True, "--preflight/--no-preflight", help="before the first episode, check each "
                                   "called arm's endpoint, key and model by its free model listing, and each served "
                                   "arm's servers once up (exit 2 naming the arm when one cannot run); where the "
                                   "provider tells an account's balance, hold the run's upper bound there against it"),
    over_balance: bool = typer.Option(False, "--over-balance", help="run even where the run's upper bound on an "
                                      "account is above the balance its provider reports (the preflight says so "
                                      "and goes on)"),
) -> None:
    """Run a sweep: every maze x model x condition x repeat, resumable, traces as Parquet."""
    from orchestrator.sweep import load_sweep
    from traces import open_store

    if json_out and not dry_run:
        raise BadInput("--json", "", "goes with --dry-run")
    s = load_sweep(sweep, mazes=mazes, models=model, run_name=name, max_cost=max_cost)
    store = open_store(out, "--out").child(s.run_name)
    store.check_location()  # before any server or actor starts
    with building_twins() as progress:
        s.build_twins(progress)
    for line in [*_left_out_lines(s.left_out), *_shown_already_lines(s)]:
        # a twin the sweep names and does not run is said, never dropped silently
        Console(stderr=True).print(f"[yellow]note[/]: {line}", highlight=False, soft_wrap=True)
    # piped output keeps whole rows instead of rich's 80-column fallback
    stdout = Console() if sys.stdout.isatty() else Console(width=200)
    if dry_run:
        _dry_run(s, store, retry_errors, json_out, stdout, open_store(out, "--out"))
        return
    command = _command_line(sweep, model, mazes, out, name, address, retry_errors, max_cost, preflight, over_balance)
    try:
        result = execute(s, store, command, address=address, retry_errors=retry_errors, preflight=preflight,
                         over_balance=over_balance)
        show_result(s, store, result, stdout, command)
    except KeyboardInterrupt:
        # Ctrl-C while Ray or the model servers start, or while the run is compacted: every file
        # written is whole (compaction is safe to stop), and the same command goes on from there
        import shlex

        print(f"resume with the same command: {shlex.join(command)}", file=sys.stderr)
        raise
    if result.outcome.exit_code:
        raise typer.Exit(result.outcome.exit_code)


def _dry_run(s: Sweep, store: RunStore, retry_errors: bool, json_out: bool, stdout: Console,
            root: RunStore | None = None) -> None:
    """The matrix, its cost estimate and the model servers' command lines, as tables or JSON.
    ``root``: where runs are kept, and the sweep's calibration (``gridbench calibrate``) with them."""
    from orchestrator.calibration import load, typical_for
    from orchestrator.estimate import estimate, observed, prior_notes
    from traces import completed_ids

    calibration = load(root, s.name) if root is not None else None  # a broken one is bad input, said first
    calibrated = typical_for(calibration, s) if calibration is not None else {}
    notes = [f"{m.name}'s key variable {m.config.api_key_env} is not set; a run would refuse to start"
             for m in s.models if m.config.api_key_env and not os.environ.get(m.config.api_key_env)]
    for note in notes:
        Console(stderr=True).print(f"[yellow]note[/]: {note}")
    done = completed_ids(store, include_errors=not retry_errors)
    todo = {e.episode_id for e in s.episodes() if e.episode_id not in done}
    from app.progress import ProgressBar

    with ProgressBar("estimating the cost") as bar:
        rows = estimate([e for e in s.episodes() if e.episode_id in todo], observed(store), bar.update, calibrated)
    servers = _server_commands(s)
    requests = _request_fields(s)
    assumptions = prior_notes(rows)
    if calibration is not None and any(e.typical_source.startswith("calibration") for e in rows):
        assumptions.insert(0, calibration.note())
    balance = _discovery_balance(s)
    if json_out:
        print(json.dumps({
            "sweep": s.name, "run": store.display(), "episodes": len(s.episodes()), "to_run": len(todo),
            "estimate": [e.to_dict() for e in rows], "assumptions": assumptions, "servers": servers,
            "requests": requests, "mazes": [m.id for m in s.mazes], "notes": notes,
            **({"balance": balance} if balance else {}),
            **({"variants": {"kinds": _variant_counts(s), "left_out": [v.to_dict() for v in s.left_out]}}
               if s.variants else {}),
        }, indent=2))
        return
    stdout.print(_matrix_table(s, todo))
    stdout.print(f"mazes ({len(s.mazes)}): {', '.join(m.id for m in s.mazes)}", markup=False, highlight=False,
                 soft_wrap=True)
    for r in requests:  # seed: the condition's base seed; each repeat adds its index
        detail = f"; every image part: detail {r['image_detail']}" if r["image_detail"] else ""
        if "seed" in r["fields"]:  # type: ignore[operator]
            detail += "; seed: the base, each call sending its own drawn from it (docs/protocol.md)"
        stdout.print(f"{r['model']} ({r['model_string']}, family {r['family']}) in {r['condition']}: every request "
                     f"carries {json.dumps(r['fields'], sort_keys=True)}{detail}",
                     markup=False, highlight=False, soft_wrap=True)
    if balance:
        stdout.print(_discovery_table(balance))
    if s.variants:
        stdout.print(_variant_table(s))
    stdout.print(_estimate_table(rows, s.max_cost))
    for line in assumptions:
        stdout.print(line, markup=False, highlight=False)
    for server in servers:
        where = f"of {server['gpus_per_replica']} GPU(s)" if server["gpus_per_replica"] else "on CPU"
        weights = server["weights"]
        assert isinstance(weights, dict)
        served = weights["name"] + (f" (sha256 {weights['sha256']})" if weights["sha256"] else "")
        stdout.print(f"{server['model']}: {server['replicas']} replica(s) {where} serving {served}, "
                     f"each (port: {server['port']}):", markup=False, highlight=False, soft_wrap=True)
        stdout.print(str(server["command"]), markup=False, highlight=False, soft_wrap=True)
    stdout.print(f"run folder: {store.display()}")
    if s.sealed:
        stdout.print(sealed_line(s.sealed), markup=False, highlight=False, soft_wrap=True)


def execute(s: Sweep, store: RunStore, command: list[str], *, address: str | None = None,
            retry_errors: bool = False, preflight: bool = True, arms_checked: bool = False,
            over_balance: bool = False) -> RunResult:
    """``orchestrator.run.run_sweep`` with this command's progress: its lines and the live
    display on stderr, a bar while it compacts. A model server that does not start is one line
    (its log's tail) and exit code 1."""
    from orchestrator.run import run_sweep
    from orchestrator.serving.actor import ServerStartError

    stderr = Console(stderr=True)
    # piped progress keeps whole rows too
    reporter = RichReporter(stderr if sys.stderr.isatty() else Console(stderr=True, width=160))
    reporter.run_limit = s.max_cost

    def say(line: str) -> None:
        stderr.print(line, markup=False, highlight=False, soft_wrap=True)

    try:
        with compacting(stderr) as progress:
            return run_sweep(s, store, address=address, retry_errors=retry_errors, command=command,
                             preflight=preflight, reporter=reporter, say=say, compact_progress=progress,
                             arms_checked=arms_checked, over_balance=over_balance)
    except ServerStartError as err:
        # not bad input: the server's own log tail says what went wrong
        print(f"gridbench: a model server did not start: {err}", file=sys.stderr)
        raise typer.Exit(1) from None


def _stopped_lines(outcome: RunOutcome, command: list[str], calls_models: bool) -> list[str]:
    """What an interrupted run says: what is done and left, what a resume repays (when the sweep
    calls a model), and the command that resumes it."""
    import shlex

    stop = outcome.stop
    assert stop is not None
    paid = ("every model call in flight was answered and journaled: resuming repays none" if stop.graceful else
            "the model calls still in flight when it stopped are asked again on resume")
    return [f"interrupted: {stop.done} of {outcome.planned} episodes done, {stop.in_progress} in progress (their "
            f"steps are journaled and go on from there), {stop.not_started} not started"
            + (f"; {paid}" if calls_models else ""),
            f"resume with the same command: {shlex.join(command)}"]


def show_result(s: Sweep, store: RunStore, result: RunResult, stdout: Console, command: list[str]) -> None:
    """What a run did: how it was compacted (its per-episode files, needed while it ran, packed
    into a few large ones), its summary, its spending and what a budget left unfinished; an
    interrupted run (not compacted: its rerun will be) says what is left and how to resume."""
    from app.commands.compact import summary_line

    stderr = Console(stderr=True)
    outcome = result.outcome
    if result.compaction is not None:
        stderr.print(summary_line(store, result.compaction))
    if outcome.stop is None or (outcome.episodes is not None and len(outcome.episodes)):
        stdout.print(_summary_table(outcome, s))
    for line in _bundled_lines(s):
        stdout.print(line, markup=False, highlight=False, soft_wrap=True)
    for line in _error_lines(outcome, s):
        stdout.print(line, markup=False, highlight=False, soft_wrap=True)
    if s.max_cost is not None or any(not m.builtin for m in s.models):
        stdout.print(_spending_table(outcome, s, s.max_cost))
    unpriced = _unpriced(outcome, s)
    if unpriced:
        stdout.print(f"cost unknown for {', '.join(unpriced)}: no price is known for "
                     f"{'it' if len(unpriced) == 1 else 'them'}; give the model entry a price (USD per token: "
                     "price: {input: ..., output: ...}) to record what its calls cost", markup=False, highlight=False)
    run_dir = store.display()
    stdout.print(f"{outcome.planned} episodes in the matrix, {outcome.errors} ended in error; "
                 f"{result.seconds:.1f} s. Traces: {run_dir}/episodes, {run_dir}/steps")
    if s.sealed:
        stdout.print(sealed_line(s.sealed), markup=False, highlight=False, soft_wrap=True)
    if outcome.stop is not None:
        for line in _stopped_lines(outcome, command, any(not m.builtin for m in s.models)):
            stderr.print(line, markup=False, highlight=False, soft_wrap=True)
    elif outcome.unfinished:
        stdout.print(f"budget reached: {outcome.suspended} episodes stopped mid-way (their steps are kept) and "
                     f"{outcome.not_started} never started; rerun with a higher --max-cost or max_cost to finish them")


def register(app: typer.Typer) -> None:
    app.command("run")(run_command)
