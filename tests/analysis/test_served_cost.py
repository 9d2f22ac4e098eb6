"""A served model's cost in GPU-hours and, at a price per GPU-hour, in USD beside a hosted model's
recorded USD (``analysis.compute.served_cost``, ``gridbench report --gpu-hour-usd``)."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from tracefab import T0, episode_row, write_run

from analysis import compute
from analysis.load import load_runs


def minutes(m: float):
    return T0 + timedelta(minutes=m)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    rows = [
        # the served model: two overlapping episodes, then one after an hour with none in flight
        episode_row(model_name="qwen", maze_id="m1", started_at=minutes(0), finished_at=minutes(30), wall_s=1800.0),
        episode_row(model_name="qwen", maze_id="m2", started_at=minutes(15), finished_at=minutes(60), wall_s=2700.0),
        episode_row(model_name="qwen", maze_id="m3", started_at=minutes(120), finished_at=minutes(150),
                    wall_s=1800.0),
        # a hosted model, paid per token
        episode_row(model_name="claude", maze_id="m1", cost_usd=1.25, started_at=minutes(0), finished_at=minutes(5)),
        episode_row(model_name="claude", maze_id="m2", cost_usd=0.75, started_at=minutes(0), finished_at=minutes(5)),
    ]
    d = write_run(tmp_path_factory.mktemp("served") / "run-a", rows, [])
    sweep = {"models": [
        {"name": "qwen", "model": "hosted_vllm/Qwen/Qwen2.5-VL-7B-Instruct",
         "serve": {"engine": "vllm", "replicas": 2, "tensor_parallel_size": 2}},
        {"name": "claude", "model": "anthropic/claude-sonnet-4-5"}]}
    (d / "manifest.json").write_text(json.dumps({"format": "gridbench.run/1", "run": "run-a", "sweep": sweep}))
    return d


def test_a_served_models_gpu_hours_are_its_gpus_times_the_hours_its_episodes_ran(run):
    traces = load_runs([run], resolve_mazes=False)
    served = compute.served_cost(traces, None)
    assert served[["model_name", "engine", "replicas", "gpus_per_replica"]].values.tolist() == [["qwen", "vllm", 2, 2]]
    # episodes in flight 0:00-1:00 and 2:00-2:30 (the gap is not counted): 1.5 h on 4 GPUs
    assert served["serving_h"].iloc[0] == pytest.approx(1.5)
    assert served["gpu_hours"].iloc[0] == pytest.approx(6.0)
    assert served["gpu_cost_usd"].isna().all()  # no price given: hours only
    tok = compute.with_served_cost(compute.tokens(traces), traces, served).set_index("arm")
    assert tok.loc["qwen", "gpu_hours"] == pytest.approx(6.0) and tok.loc["claude", "gpu_hours"] != tok.loc[
        "claude", "gpu_hours"]  # NaN: hosted


def test_at_a_price_per_gpu_hour_the_served_arms_dollars_sit_beside_the_hosted_ones(run):
    traces = load_runs([run], resolve_mazes=False)
    served = compute.served_cost(traces, 2.5)
    assert served["gpu_cost_usd"].iloc[0] == pytest.approx(15.0)
    tok = compute.with_served_cost(compute.tokens(traces), traces, served).set_index("arm")
    assert tok.loc["qwen", "gpu_cost_usd"] == pytest.approx(15.0)
    assert tok.loc["qwen", "total_cost_usd"] == pytest.approx(15.0)  # it recorded no per-token cost
    assert tok.loc["claude", "total_cost_usd"] == pytest.approx(2.0)  # a hosted arm: its recorded USD
    assert tok.loc["all", "gpu_cost_usd"] == pytest.approx(15.0)
    assert tok.loc["all", "total_cost_usd"] == pytest.approx(17.0)


def test_a_run_that_served_nothing_keeps_its_cost_table_as_it_was(tmp_path):
    d = write_run(tmp_path / "hosted", [episode_row(model_name="claude", cost_usd=1.0)], [])
    traces = load_runs([d], resolve_mazes=False)
    served = compute.served_cost(traces, 2.5)
    tok = compute.tokens(traces)
    assert served.empty and compute.with_served_cost(tok, traces, served) is tok
