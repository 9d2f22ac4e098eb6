"""A small projection run through the real ``gridbench run`` on an embedded Ray, then ``gridbench
report``: the built-in agents read the state, never the frame, so every projection leaves their
score where it was (invariance holds); the scripted ``text-blind`` agent fails only where it is
shown the text map alone, so its ``projection-text`` difference is negative and read as reading the
interface (docs/variants.md#projection-twins)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pandas as pd
import pytest
import yaml

pytestmark = pytest.mark.slow
if importlib.util.find_spec("mujoco") is None:  # the 3d extra: scripts/install.sh --test installs it
    pytest.skip("mujoco is not installed", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
MAZES = ["example", "study/r1_M1_8x8_corridor_kr_0"]
# no frames in the history (one picture a turn), room for a detour, the watchdog ends a `done`
PROTOCOL = {"history_frames": 0, "thinking": False, "icl_example": False, "stall_window": 10, "step_cap_factor": 2}


def _sweep(url: str) -> dict:
    return {"name": "proj", "mazes": MAZES, "variants": ["projection-text", "projection-top_down"],
            "protocol": PROTOCOL,
            "models": [{"name": "oracle", "model": "builtin/oracle"}, {"name": "random", "model": "builtin/random"},
                       {"name": "text-blind", "model": "openai/text-blind", "api_base": url,
                        "price": {"input": 0.0, "output": 0.0}, "params": {"timeout": 30, "retries": 1}}]}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    from orchestrator.sweep import parse_sweep
    from testing.scripted_server import ScriptedServer

    root = tmp_path_factory.mktemp("projection")
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "XDG_CACHE_HOME": str(root / "cache")}
    planned = parse_sweep(_sweep("http://127.0.0.1:1/v1"), "proj.yaml")
    with ExitStack() as stack:
        server = stack.enter_context(ScriptedServer(mode="text-blind", mazes=planned.all_mazes, model="text-blind"))
        path = root / "proj.yaml"
        path.write_text(yaml.safe_dump(_sweep(server.url), sort_keys=False))
        r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(path), "--out", str(root / "results")],
                           cwd=ROOT, capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return root / "results" / "proj"


def test_each_twin_ran_in_its_arm_under_its_own_view(run):
    eps = pd.read_parquet(run / "episodes")
    assert len(eps) == 3 * 2 * 3 and set(eps["condition"]) == {"default"}
    protocols = [json.loads(p) for p in eps["protocol"]]
    shown = {(v if isinstance(v, str) else "original", p.get("observation"), (p.get("render") or {}).get("camera"))
             for v, p in zip(eps["variant"], protocols, strict=True)}
    assert shown == {
        ("original", "image", None), ("projection-text", "text", None), ("projection-top_down", "image", "top_down")}
    blind = eps[eps["model_name"] == "text-blind"]
    solved = dict(zip(blind["variant"].fillna("original") + "@" + blind["twin_of"].fillna(blind["maze_id"]),
                      blind["solved"], strict=True))
    for source in ("example", "r1_M1_8x8_corridor_kr_0"):
        assert solved[f"original@{source}"] and solved[f"projection-top_down@{source}"]  # it read the 3D frame
        assert not solved[f"projection-text@{source}"]


def test_the_report_reads_invariance_for_the_built_in_agents_and_the_interface_for_text_blind(run, tmp_path):
    from analysis.report import build_report
    from analysis.twins import INTERFACE, INVARIANT

    metrics = build_report([run], tmp_path / "report")
    table = pd.DataFrame(metrics["tables"]["projection_invariance"]).set_index(["arm", "projection"])
    for arm in ("oracle", "random"):
        for view in ("text", "top_down"):
            row = table.loc[(arm, view)]
            assert row["mazes"] == 2 and row["progress_diff"] == 0.0 and row["solve_rate_diff"] == 0.0
            assert not row["moves"] and row["reading"] == INVARIANT
    text = table.loc[("text-blind", "text")]
    assert text["progress_diff"] < 0 and text["solve_rate_diff"] == -1.0 and text["moves"]
    assert table.loc[("text-blind", "top_down"), "progress_diff"] == 0.0
    assert set(table["against"]) == {"2d"}
    reading = pd.DataFrame(metrics["tables"]["projection_reading"]).set_index("arm")
    assert reading.loc["text-blind", "moves_with"] == "text" and reading.loc["text-blind", "reading"].startswith(INTERFACE)
    assert reading.loc["oracle", "reading"].startswith(INVARIANT)
    assert "## Projection invariance" in (tmp_path / "report" / "report.md").read_text()
    # the arm's protocol is its originals': no model comparison flagged for the views its twins had
    flags = pd.DataFrame(metrics["tables"]["comparison_flags"])
    assert flags.empty or not flags["differs_in"].str.contains("observation|render").any()


def test_a_3d_twin_replays_with_verify(run):
    eps = pd.read_parquet(run / "episodes")
    twin = eps[(eps["variant"] == "projection-top_down") & (eps["model_name"] == "text-blind")].iloc[0]
    r = subprocess.run([sys.executable, "-m", "app.cli", "replay", str(run), twin["episode_id"], "--verify"],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
