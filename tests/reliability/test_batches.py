"""Batch and flex arms of a small sweep, end to end on a real local Ray against the scripted
server's provider fakes: lockstep rounds, costs at the tier's price, and a driver SIGKILLed while
a batch is in flight whose rerun polls that batch and submits none of its requests again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml
from sweep_runs import FAKE_KEY, KEY_ENV, ROOT, assert_each_episode_once
from sweep_runs import MAZES as MAZE_DIR

from orchestrator.driver import Driver
from orchestrator.reporter import Reporter
from orchestrator.sweep import load_sweep
from testing.scripted_server import ScriptedServer

pytestmark = pytest.mark.slow
MAZES = [str(MAZE_DIR / "scale-10.json"), str(MAZE_DIR / "switch-8.json")]  # 11 and 10 optimal actions
PROTOCOL = {"observation": "text", "history_frames": 0, "thinking": True, "icl_example": False,
            "stall_window": 200, "step_cap_factor": 3}
PRICE = {"input": 1e-6, "output": 4e-6, "cached_input": 2e-7}
FAST_BATCH = {"poll_s": 0.05, "round_wait_s": 2.0}


def entry(name: str, model: str, url: str, tier: str, **more) -> dict:
    out = {"name": name, "model": model, "api_base": url, "api_key_env": KEY_ENV, "tier": tier, "price": PRICE,
           "params": {"timeout": 20, "retries": 2}, "max_concurrency": 4, **more}
    if tier == "batch":
        out["batch"] = FAST_BATCH
    return out


def write_sweep(path: Path, models: list[dict]) -> Path:
    path.write_text(yaml.safe_dump({"name": path.stem, "mazes": MAZES, "protocol": PROTOCOL, "models": models},
                                   sort_keys=False))
    return path


def standard_cost(steps: pd.DataFrame) -> float:
    return float(((steps["tokens_in"] - steps["tokens_cached"]) * PRICE["input"]
                  + steps["tokens_cached"] * PRICE["cached_input"] + steps["tokens_out"] * PRICE["output"]).sum())


class Rounds(Reporter):
    """What the progress line hears of the batch arms."""

    def __init__(self) -> None:
        self.seen: dict[str, dict] = {}

    def batches(self, progress: dict[str, dict]) -> None:
        self.seen.update(progress)


def test_batch_and_flex_arms_run_to_the_end_at_their_tiers_prices(ray_with_key, tmp_path):
    # Claude's second batch expires half done and its third holds an errored (overloaded) request;
    # Gemini's second batch expires with no result at all (as Google's does)
    with ScriptedServer(mode="oracle", mazes=MAZES, batch_fates=["ok", "expire", "error", "ok"]) as plain, \
            ScriptedServer(mode="oracle", mazes=MAZES, persona="moonshot") as kimi_srv, \
            ScriptedServer(mode="oracle", mazes=MAZES, persona="gemini", batch_fates=["ok", "expire", "ok"]) as gem:
        plain.flex_unavailable = 3
        path = write_sweep(tmp_path / "tiers.yaml", [
            entry("claude-batch", "anthropic/claude-opus-4-8", plain.url, "batch"),
            entry("kimi-batch", "moonshot/kimi-k2.6", kimi_srv.url, "batch"),
            entry("gpt-flex", "openai/gpt-5", plain.url, "flex"),
            entry("gemini-batch", "gemini/gemini-3.8-flash", gem.gemini_url, "batch", protocol={"effort": "low"}),
        ])
        reporter = Rounds()
        outcome = Driver(load_sweep(path), tmp_path / "run", reporter=reporter).execute()
        submitted = plain.batches.submitted + kimi_srv.batches.submitted + gem.batches.submitted
        gemini_expired = sum(len(b.lines) for b in gem.batches.batches.values() if b.fate == "expire")
        fates = Counter(kind for b in plain.batches.batches.values() for kind, _ in (b.outcomes or {}).values())
        flex_refused = [r for r in plain.chat_requests if r.body.get("service_tier") == "flex" and not r.answered]
    assert outcome.exit_code == 0
    episodes = assert_each_episode_once(tmp_path / "run", {s.episode_id for s in load_sweep(path).episodes()})
    assert episodes["solved"].all()
    steps = pd.read_parquet(tmp_path / "run" / "steps")
    for name, factor in (("claude-batch", 0.5), ("kimi-batch", 0.6), ("gpt-flex", 0.5), ("gemini-batch", 0.5)):
        arm = steps[steps["model_name"] == name]
        assert (arm["tier"] == name.split("-")[1]).all()
        assert arm["cost_usd"].sum() == pytest.approx(factor * standard_cost(arm))
    batch_steps = steps[steps["tier"] == "batch"]
    assert batch_steps["batch_id"].notna().all() and steps[steps["tier"] == "flex"]["batch_id"].isna().all()
    assert len(flex_refused) == 3  # the flex 429s were waited out, never billed
    for name in ("claude-batch", "kimi-batch", "gemini-batch"):  # cache reads in batches, at the cached price above
        assert steps[steps["model_name"] == name]["tokens_cached"].sum() > 0
    # the expired requests went again, the errored one was retried as a new request: each bought once
    assert fates["expired"] >= 1 and fates["errored"] == 1
    claude_calls = int(steps[steps["model_name"] == "claude-batch"]["calls"].sum())
    assert len(plain.batches.submitted) == claude_calls + fates["expired"] + fates["errored"]
    gemini_calls = int(steps[steps["model_name"] == "gemini-batch"]["calls"].sum())
    assert gemini_expired >= 1 and len(gem.batches.submitted) == gemini_calls + gemini_expired
    assert {name for name, p in reporter.seen.items() if p["rounds"] > 0} == {"claude-batch", "kimi-batch", "gemini-batch"}
    # each request went in exactly one batch, and the batches ran in lockstep: the two episodes of
    # an arm share their rounds (one round more at most, while the second episode started)
    assert max(Counter(cid for _, _, cid in submitted).values()) == 1
    # (Claude's expired and errored requests cost it a round each at most)
    for name, slack in (("kimi-batch", 1), ("claude-batch", 3), ("gemini-batch", 2)):
        arm = batch_steps[batch_steps["model_name"] == name]
        rounds = arm["batch_id"].nunique()
        longest = int(arm.groupby("episode_id")["step"].max().max())
        assert longest <= rounds <= longest + slack, (name, rounds, longest)


@pytest.mark.parametrize("persona, model, protocol", [
    ("moonshot", "moonshot/kimi-k2.6", {}), ("gemini", "gemini/gemini-4-argon", {"effort": "medium"})])
def test_a_driver_killed_mid_batch_repays_nothing(ray_with_key, tmp_path, persona, model, protocol):
    out = tmp_path / "results"
    with ScriptedServer(mode="oracle", mazes=MAZES, persona=persona) as srv:
        url = srv.gemini_url if persona == "gemini" else srv.url
        path = write_sweep(tmp_path / "killed.yaml", [entry("arm-batch", model, url, "batch", protocol=protocol)])
        command = [sys.executable, "-m", "app.cli", "run", str(path), "--out", str(out),
                   "--address", ray_with_key.get_runtime_context().gcs_address]
        env = {**os.environ, KEY_ENV: FAKE_KEY}
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        killed: list[str] = []

        def kill_mid_batch():
            # the fourth round stays in progress for a while; the driver dies while it polls it
            while proc.poll() is None and not killed:
                if len(srv.batches.batches) == 3:
                    srv.batches.latency = 3.0
                if len(srv.batches.batches) >= 4:
                    time.sleep(0.5)
                    killed.append(list(srv.batches.batches)[-1])
                    os.killpg(proc.pid, signal.SIGKILL)
                time.sleep(0.01)

        watcher = threading.Thread(target=kill_mid_batch)
        watcher.start()
        proc.wait(timeout=300)
        watcher.join()
        assert killed and proc.returncode == -signal.SIGKILL
        in_flight = srv.batches.batches[killed[0]]
        assert in_flight.outcomes is None, "killed while its batch was still in progress"
        before = len(srv.batches.submitted)
        srv.batches.latency = 0.0
        again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-2000:]
        ids = Counter(cid for _, _, cid in srv.batches.submitted)
        assert max(ids.values()) == 1, [c for c, n in ids.items() if n > 1]  # nothing submitted twice
        assert len(srv.batches.submitted) > before  # the rerun went on with new rounds
        assert in_flight.outcomes is not None  # and read the killed driver's batch instead of resending it
    run_dir = out / "killed"
    episodes = assert_each_episode_once(run_dir, {s.episode_id for s in load_sweep(path).episodes()})
    assert episodes["solved"].all() and (episodes["resumed"] == 1).all()
    steps = pd.read_parquet(run_dir / "steps")
    assert killed[0] in set(steps["batch_id"])  # its answers were taken into the traces
    assert int(steps["calls"].sum()) == len(srv.batches.submitted)  # every request bought was used, once
