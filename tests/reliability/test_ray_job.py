"""The cluster path as docs/cluster.md tells users to take it, on a real Ray cluster started with
the ray CLI on this machine (job API on 127.0.0.1) with token authentication on:

- the token is made on the head (``ray get-auth-token --generate``) and reaches the second node
  as the file ``~/.ray/auth_token`` and the submitting machine as ``RAY_AUTH_TOKEN``; without
  ``RAY_AUTH_MODE=token`` the submitting machine is turned away;
- ``ray job submit --working-dir . -- gridbench run ...`` runs the sweep from the uploaded copy
  of the repository (with ``.git``, so the manifest names the commit) and writes complete
  traces to the absolute ``--out``;
- ``ray job stop`` mid-sweep leaves complete episodes only, and the same command submitted again
  runs exactly the missing ones.

Each node stands for a machine of its own (its own HOME), and the test ends only the Ray it
started (``RayCliCluster.stop``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml
from ray_cli_cluster import RayCliCluster, wait_for
from sweep_runs import FAST_PROTOCOL, MAZES, ROOT, assert_each_episode_once

from orchestrator.sweep import load_sweep
from testing.scripted_server import ScriptedServer

pytestmark = pytest.mark.slow
# Pace: every model call takes LATENCY_S, MAX_CONCURRENCY episodes at a time; the six test mazes
# need 135 optimal steps in all, so each repeat of the sweep takes about 9 s of calls. Long enough
# for `ray job stop` (a few seconds) to land mid-sweep, short enough for the whole test.
LATENCY_S = 0.2
MAX_CONCURRENCY = 3
REPEATS = 3
STOP_AFTER = 3  # complete episodes seen before the job is stopped


@pytest.fixture
def cluster(tmp_path_factory):
    # a short temp dir: Ray's socket paths under it must stay within the 107 bytes Unix allows
    c = RayCliCluster(tmp_path_factory.mktemp("ray"), env={"RAY_AUTH_MODE": "token"})
    yield c
    left = c.stop()
    assert not left, f"processes of the test's Ray survived: {left}"


def episode_files(run_dir: Path) -> dict[str, tuple[int, int]]:
    """Each complete episode's id with its episodes file's inode and modification time."""
    return {p.stem: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (run_dir / "episodes").glob("*.parquet")}


def ray_job(cluster: RayCliCluster, verb: str, *args: str, **run) -> subprocess.CompletedProcess:
    """``ray job VERB`` against the cluster's job API, from the machine ``run`` names."""
    return cluster.ray("job", verb, "--address", cluster.dashboard, *args, **run)


def job_driver(cluster: RayCliCluster):
    """The job's ``gridbench run`` process, once it runs."""
    return next((p for p in cluster.processes() if "run" in p.cmdline() and p.cmdline()[1:2]
                 and p.cmdline()[1].endswith("gridbench")), None)


