"""The driver on a real local Ray (one instance for this module): traces, resume after a killed
driver, a killed actor's episode rescheduled, the run command's exit codes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import duckdb
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from app.cli import main as cli_main
from env.errors import BadInput
from episodes.replay import replay
from orchestrator.driver import Driver
from orchestrator.sweep import parse_sweep
from traces import Journals, export_run, read_manifest

pytestmark = pytest.mark.slow


def test_quick_sweep_writes_readable_traces(ray_cluster, maze_dir, sweep_dict, tmp_path):
    sweep = parse_sweep(sweep_dict(maze_dir), "t.yaml")
    outcome = Driver(sweep, tmp_path / "quick").execute()
    assert outcome.exit_code == 0 and outcome.ran == outcome.planned == 18 and outcome.skipped == 0
    episodes = pd.read_parquet(tmp_path / "quick" / "episodes")
    steps = pd.read_parquet(tmp_path / "quick" / "steps")
    assert sorted(episodes["episode_id"]) == sorted(e.episode_id for e in sweep.episodes())
    assert (episodes["attempts"] == 1).all() and set(episodes["run"]) == {"quick"}
    assert episodes[episodes["model_name"] == "oracle"]["solved"].all()
    assert int(episodes["steps"].sum()) == len(steps)
    dup = duckdb.sql(f"SELECT count(*) - count(DISTINCT (episode_id, step)) FROM "
                     f"read_parquet('{tmp_path}/quick/steps/*.parquet')").fetchall()[0][0]
    assert dup == 0
    some = episodes.sort_values("steps").iloc[-1]["episode_id"]
    assert replay(tmp_path / "quick", some).ok
    manifest = read_manifest(tmp_path / "quick")
    assert manifest["sweep"]["episodes"] == 18 and len(manifest["mazes"]) == 6


def test_killed_driver_then_rerun_completes_exactly_the_missing_episodes(ray_cluster, maze_dir, sweep_dict, tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(sweep_dict(maze_dir, name="resume", repeats=3)))
    out = tmp_path / "results"
    episodes_dir = out / "resume" / "episodes"
    # a second driver process joins this module's cluster and is SIGKILLed mid-run
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "run", str(path), "--out", str(out),
         "--address", ray_cluster.get_runtime_context().gcs_address],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(list(episodes_dir.glob("*.parquet"))) < 4:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = {p.stem for p in episodes_dir.glob("*.parquet")}
    assert 4 <= len(partial) < 54
    sweep = parse_sweep(yaml.safe_load(path.read_text()), str(path))
    outcome = Driver(sweep, out / "resume").execute()
    assert outcome.skipped == len(partial) and outcome.ran == 54 - len(partial)
    episodes = pd.read_parquet(episodes_dir)
    steps = pd.read_parquet(out / "resume" / "steps")
    assert len(episodes) == 54 and episodes["episode_id"].is_unique
    assert int(episodes["steps"].sum()) == len(steps)  # no orphan or duplicated steps
    assert len(read_manifest(out / "resume")["invocations"]) == 2
    again = Driver(sweep, out / "resume").execute()
    assert again.ran == 0 and again.skipped == 54


def test_a_run_of_built_in_agents_keeps_no_journal_yet_continues_one_left_behind(ray_cluster, maze_dir, sweep_dict,
                                                                                 tmp_path):
    class Watched(Driver):
        journal_actors = 0

        def _start_journal(self, specs, todo):
            super()._start_journal(specs, todo)
            Watched.journal_actors += self.spending.journal is not None

    sweep = parse_sweep(sweep_dict(maze_dir, models=[{"name": "explorer", "model": "builtin/explorer"}]), "t.yaml")
    run = tmp_path / "t"
    assert Watched(sweep, run).execute().ran == 6
    journals = Journals.of_run(run)
    assert not journals.ids() and Watched.journal_actors == 0
    # an episode whose files are gone and whose first steps a journal holds (an earlier run with
    # a called model, killed mid-episode): the rerun continues it from there and removes the journal
    episodes = pd.read_parquet(run / "episodes")
    eid = episodes.sort_values("steps").iloc[-1]["episode_id"]
    before = pd.read_parquet(run / "steps" / f"{eid}.parquet").sort_values("step")
    rows = pq.read_table(run / "steps" / f"{eid}.parquet").sort_by("step").to_pylist()[:5]
    for table in ("episodes", "steps"):
        (run / table / f"{eid}.parquet").unlink()
    journals.append(eid, 1, [Journals.step_line(r) for r in rows], sync=True)
    outcome = Watched(sweep, run).execute()
    assert outcome.ran == 1 and outcome.skipped == 5 and Watched.journal_actors == 0
    row = pd.read_parquet(run / "episodes" / f"{eid}.parquet").iloc[0]
    assert row["resumed"] == 1 and row["steps"] == len(before)
    after = pd.read_parquet(run / "steps" / f"{eid}.parquet").sort_values("step")
    assert after["action"].tolist() == before["action"].tolist()
    assert not journals.ids()


def test_a_killed_actor_costs_only_its_episode_which_is_rescheduled(ray_cluster, maze_dir, sweep_dict, tmp_path):
    sweep = parse_sweep(sweep_dict(maze_dir), "t.yaml")
    killed: list[str] = []

    def kill_first(spec, actor, attempts):
        if not killed:
            killed.append(spec.episode_id)
            ray_cluster.kill(actor, no_restart=True)

    outcome = Driver(sweep, tmp_path / "kill", on_dispatch=kill_first).execute()
    episodes = pd.read_parquet(tmp_path / "kill" / "episodes").set_index("episode_id")
    assert outcome.exit_code == 0 and len(episodes) == 18
    assert episodes.loc[killed[0], "attempts"] == 2 and episodes.loc[killed[0], "termination"] != "error"
    # the episode queued behind it on the same actor died unstarted: rescheduled without a charge
    assert (episodes.drop(index=killed[0])["attempts"] == 1).all()

    # with one attempt allowed the episode ends in error, the sweep still finishes, exit code 1
    killed.clear()
    outcome = Driver(sweep, tmp_path / "kill1", on_dispatch=kill_first, max_attempts=1).execute()
    episodes = pd.read_parquet(tmp_path / "kill1" / "episodes").set_index("episode_id")
    assert len(episodes) == 18 and outcome.errors == 1 and outcome.exit_code == 1
    row = episodes.loc[killed[0]]
    assert row["termination"] == "error" and row["error_class"] and row["attempts"] == 1

    # --retry-errors reruns exactly that episode and replaces its files
    killed.append("done")  # no more kills
    retried = Driver(sweep, tmp_path / "kill1", retry_errors=True).execute()
    assert retried.ran == 1 and retried.errors == 0
    episodes = pd.read_parquet(tmp_path / "kill1" / "episodes")
    assert len(episodes) == 18 and (episodes["termination"] != "error").all()


def test_a_compacted_run_resumes_and_retries_its_errors(ray_cluster, maze_dir, sweep_dict, tmp_path):
    """Resuming a compacted run runs exactly the missing episodes; --retry-errors reruns an error
    episode that compaction had packed, which then appears once, finished."""
    from episodes.episode import failed_episode
    from traces import compact, read_run, write_episode
    from traces._commit import table_files

    one = parse_sweep(sweep_dict(maze_dir, models=[{"name": "oracle", "model": "builtin/oracle"}]), "t.yaml")
    run = tmp_path / "resumed"
    assert Driver(one, run).execute().ran == 6
    # one episode of the sweep recorded as an infrastructure error, then the run compacted
    spec = one.episodes()[0]
    write_episode(run, failed_episode(spec.identity("resumed"), spec.maze, spec.condition.protocol,
                                      "RayActorError", "lost", 3))
    compact(run)
    assert not table_files(run, "episodes").per_episode
    two = parse_sweep(sweep_dict(maze_dir, models=[{"name": "oracle", "model": "builtin/oracle"}], repeats=2),
                      "t.yaml")
    resumed = Driver(two, run).execute()
    assert (resumed.ran, resumed.skipped, resumed.errors) == (6, 6, 1)
    retried = Driver(two, run, retry_errors=True).execute()
    assert (retried.ran, retried.errors) == (1, 0)
    compact(run)
    episodes, steps = read_run(run)
    assert sorted(episodes["episode_id"]) == sorted(s.episode_id for s in two.episodes())
    assert (episodes["termination"] == "solved").all() and int(episodes["steps"].sum()) == len(steps)
    assert len(pd.read_parquet(run / "episodes")) == 12 and not table_files(run, "episodes").per_episode


def test_run_command_resolves_and_reports(ray_cluster, maze_dir, tmp_path, capsys):
    code = 0
    try:
        cli_main(["run", "quickstart", "--mazes", str(maze_dir), "--model", "oracle", "--out", str(tmp_path),
                  "--name", "qs"])
    except SystemExit as exit_:
        code = exit_.code
    assert code in (0, None)
    out = capsys.readouterr().out
    assert "oracle" in out and "6 episodes in the matrix, 0 ended in error" in out
    # the run has ended: its six per-episode files are packed into one compacted file per table
    for table in ("episodes", "steps"):
        files = list((tmp_path / "qs" / table).iterdir())
        assert len(files) == 1 and files[0].name.startswith("compacted-"), files
    assert len(pd.read_parquet(tmp_path / "qs" / "episodes")) == 6


def test_model_episodes_run_on_model_actors_and_a_failing_model_never_stops_the_sweep(
        ray_cluster, maze_dir, sweep_dict, tmp_path):
    from testing.scripted_server import ScriptedServer

    key_env, key = "GRIDBENCH_TEST_SCRIPTED_KEY", os.environ["GRIDBENCH_TEST_SCRIPTED_KEY"]  # set by the fixture
    with ScriptedServer(mode="actions", actions=["forward", "left"]) as good, \
            ScriptedServer(script=["401"]) as bad:
        sweep = parse_sweep(sweep_dict(
            maze_dir, name="llm",
            protocol={"observation": "text", "history_frames": 0, "thinking": False, "stall_window": 8},
            models=[
                {"name": "oracle", "model": "builtin/oracle"},
                {"name": "good", "model": "openai/scripted", "api_base": good.url, "api_key_env": key_env,
                 "max_concurrency": 4, "price": {"input": 1e-6, "output": 2e-6}},
                {"name": "bad", "model": "openai/scripted", "api_base": bad.url, "api_key_env": key_env,
                 "params": {"top_p": 0.5}, "max_concurrency": 2},
            ]), "llm.yaml")
        outcome = Driver(sweep, tmp_path / "llm").execute()
        assert len(good.chat_requests) > 0 and len(bad.chat_requests) > 0, (
            len(good.chat_requests), len(bad.chat_requests), outcome.episodes[["model_name", "termination", "error_message"]].to_string())
    episodes = pd.read_parquet(tmp_path / "llm" / "episodes").set_index("model_name")
    assert len(episodes) == 18 and outcome.exit_code == 1 and outcome.errors == 6
    assert (episodes.loc["oracle", "termination"] == "solved").all()
    good_rows = episodes.loc["good"]
    assert (good_rows["termination"] != "error").all() and (good_rows["tokens_in"] > 0).all()
    bad_rows = episodes.loc["bad"]
    assert (bad_rows["termination"] == "error").all() and bad_rows["error_class"].notna().all()
    steps = pd.read_parquet(tmp_path / "llm" / "steps")
    assert set(steps[steps["model_name"] == "good"]["parse"]) <= {"exact", "lenient"}
    for path in (tmp_path / "llm").rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


def test_a_run_on_a_sealed_set_records_its_commitment_and_is_not_exported(ray_cluster, sealed_set, tmp_path):
    folder, public, _ = sealed_set
    sweep = parse_sweep({"name": "t", "mazes": str(folder), "models": [{"name": "oracle", "model": "builtin/oracle"}]},
                        "t.yaml")
    outcome = Driver(sweep, tmp_path / "blind").execute()
    assert outcome.exit_code == 0 and outcome.ran == 3
    manifest = read_manifest(tmp_path / "blind")
    assert manifest["sealed"] == {"commitment": json.loads(public.read_text())["commitment"], "set": "blind3"}
    assert len(manifest["sealed"]["commitment"]) == 64
    with pytest.raises(BadInput, match="sealed set 'blind3'"):
        export_run(tmp_path / "blind", tmp_path / "hf")
    assert not (tmp_path / "hf").exists()
