"""The report keeps references (built-in agents) apart from the models, and tells an arm that never
gave a valid action (a broken pipeline) from one that acted badly (a weak model).

The runs: ``tracefab.quickstart_run``, shaped like the shipped quickstart (the three built-in
agents on eval mazes, a small language model on two hand-made mazes, every reply of it invalid
as first reported); the same with the model acting; and the built-in agents alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tracefab import QUICKSTART_EVAL, demo_run, play, quickstart_run, write_run

from analysis.load import ALL, load_runs
from analysis.report import build_report
from analysis.study import NO_MODELS
from env import resolve_mazes
from env.oracle import optimal_actions

REFERENCES = ["explorer", "oracle", "random"]
MODEL = "gemma-270m"


@pytest.fixture(scope="module")
def quickstart(tmp_path_factory) -> tuple[Path, dict]:
    run = quickstart_run(tmp_path_factory.mktemp("qs") / "quickstart")
    return run, build_report([run], run / "report")


def _table(metrics: dict, name: str) -> pd.DataFrame:
    return pd.DataFrame(metrics["tables"][name])


def test_the_headline_counts_the_model_and_names_the_references_apart(quickstart):
    run, metrics = quickstart
    h = metrics["headline"]
    eps = pd.read_parquet(run / "episodes")
    model = eps[eps["model_name"] == MODEL]
    assert h["episodes"] == len(model) == 2 and h["solves"] == 0 and h["mazes"] == 2
    assert h["mazes_solved_by_none"] == 2  # the references' solves are not the models'
    assert list(h["references"]) == REFERENCES and h["arms"] == [MODEL, *REFERENCES]
    loaded = load_runs([run]).episodes  # progress as the report reads it (the study's, unclipped)
    for arm, r in h["references"].items():
        mine = loaded[loaded["model_name"] == arm]
        assert r == {"episodes": len(mine), "mazes": len(QUICKSTART_EVAL), "solves": int(mine["solved"].sum()),
                     "mean_progress_action": pytest.approx(float(mine["progress_action"].mean()))}
    md = (run / "report" / "report.md").read_text()
    assert "2 episodes of the models" in md and "; 0 solved;" in md
    assert "References (built-in agents" in md and "oracle 5 of 5 solved" in md


def test_no_arm_is_pooled_with_a_reference_and_none_is_regressed_or_compared(quickstart):
    _, metrics = quickstart
    for name, rows in metrics["tables"].items():  # one model arm: nothing to pool
        assert ALL not in {r.get("arm") for r in rows}, name
    overview = _table(metrics, "overview").set_index("arm")
    assert overview["reference"].to_dict() == {MODEL: False, **{a: True for a in REFERENCES}}
    assert list(overview.index) == [MODEL, *REFERENCES]  # models first, the references after them
    assert set(_table(metrics, "bands")["arm"]) == {MODEL}
    assert set(_table(metrics, "difficulty_axes")["n"].loc[lambda n: n > 0]) <= {2}
    for f in metrics["study_findings"].values():
        assert not any(a in f["this_run"] for a in REFERENCES), f
        assert not set(f["values"]) & set(REFERENCES), f


def test_the_protocols_show_no_model_settings_for_a_reference_and_raise_no_warning(quickstart):
    run, metrics = quickstart
    assert metrics["headline"]["protocol_warnings"] == [] and metrics["headline"]["budget_warnings"] == []
    assert metrics["tables"]["comparison_flags"] == []
    p = _table(metrics, "protocols").set_index("arm")
    assert p.loc[MODEL, "max_output_tokens"] == 32 and p.loc[MODEL, "thinking"] is False
    assert p.loc[MODEL, "observation"] == "text"
    for arm in REFERENCES:
        for field in ("thinking", "effort", "thinking_budget", "max_output_tokens", "temperature", "prompt",
                      "observation"):
            assert pd.isna(p.loc[arm, field]), (arm, field)
        assert p.loc[arm, "step_cap_factor"] == 3 and p.loc[arm, "stall_window"] == 30
    assert "Warning: protocols differ" not in (run / "report" / "report.md").read_text()


def test_format_failures_and_decision_failures_per_arm(quickstart):
    run, metrics = quickstart
    steps = pd.read_parquet(run / "steps").sort_values(["episode_id", "step"])
    eps = pd.read_parquet(run / "episodes").set_index("episode_id")
    # the outcome of each step recomputed here: the distance before (the start's for step 1) and after
    before = steps.groupby("episode_id")["action_distance"].shift(1)
    before = before.fillna(steps["episode_id"].map(eps["d_start_action"]))
    after = steps["action_distance"]
    valid = steps["action"].notna()
    lost = valid & (after.isna() | (after > before))
    wasted = valid & (after == before)
    v = _table(metrics, "action_validity").set_index("arm")
    for arm in [MODEL, *REFERENCES]:
        mine = (steps["model_name"] == arm).to_numpy()
        row = v.loc[arm]
        assert row["steps"] == mine.sum() and row["valid_steps"] == (valid & mine).sum()
        assert row["format_failures"] == (~valid & mine).sum()
        assert row["lost_ground"] == (lost & mine).sum() and row["wasted_steps"] == (wasted & mine).sum()
        assert row["decision_failures"] == row["lost_ground"] + row["wasted_steps"]
    assert v.loc[MODEL, "format_failures"] == 45 and v.loc[MODEL, "format_failure_share"] == 1.0
    assert v.loc["oracle", "decision_failures"] == 0 and v.loc["random", "decision_failures"] > 0
    assert v.loc["random", "lost_ground"] > 0 and v.loc["random", "wasted_steps"] > 0
    assert metrics["headline"]["no_valid_action"] == [{"arm": MODEL, "steps": 45, "invalid_calls": 0}]
    md = (run / "report" / "report.md").read_text()
    first = md.split("\n- ")[0]  # the warnings stand before the summary's first line
    assert f"arm {MODEL} produced no valid action in 45 steps: check its pipeline" in first


def test_a_model_that_acts_is_not_flagged(tmp_path):
    run = quickstart_run(tmp_path / "acts", model_acts=True)
    metrics = build_report([run], run / "report")
    assert metrics["headline"]["no_valid_action"] == []
    v = _table(metrics, "action_validity").set_index("arm")
    plans = sum(len(optimal_actions(m).plan_names) - 3 for m in resolve_mazes(["example", "h14-small-walk"]))
    assert v.loc[MODEL, "valid_steps"] == plans and v.loc[MODEL, "decision_failures"] == 0
    assert "Warning: no valid action" not in (run / "report" / "report.md").read_text()
    # each step's constraint (a word SQL keeps for itself) reaches the budgets table
    budgets = _table(metrics, "budgets").set_index("arm")
    assert budgets.loc[MODEL, "constraint"] == "grammar" and budgets.loc[MODEL, "constraint_steps"] == plans


def test_several_models_pool_without_the_references(tmp_path):
    mazes = resolve_mazes(["example", "h14-small-walk", "h03-long-winding-corridor"])
    run = demo_run(tmp_path / "mixed", mazes, {"walker": (1, 1, 6, 1, 1, 0.1), "turner": (4, 4, 2, 1, 1, 0.1)},
                   seed=5)
    rows, steps = [], []
    for m in mazes:
        row, st = play(m, optimal_actions(m).plan_names, run="mixed", model_name="oracle", model="builtin/oracle")
        rows.append(row)
        steps += st
    write_run(run, rows, steps)
    traces = load_runs([run])
    assert traces.references == ["oracle"] and traces.models == ["turner", "walker"]
    metrics = build_report([run], tmp_path / "report")
    models = traces.model_episodes
    overview = _table(metrics, "overview").set_index("arm")
    assert overview.loc[ALL, "episodes"] == len(models) == 6 and overview.loc[ALL, "solves"] == models["solved"].sum()
    assert list(overview.index) == ["turner", "walker", ALL, "oracle"]
    regret = _table(metrics, "regret").set_index("arm")  # pooled in DuckDB: the model arms' steps only
    assert regret.loc[ALL, "steps"] == regret.loc["turner", "steps"] + regret.loc["walker", "steps"]
    validity = _table(metrics, "action_validity").set_index("arm")
    assert validity.loc[ALL, "steps"] == regret.loc[ALL, "steps"]
    assert set(_table(metrics, "bands")["arm"]) == {"turner", "walker", ALL}
    assert (_table(metrics, "difficulty_axes")["n"].max()) == len(models)
    assert metrics["headline"]["solves"] == int(models["solved"].sum())  # not the oracle's three
    found = metrics["study_findings"]["solves"]
    assert set(found["values"]["per_arm"]) == {"turner", "walker"}
    tokens = _table(metrics, "tokens").set_index("arm")  # the most frugal of the models, not the oracle's 0
    least = tokens.loc[["turner", "walker"], "mean_tokens_out_per_episode"].min()
    assert np.isclose(tokens.loc["walker", "tokens_out_vs_least"], tokens.loc["walker", "mean_tokens_out_per_episode"]
                      / least)


def test_a_report_of_references_only_still_works(tmp_path):
    run = quickstart_run(tmp_path / "refs")
    eps = pd.read_parquet(run / "episodes")
    for table in ("episodes", "steps"):  # the built-in agents' files alone
        for f in (run / table).glob(f"{MODEL}-*.parquet"):
            f.unlink()
    assert len(pd.read_parquet(run / "episodes")) == len(eps) - 2
    metrics = build_report([run], run / "report")
    h = metrics["headline"]
    assert h["episodes"] == 0 and h["solves"] == 0 and list(h["references"]) == REFERENCES
    assert h["no_valid_action"] == [] and h["protocol_warnings"] == []
    assert all(f["this_run"] == NO_MODELS for f in metrics["study_findings"].values())
    assert metrics["tables"]["bands"] == [] and "bands.png" not in metrics["figures"]
    assert "difficulty_axes.png" not in metrics["figures"] and "tokens.png" not in metrics["figures"]
    assert {"solves.png", "progress.png", "regret.png"} <= set(metrics["figures"])
    for name in metrics["tables"]:
        pd.read_csv(run / "report" / f"{name}.csv")  # every table has at least its header
    md = (run / "report" / "report.md").read_text()
    assert "No model arm: these runs hold references (built-in agents) only" in md
    assert "nan" not in md.split("## ")[0]
    assert json.loads((run / "report" / "metrics.json").read_text())["headline"]["references"]["oracle"]["solves"] == 5