def test_a_sweep_submitted_as_a_job_is_stopped_and_resumed(cluster, tmp_path):
    head, node, laptop = tmp_path / "head", tmp_path / "node", tmp_path / "laptop"
    for home in (head, node / ".ray", laptop):
        home.mkdir(parents=True)
    made = cluster.ray("get-auth-token", "--generate", home=head)
    token_file = head / ".ray" / "auth_token"
    assert made.returncode == 0 and token_file.is_file(), made.stderr
    token = token_file.read_text().strip()
    shutil.copy(token_file, node / ".ray" / "auth_token")

    cluster.start_head(head, num_cpus=0)  # the head hosts the job's driver only: episodes run on the node
    cluster.add_node(node, num_cpus=2)

    refused = ray_job(cluster, "list", home=laptop, env={"RAY_AUTH_TOKEN": token})
    assert refused.returncode != 0 and "Missing authentication token" in refused.stdout + refused.stderr
    # Ray leaves .git out of a job's working dir unless told otherwise; with it the manifest
    # records the commit the job ran
    authed = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token,
              "RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES": ".venv,venv,__pycache__"}

    out = tmp_path / "results"
    with ScriptedServer(mode="oracle", mazes=str(MAZES), latency=LATENCY_S) as srv:
        sweep_path = tmp_path / "job.yaml"
        sweep_path.write_text(yaml.safe_dump({
            "name": "job", "mazes": str(MAZES), "repeats": REPEATS, "protocol": FAST_PROTOCOL,
            "models": [{"name": "scripted", "model": "openai/scripted", "api_base": srv.url, "client": "openai",
                        "price": {"input": 0.0, "output": 0.0}, "max_concurrency": MAX_CONCURRENCY}]}))
        planned = {s.episode_id for s in load_sweep(sweep_path).episodes()}
        run_dir = out / "job"
        command = ["--", "gridbench", "run", str(sweep_path), "--out", str(out)]

        t0 = time.monotonic()
        first = ray_job(cluster, "submit", "--submission-id", "gb-first", "--no-wait", "--working-dir", ".",
                        *command, home=laptop, env=authed, cwd=ROOT)
        assert first.returncode == 0, first.stderr
        driver = wait_for(lambda: job_driver(cluster), 120, "the job's gridbench driver")
        # the driver runs the uploaded copy of this checkout, first on its PYTHONPATH
        copy = Path(driver.cwd())
        assert driver.environ()["PYTHONPATH"].split(":")[0] == str(copy)
        assert (copy / "orchestrator" / "driver.py").read_bytes() == (ROOT / "orchestrator" / "driver.py").read_bytes()
        wait_for(lambda: len(episode_files(run_dir)) >= STOP_AFTER, 120, f"{STOP_AFTER} complete episodes")
        t_first = time.monotonic() - t0

        stop = ray_job(cluster, "stop", "gb-first", home=laptop, env=authed)
        assert stop.returncode == 0, stop.stderr
        status = ray_job(cluster, "status", "gb-first", home=laptop, env=authed)
        assert "was stopped" in status.stdout, status.stdout
        wait_for(lambda: job_driver(cluster) is None, 30, "the stopped job's driver to exit")
        kept = episode_files(run_dir)
        assert STOP_AFTER <= len(kept) < len(planned), f"the stop did not land mid-sweep: {len(kept)} done"
        # complete episodes only: each episodes file has a steps file with all its steps
        finished = {}
        for eid in kept:
            row = pd.read_parquet(run_dir / "episodes" / f"{eid}.parquet").iloc[0]
            assert len(pd.read_parquet(run_dir / "steps" / f"{eid}.parquet")) == row["steps"]
            finished[eid] = (row["finished_at"], row["attempts"])

        again = ray_job(cluster, "submit", "--submission-id", "gb-again", "--working-dir", ".", *command,
                        home=laptop, env=authed, cwd=ROOT, timeout=300)
        assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]

    episodes = assert_each_episode_once(run_dir, planned)
    assert (episodes["termination"] != "error").all() and episodes["solved"].all()
    # the second job left finished episodes alone (its end packed them into compacted files)
    after = episodes.set_index("episode_id")
    assert {eid: (after.loc[eid, "finished_at"], after.loc[eid, "attempts"]) for eid in kept} == finished
    assert all(name.startswith("compacted-") for name in episode_files(run_dir))
    manifest = json.loads((run_dir / "manifest.json").read_text())
    head_commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    assert [i["git"]["commit"] for i in manifest["invocations"]] == [head_commit, head_commit], \
        [i["git"] for i in manifest["invocations"]]
    # one episode of each job through `gridbench replay --verify`, both at once
    replays = [subprocess.Popen([sys.executable, "-m", "app.cli", "replay", str(run_dir), eid, "--verify"],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for eid in (min(kept), min(set(after.index) - set(kept)))]
    for replay in replays:
        output = replay.communicate(timeout=120)[0]
        assert replay.returncode == 0 and "verified" in output, output
    print(f"first job: {len(kept)} of {len(planned)} episodes before the stop ({t_first:.0f} s to the first "
          f"{STOP_AFTER}); whole test {time.monotonic() - t0:.0f} s after the cluster was up")
