"""Never paying for a model call twice, on a real local Ray with a scripted model on 127.0.0.1
that counts the calls it answered, per maze and per step:

- a model actor SIGKILLed at turn k of a 40-turn episode: the rerun continues from step k-1 and
  asks for each turn once;
- the driver SIGKILLed mid-sweep: rerunning the command continues each unfinished episode;
- a node removed from a real multi-node local Ray mid-episode: the episode continues elsewhere;
- a budget: the sweep stops within one turn per running episode; rerun with a larger budget, it
  finishes with no repeated call;
- a 429 storm: the model's concurrency falls and climbs back, and no episode ends in error.

Every run's traces pass ``replay --verify``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml
from sweep_runs import FAKE_KEY, KEY_ENV, ROOT, assert_each_episode_once

from env.sets import set_entries
from episodes.replay import replay
from orchestrator.driver import Driver
from orchestrator.sweep import load_sweep
from testing.reading import walls_from_text
from testing.scripted_server import ScriptedServer
from traces import Journals

pytestmark = pytest.mark.slow
# text maps (the scripted oracle reads the state from them), no thinking, a long step budget
PROTOCOL = {"observation": "text", "history_frames": 0, "thinking": False, "icl_example": False,
            "stall_window": 200, "step_cap_factor": 3}


def long_mazes(n: int, at_least: int = 40) -> list[str]:
    """Eval mazes whose optimal plan takes at least ``at_least`` actions, shortest first."""
    entries = sorted((e for e in set_entries("eval") if e["optimal_actions"] >= at_least),
                     key=lambda e: e["optimal_actions"])
    return [f"eval/{e['id']}" for e in entries[:n]]


def sweep_file(path: Path, url: str, mazes: list[str], **model) -> Path:
    data = {"name": path.stem, "mazes": mazes, "protocol": PROTOCOL, "models": [{
        "name": "scripted", "model": "openai/scripted", "api_base": url, "api_key_env": KEY_ENV,
        "client": "openai", "price": {"input": 1e-6, "output": 1e-6}, "params": {"timeout": 10, "retries": 2},
        "max_concurrency": 1, **model}]}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def answered(server: ScriptedServer) -> Counter:
    """Answered calls per (maze walls, step): a provider's bill, turn by turn."""
    return Counter((walls_from_text(r.body), r.step) for r in server.chat_requests if r.answered)


def assert_paid_once(server: ScriptedServer, episodes: pd.DataFrame) -> None:
    bill = answered(server)
    assert max(bill.values()) == 1, [k[1] for k, n in bill.items() if n > 1]
    assert sum(bill.values()) == int(episodes["steps"].sum())  # every recorded step was one call


def test_model_actor_killed_at_turn_k_resumes_and_pays_each_call_once(ray_with_key, tmp_path):
    (maze,) = long_mazes(1)
    pids: list[int] = []
    killed: list[int] = []
    k = 17

    def kill_at_turn_k(request):
        if request.step == k and not killed:
            killed.append(pids[-1])
            os.kill(pids[-1], signal.SIGKILL)  # the actor dies while its call is in flight
            return "drop"  # and the call is never answered, so never billed
        return None

    with ScriptedServer(mode="oracle", maze=maze.split("/")[1], on_request=kill_at_turn_k) as srv:
        sweep = load_sweep(sweep_file(tmp_path / "kill.yaml", srv.url, [maze]))
        outcome = Driver(sweep, tmp_path / "run",
                         on_dispatch=lambda spec, actor, n: pids.append(ray_with_key.get(actor.pid.remote()))).execute()
        episodes = assert_each_episode_once(tmp_path / "run", {s.episode_id for s in sweep.episodes()})
        assert killed and outcome.errors == 0
        row = episodes.iloc[0]
        assert row["solved"] and row["steps"] >= 40 and (row["attempts"], row["resumed"]) == (2, 1)
        assert_paid_once(srv, episodes)
        assert sum(1 for r in srv.chat_requests if r.step == k) == 2  # the dropped call and its one retry
    assert replay(tmp_path / "run", row["episode_id"]).ok
    assert Journals.of_run(tmp_path / "run").ids() == set()  # finished: its journal is gone
    steps = pd.read_parquet(tmp_path / "run" / "steps")
    assert steps["cost_usd"].sum() == pytest.approx(row["cost_usd"])  # the recorded steps are in the totals


