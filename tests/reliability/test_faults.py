"""Faults a sweep survives, on a real local Ray with real HTTP endpoints on 127.0.0.1.

- worker processes SIGKILLed mid-episode (a CPU actor and a model actor hosting several
  episodes): every episode still appears exactly once;
- the driver SIGKILLed before the first episode, with a trace file written but not renamed,
  and between an episode's two files: rerunning the same command finishes the sweep with no
  duplicate row, no unreadable file, and a manifest that records every invocation;
- endpoints that fail (429 with Retry-After, 500, 503, hangs, malformed JSON, empty choices,
  cut-off replies): the sweep finishes, exhausted episodes end as ``error`` with the fault's
  class, analysis leaves them out of every metric, and ``--retry-errors`` reruns exactly them.

The driver's own tests (tests/orchestrator/test_driver.py) cover ``ray.kill`` of an actor and
a driver killed after a few episodes; a model server that dies mid-sweep is covered by
tests/serving/test_serving_llama.py::test_killed_server_is_restarted_and_its_episode_retried.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from sweep_runs import (
    BUILTINS,
    FAST_PROTOCOL,
    KEY_ENV,
    MAZES,
    ROOT,
    actor_pid,
    assert_each_episode_once,
    copy_mazes,
    sweep_file,
)

from app.cli import main as cli_main
from orchestrator.driver import Driver
from orchestrator.sweep import load_sweep
from testing.scripted_server import ScriptedServer
from traces import read_manifest

pytestmark = pytest.mark.slow
KILL_DRIVER = Path(__file__).with_name("kill_driver.py")


def scripted_model(name: str, url: str, **extra) -> dict:
    return {"name": name, "model": f"openai/{name}", "api_base": url, "api_key_env": KEY_ENV,
            "price": {"input": 0.0, "output": 0.0}, "params": {"timeout": 2, "retries": 1}, **extra}


def _sigkill_later(pid: int, delay: float) -> None:
    def go() -> None:
        time.sleep(delay)
        os.kill(pid, signal.SIGKILL)

    threading.Thread(target=go, daemon=True).start()


def test_sigkilled_worker_processes_lose_no_episode(ray_with_key, tmp_path):
    with ScriptedServer(mode="oracle", mazes=str(MAZES), latency=0.05) as srv:
        sweep = load_sweep(sweep_file(tmp_path / "workers.yaml", protocol=FAST_PROTOCOL, models=[
            BUILTINS[0], BUILTINS[2], scripted_model("scripted", srv.url, max_concurrency=4)]))
        killed: dict[str, int] = {}
        seen = {"builtin": 0, "llm": 0}

        def kill(spec, actor, attempts):
            kind = "builtin" if spec.model.builtin else "llm"
            seen[kind] += 1
            if kind == "builtin" and seen[kind] == 2:
                # the CPU actor's process dies while its episode is queued or running
                killed["builtin"] = pid = actor_pid(actor)
                os.kill(pid, signal.SIGKILL)
            elif kind == "llm" and seen[kind] == 3:
                # the model actor hosts this and the two before it; it dies mid-conversation
                killed["llm"] = pid = actor_pid(actor)
                killed["llm_episode"] = spec.episode_id
                _sigkill_later(pid, 0.4)

        outcome = Driver(sweep, tmp_path / "run", on_dispatch=kill).execute()
    assert set(killed) == {"builtin", "llm", "llm_episode"}
    episodes = assert_each_episode_once(tmp_path / "run", {s.episode_id for s in sweep.episodes()})
    assert outcome.errors == 0 and (episodes["termination"] != "error").all()
    by_id = episodes.set_index("episode_id")
    assert by_id.loc[killed["llm_episode"], "attempts"] == 2  # rescheduled, then finished
    llm = episodes[episodes["model_name"] == "scripted"]
    assert (llm["attempts"] == 2).sum() >= 2 and llm["solved"].all()  # the oracle server solves each maze
    for pid in (killed["builtin"], killed["llm"]):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def _kill_run(when: str, sweep: Path, out: Path, address: str) -> int:
    proc = subprocess.run([sys.executable, str(KILL_DRIVER), when, "run", str(sweep), "--out", str(out),
                           "--address", address], cwd=ROOT, capture_output=True, text=True, timeout=300)
    return proc.returncode


def test_driver_sigkilled_at_each_point_then_rerun_finishes(ray_with_key, tmp_path):
    address = ray_with_key.get_runtime_context().gcs_address
    path = sweep_file(tmp_path / "resume.yaml", repeats=1)
    expected = {s.episode_id for s in load_sweep(path).episodes()}
    out = tmp_path / "results"
    run = out / "resume"

    # 1. right after the manifest is written: before any episode
    assert _kill_run("manifest:1", path, out, address) == -signal.SIGKILL
    assert read_manifest(run)["sweep"]["episodes"] == len(expected) == 18
    assert not list(run.glob("episodes/*.parquet"))

    # 2. the 5th trace file (the 3rd episode's steps) complete under its temporary name
    assert _kill_run("parquet:5", path, out, address) == -signal.SIGKILL
    assert list(run.glob("steps/.*.tmp")), "the kill should leave the temporary steps file"
    assert len(list(run.glob("episodes/*.parquet"))) == 2
    assert len(pd.read_parquet(run / "episodes")) == 2  # readers skip the hidden temporary file

    # 3. between an episode's steps file and its episodes file
    assert _kill_run("parquet:4", path, out, address) == -signal.SIGKILL
    steps_ids = {p.stem for p in run.glob("steps/*.parquet")}
    episode_ids = {p.stem for p in run.glob("episodes/*.parquet")}
    assert len(episode_ids) == 3 and steps_ids - episode_ids, "a steps file without its episode"

    # 4. the same command, not killed, finishes exactly the missing episodes
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(path), "--out", str(out),
                        "--address", address], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert_each_episode_once(run, expected)
    manifest = read_manifest(run)
    assert manifest["run"] == "resume" and manifest["sweep"]["name"] == "resume"
    assert len(manifest["mazes"]) == 6 and manifest["sweep"]["episodes"] == 18
    invocations = manifest["invocations"]
    assert [i["to_run"] for i in invocations] == [18, 18, 16, 15]
    assert all(i["planned"] == 18 for i in invocations)


FAULTS = {
    # model name: (script, error class of an episode that ran out of retries; None: no error)
    "rate": ([{"fault": "429", "retry_after": 0.2}], "RateLimitError"),
    "s500": (["500"], "InternalServerError"),
    "s503": (["503"], "ServiceUnavailableError"),
    "hangs": (["hang"], "Timeout"),
    # litellm reports a reply body that is not JSON as its InternalServerError (the message says why)
    "malformed": (["malformed"], "InternalServerError"),
    "empty": (["empty_choices"], "EmptyChoices"),
    "cutoff": (["length"], None),  # a cut-off reply is the model's (invalid) answer: not an error
    "transient": ([{"fault": "429", "retry_after": 0.1}, "ACTION: left"], None),  # one 429, then answers
}


def test_endpoint_faults_end_as_errors_of_their_class_and_are_retried(ray_with_key, tmp_path):
    from analysis.load import load_runs
    from analysis.metrics import headline, solves, terminations

    # each lists its model, as a real endpoint does (the run's preflight asks); the faults are the chat calls'
    servers = {name: ScriptedServer(script, hang_s=30, model=name).start() for name, (script, _) in FAULTS.items()}
    try:
        models = [scripted_model(n, s.url, max_concurrency=2) for n, s in servers.items()]
        path = tmp_path / "faults.yaml"
        mazes = copy_mazes(tmp_path / "mazes", ["scale-8"])
        path.write_text(yaml.safe_dump({"name": "faults", "mazes": str(mazes), "repeats": 2,
                                        "protocol": FAST_PROTOCOL, "models": models}))
        out = tmp_path / "results"
        with pytest.raises(SystemExit) as exit_:
            cli_main(["run", str(path), "--out", str(out)])
        assert exit_.value.code == 1  # completed, with errors
        run = out / "faults"
        episodes = pd.read_parquet(run / "episodes")
        assert len(episodes) == 16 and episodes["episode_id"].is_unique
        errors = episodes[episodes["termination"] == "error"]
        failing = {n for n, (script, cls) in FAULTS.items() if n not in ("cutoff", "transient")}
        assert set(errors["model_name"]) == failing and len(errors) == 2 * len(failing)
        for name, (_, cls) in FAULTS.items():
            mine = episodes[episodes["model_name"] == name]
            if name == "malformed":
                assert "Unterminated string" in mine["error_message"].iloc[0]
            if name in failing:
                assert mine["error_class"].nunique() == 1 and mine["steps"].eq(0).all()
                assert mine["error_class"].iloc[0] == cls, (name, mine["error_message"].iloc[0])
                # a 429 is waited out for the request timeout (2 s here), other faults retried once
                attempts = int(re.search(r"gave up after (\d+) attempts", mine["error_message"].iloc[0]).group(1))
                assert attempts > 2 if name == "rate" else attempts == 2, mine["error_message"].iloc[0]
            else:
                assert (mine["termination"] != "error").all() and (mine["steps"] > 0).all()
        steps = pd.read_parquet(run / "steps")
        assert (steps[steps["episode_id"].isin(episodes.loc[episodes.model_name == "cutoff", "episode_id"])]
                ["parse"] == "invalid").all()
        # the first call's 429 was retried, and its step records the retry
        assert steps[steps["model_name"] == "transient"]["retries"].max() >= 1

        # infrastructure failures are no model outcome: every metric leaves them out
        traces = load_runs(run)
        assert len(traces.errors) == 12 and len(traces.episodes) == 4
        assert headline(traces)["error_episodes"] == 12 and headline(traces)["episodes"] == 4
        assert int(solves(traces).query("arm != 'all'")["episodes"].sum()) == 4
        term = terminations(traces).set_index("arm")
        assert int(term["error"].sum()) >= 12

        # the endpoints recover; --retry-errors reruns exactly the error episodes
        for s in servers.values():
            s.script = ["ACTION: forward"]
        before = {r.episode_id: r.finished_at for r in episodes.itertuples()}
        cli_main(["run", str(path), "--out", str(out), "--retry-errors"])
    finally:
        for s in servers.values():
            s.close()
    again = pd.read_parquet(run / "episodes")
    assert len(again) == 16 and again["episode_id"].is_unique and (again["termination"] != "error").all()
    rerun = {r.episode_id for r in again.itertuples() if r.finished_at != before[r.episode_id]}
    assert rerun == set(errors["episode_id"])
    assert read_manifest(run)["invocations"][-1]["retry_errors"] is True


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MiB tmpfs of its own: root ignores file modes, but not a read-only or full mount."""
    mount = tmp_path / "disk"
    mount.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN): {r.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.parametrize("fault,message", [("readonly", "Read-only file system"),
                                           ("full", "No space left on device")])
def test_output_becoming_unwritable_mid_run_is_one_line_and_keeps_what_finished(
        ray_with_key, small_disk, tmp_path, fault, message):
    address = ray_with_key.get_runtime_context().gcs_address
    path = sweep_file(tmp_path / "disk.yaml")
    expected = {s.episode_id for s in load_sweep(path).episodes()}
    out = small_disk / "results"
    r = subprocess.run([sys.executable, str(KILL_DRIVER), f"{fault}:4", "run", str(path), "--out", str(out),
                        "--address", address], cwd=ROOT, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "GB_MOUNT": str(small_disk)})
    last = r.stderr.strip().splitlines()[-1]
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert last.startswith("gridbench: ") and message in last and str(out / "disk") in last, last
    # the two episodes written before the fault are whole and readable, and so is the manifest
    run = out / "disk"
    episodes = pd.read_parquet(run / "episodes")
    assert len(episodes) == 2 and int(episodes["steps"].sum()) == len(pd.read_parquet(run / "steps"))
    assert read_manifest(run)["sweep"]["episodes"] == 18

    # room again: the same command finishes the run
    if fault == "readonly":
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    else:
        (small_disk / "filler").unlink()
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(path), "--out", str(out),
                        "--address", address], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    assert_each_episode_once(run, expected)
