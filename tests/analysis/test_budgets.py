"""Budgets per arm: what each arm's requests allowed, and the warning when arms got different ones.

Steps carry ``thinking``, ``thinking_budget``, ``reasoning_effort`` and ``max_output_tokens``; runs
written before those were recorded lack them, and they read as null.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tracefab import play, write_run

import env
from analysis import compute
from analysis.load import BUDGET_COLUMNS, load_runs
from analysis.report import write_report
from analysis.steps import annotate
from traces._schema import STEPS

WALK = ["forward", "right", "forward", "left", "forward"]


def _run(tmp_path, budgets: dict[str, dict | None], name="run"):
    maze = env.resolve_maze("example")
    rows, steps = [], []
    for model, budget in budgets.items():
        row, st = play(maze, WALK, model_name=model, budget=budget, reasoning_tokens=[5, 6, 7, 8, 9])
        rows.append(row)
        steps += st
    return load_runs([write_run(tmp_path / name, rows, steps)])


def _budgets(traces):
    return compute.budgets(traces, annotate(traces)).set_index("arm")


def test_budgets_per_arm_and_the_warnings(tmp_path):
    # the study's main arms as its run sent them: the same output cap, thinking controlled three ways
    traces = _run(tmp_path, {
        "claude": {"thinking": True, "reasoning_effort": "xhigh", "max_output_tokens": 64000},
        "kimi": {"thinking": True, "max_output_tokens": 64000},
        "qwen": {"thinking": True, "thinking_budget": 32000, "max_output_tokens": 32000},
        "old": None,
    })
    t = _budgets(traces)
    assert t.loc["qwen", "thinking_budget"] == "32000" and t.loc["qwen", "thinking_budget_steps"] == 5
    assert t.loc["claude", "reasoning_effort"] == "xhigh" and t.loc["claude", "thinking_budget"] == ""
    assert t.loc["kimi", "thinking"] == "on" and t.loc["kimi", "thinking_steps"] == 5
    assert t.loc["old", "max_output_tokens_steps"] == 0 and t.loc["old", "max_output_tokens"] == ""
    warnings = compute.budget_warnings(t.reset_index())
    assert len(warnings) == 2
    assert warnings[0] == (
        "the arms' thinking was controlled differently: claude thinking on, effort xhigh, no thinking budget; "
        "kimi thinking on, no effort level, no thinking budget; qwen thinking on, no effort level, a thinking "
        "budget of 32000. The study equalised the output cap only (64,000 tokens for every model), not how "
        "much each model thinks.")
    assert warnings[1] == "max_output_tokens differs between arms: claude 64000; kimi 64000; qwen 32000."
    # "old" recorded nothing: it is left out of both


def test_equal_budgets_and_unrecorded_budgets_warn_nothing(tmp_path):
    same = {"thinking": False, "thinking_budget": None, "reasoning_effort": "low", "max_output_tokens": 4096}
    t = _budgets(_run(tmp_path, {"a": same, "b": same}, "same"))
    assert compute.budget_warnings(t.reset_index()) == []
    t = _budgets(_run(tmp_path, {"a": None, "b": None}, "none"))
    assert compute.budget_warnings(t.reset_index()) == [] and (t["thinking_budget_steps"] == 0).all()


def test_runs_without_budget_columns_read_as_null(tmp_path):
    maze = env.resolve_maze("example")
    new_row, new_steps = play(maze, WALK, model_name="new", budget={"thinking_budget": 1024, "max_output_tokens": 9})
    old_row, old_steps = play(maze, WALK, model_name="old")
    run = write_run(tmp_path / "mixed", [new_row, old_row], new_steps + old_steps)
    # the old episode's steps file as runs wrote it before budgets were recorded
    old_file = run / "steps" / f"{old_row['episode_id']}.parquet"
    before = pa.schema([f for f in STEPS if f.name not in BUDGET_COLUMNS])
    plain = [{k: v for k, v in s.items() if k in before.names} for s in old_steps]
    pq.write_table(pa.Table.from_pylist(plain, schema=before), old_file)
    assert "thinking_budget" not in pq.read_schema(old_file).names
    steps = annotate(load_runs([run])).frame()
    by = steps.groupby("arm")
    assert by["thinking_budget"].apply(lambda s: s.isna().all()).to_dict() == {"new": False, "old": True}
    assert set(steps.loc[steps["arm"] == "new", "max_output_tokens"]) == {9}


@pytest.mark.slow
def test_report_warns_in_its_summary_when_budgets_differ(tmp_path):
    traces = _run(tmp_path, {"a": {"thinking_budget": 64000, "max_output_tokens": 70000},
                             "b": {"thinking_budget": 16000, "max_output_tokens": 70000}})
    metrics = write_report(traces, tmp_path / "report")
    assert metrics["headline"]["budget_warnings"] == [
        "the arms' thinking was controlled differently: a no thinking switch, no effort level, a thinking budget "
        "of 64000; b no thinking switch, no effort level, a thinking budget of 16000. The study equalised the "
        "output cap only (64,000 tokens for every model), not how much each model thinks."]
    md = (tmp_path / "report" / "report.md").read_text()
    summary = md.split("## ")[0]
    assert "Warning: the arms got different budgets" in summary and "a thinking budget of 16000" in summary
    html = (tmp_path / "report" / "report.html").read_text()
    assert "class='warn'" in html and "<strong>Warning: the arms got different budgets.</strong>" in html
    assert metrics["study_findings"]["budgets"]["values"]["differ"] is True
    assert json.loads((tmp_path / "report" / "metrics.json").read_text())["tables"]["budgets"][0]["arm"] == "a"