def test_killed_driver_is_continued_by_the_rerun_without_a_repeated_call(ray_with_key, tmp_path):
    mazes = long_mazes(2)
    out = tmp_path / "results"
    state: dict[str, object] = {}

    def kill_the_driver(request):
        # the second episode, mid-way: the first is finished, the second has journaled steps
        walls = walls_from_text(request.body)
        state.setdefault("first", walls)
        if walls != state["first"] and request.step == 12 and "killed" not in state:
            state["killed"] = True
            os.killpg(state["pid"], signal.SIGKILL)
            return "drop"
        return None

    with ScriptedServer(mode="oracle", mazes=[m for m in mazes], on_request=kill_the_driver) as srv:
        path = sweep_file(tmp_path / "driver.yaml", srv.url, mazes)
        command = [sys.executable, "-m", "app.cli", "run", str(path), "--out", str(out),
                   "--address", ray_with_key.get_runtime_context().gcs_address]
        env = {**os.environ, KEY_ENV: FAKE_KEY}
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        state["pid"] = proc.pid
        proc.wait(timeout=300)
        assert state.get("killed") and proc.returncode == -signal.SIGKILL
        run_dir = out / "driver"
        assert Journals.of_run(run_dir).ids(), "the unfinished episode left its journal"
        again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-2000:]
        sweep = load_sweep(path)
        episodes = assert_each_episode_once(run_dir, {s.episode_id for s in sweep.episodes()})
        assert episodes["solved"].all() and sorted(episodes["resumed"]) == [0, 1]
        assert_paid_once(srv, episodes)
    for eid in episodes["episode_id"]:
        assert replay(run_dir, eid).ok


def test_budget_stops_within_one_turn_per_running_episode_and_a_larger_one_finishes(ray_with_key, tmp_path):
    mazes = long_mazes(3)
    limit, running = 0.03, 2
    with ScriptedServer(mode="oracle", mazes=mazes, latency=0.02) as srv:
        sweep = load_sweep(sweep_file(tmp_path / "budget.yaml", srv.url, mazes, max_concurrency=running))
        first = Driver(sweep, tmp_path / "run", max_cost=limit).execute()
        spent = sum(v["spent"] for v in first.ledger.values())
        assert first.unfinished and first.exit_code == 1 and first.suspended >= 1
        assert Journals.of_run(tmp_path / "run").ids()
        second = Driver(sweep, tmp_path / "run", max_cost=100.0).execute()
        assert second.exit_code == 0 and not second.unfinished
        episodes = assert_each_episode_once(tmp_path / "run", {s.episode_id for s in sweep.episodes()})
        assert episodes["solved"].all() and (episodes["resumed"] >= 1).any()
        assert_paid_once(srv, episodes)
    # each running episode finished the turn it was on when the budget ran out, and no more
    dearest = pd.read_parquet(tmp_path / "run" / "steps")["cost_usd"].max()
    assert limit <= spent <= limit + running * dearest
    assert sum(v["spent"] for v in second.ledger.values()) == pytest.approx(episodes["cost_usd"].sum())


def test_a_429_storm_lowers_concurrency_then_it_recovers_and_no_episode_fails(ray_with_key, tmp_path):
    mazes = long_mazes(4, at_least=20)
    seen: list[int] = []

    def storm_passes(request):
        # the provider takes two requests at a time for its first 150 requests, then any number: a
        # count, not a clock, so a slow machine sees the same storm
        seen.append(1)
        if len(seen) == 150:
            srv.capacity = None

    with ScriptedServer(mode="oracle", mazes=mazes, latency=0.05, capacity=2, retry_after=0.2,
                        on_request=storm_passes) as srv:
        path = sweep_file(tmp_path / "storm.yaml", srv.url, mazes, max_concurrency=8)
        data = yaml.safe_load(path.read_text())
        data["repeats"] = 2
        path.write_text(yaml.safe_dump(data))
        sweep = load_sweep(path)
        outcome = Driver(sweep, tmp_path / "run").execute()
    episodes = assert_each_episode_once(tmp_path / "run", {s.episode_id for s in sweep.episodes()})
    assert outcome.errors == 0 and episodes["solved"].all()
    limits = [limit for _, limit, _ in outcome.concurrency["scripted"]]
    assert limits[0] == 8 and min(limits) <= 2, limits  # it fell to what the provider took
    assert limits[-1] > min(limits), limits  # and climbed back once the storm was over
    assert episodes["retries"].sum() > 0  # the 429s were waited out, recorded as retries
