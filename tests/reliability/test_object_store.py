"""Runs kept in object storage: a real S3-compatible server (moto's server mode) on 127.0.0.1,
started by these tests, reached only through ``--out s3://...`` URIs and credentials in the
environment.

- the store itself: atomic puts, listings, a compaction SIGKILLed mid-publish and finished by
  the next one, URIs that carry credentials refused without echoing them;
- the whole path (slow): a sweep of built-in agents run by ``gridbench run --out s3://...`` on a
  real local Ray, SIGKILLed between an episode's two objects, rerun to finish exactly the missing
  episodes, compacted at its end; then ``compact``, ``report``, ``view`` and ``replay --verify``
  on the URI, and no object, local copy or output holding the credentials.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.dataset as ds
import pytest
from sweep_runs import BUILTINS, MAZES, ROOT, sweep_file

from traces._schema import EPISODES, STEPS

KILL_STORE = ROOT / "tests" / "orchestrator" / "kill_store.py"
BUCKET = "gridbench-test"
ACCESS_KEY = "AKIAGRIDBENCHTEST0001"
SECRET_KEY = "gb-test-secret/9f3kQ2+moto-only-0001"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """An S3-compatible server on 127.0.0.1 with one bucket; the credentials and the endpoint are
    in this process's environment (and so in every subprocess's), nowhere else."""
    boto3 = pytest.importorskip("boto3")
    server_mod = pytest.importorskip("moto.server")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    home = tmp_path_factory.mktemp("aws")
    env = {"AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
           "AWS_ENDPOINT_URL": f"http://{host}:{port}", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": str(home / "config"),
           "AWS_SHARED_CREDENTIALS_FILE": str(home / "credentials"),
           "XDG_CACHE_HOME": str(tmp_path_factory.mktemp("cache"))}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    client = boto3.client("s3")
    client.create_bucket(Bucket=BUCKET)
    try:
        yield client
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


def objects(client, prefix: str = "") -> dict[str, bytes]:
    keys = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        keys += [o["Key"] for o in page.get("Contents", [])]
    return {k: client.get_object(Bucket=BUCKET, Key=k)["Body"].read() for k in keys}


def gridbench(*args: str, kill_at: int | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    prefix = [str(KILL_STORE), str(kill_at)] if kill_at is not None else ["-m", "app.cli"]
    return subprocess.run([sys.executable, *prefix, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "COLUMNS": "200"})


def assert_no_credentials(*texts: bytes | str) -> None:
    for text in texts:
        data = text.encode() if isinstance(text, str) else text
        assert SECRET_KEY.encode() not in data and ACCESS_KEY.encode() not in data


def write_episodes(uri: str, n_mazes: int = 3) -> None:
    from agents import Protocol
    from agents.builtin import make_builtin
    from env import resolve_mazes
    from episodes.episode import run_episode
    from traces import EpisodeIdentity, write_episode, write_manifest

    mazes = resolve_mazes(str(MAZES))[:n_mazes]
    protocol = Protocol.preset("gridbench-final")
    for m in mazes:
        for model in ("oracle", "random"):
            identity = EpisodeIdentity(run="r", episode_id=f"{model}-{m.id}", model_name=model,
                                       model=f"builtin/{model}", condition="default", repeat=0, maze_id=m.id)
            write_episode(uri, asyncio.run(run_episode(m, make_builtin(model, seed=1), protocol, identity)))
    write_manifest(uri, run="r", sweep={"name": "r"}, mazes={m.checksum: m.to_dict() for m in mazes},
                   invocation={"command": ["test"]})


def test_uris_with_credentials_are_refused_without_echoing_them(s3, tmp_path):
    from env.errors import BadInput
    from traces import open_store

    for uri in (f"s3://{ACCESS_KEY}:{SECRET_KEY.replace('/', '%2F')}@{BUCKET}/runs",
                f"s3://{BUCKET}/runs?access_key={ACCESS_KEY}&secret_key=x",
                f"gs://{BUCKET}/runs?credentials={SECRET_KEY}"):
        with pytest.raises(BadInput) as err:
            open_store(uri)
        assert "refused" in str(err.value)
        assert_no_credentials(str(err.value))
    with pytest.raises(BadInput, match="not supported"):
        open_store("hdfs://namenode/runs")
    store = open_store(f"s3://{BUCKET}/runs/")
    assert store.location == f"s3://{BUCKET}/runs" and store.child("main").location == f"s3://{BUCKET}/runs/main"
    # the command line: one line, exit 2, before any Ray or server starts
    path = sweep_file(tmp_path / "s.yaml", models=BUILTINS[:1])
    for out, says in ((f"s3://{ACCESS_KEY}:{SECRET_KEY.replace('/', '%2F')}@{BUCKET}/r", "credentials in the URI"),
                      ("s3://gridbench-no-such-bucket/results", "no bucket")):
        r = gridbench("run", str(path), "--out", out)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and says in r.stderr, r.stderr[-2000:]
        assert_no_credentials(r.stdout, r.stderr)


def test_a_run_in_s3_reads_like_a_folder_and_its_compaction_survives_a_kill(s3):
    import duckdb

    from traces import read_manifest, read_run, trace_dataset

    uri = f"s3://{BUCKET}/store/run"
    write_episodes(uri)
    episodes, steps = read_run(uri)
    assert len(episodes) == 6 and int(episodes["steps"].sum()) == len(steps)
    data = trace_dataset(uri, "steps")  # noqa: F841 - DuckDB reads the Arrow dataset by its name
    assert duckdb.sql("SELECT count(*) FROM data").fetchall()[0][0] == len(steps)
    keys = objects(s3, "store/run/")
    assert sorted(k.split("/")[2] for k in keys) == ["episodes"] * 6 + ["manifest.json"] + ["steps"] * 6
    assert read_manifest(uri)["location"] == uri

    probe = gridbench("compact", uri, kill_at=0)  # not killed: lists the steps it takes
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert "packed 6 episodes" in probe.stdout
    ops = [line.split(" ", 2)[1] for line in probe.stderr.splitlines() if line.startswith("op ")]
    first_move = ops.index("move") + 1

    # killed right before its first publish: the record is written, the outputs staged

    uri2 = f"s3://{BUCKET}/store/killed"
    write_episodes(uri2)
    before = read_run(uri2)
    killed = gridbench("compact", uri2, kill_at=first_move)
    assert killed.returncode == -signal.SIGKILL
    staged = [k for k in objects(s3, "store/killed/compaction/staging/") if k.endswith(".parquet")]
    assert len(staged) == 2, "both tables' outputs should wait in staging"
    mid = read_run(uri2)  # the record is not in force yet: the per-episode objects are read
    for a, b in zip(before, mid, strict=True):
        assert sorted(a["episode_id"]) == sorted(b["episode_id"]) and len(a) == len(b)
    again = gridbench("compact", uri2)
    assert again.returncode == 0, again.stderr[-2000:]
    after = read_run(uri2)
    for a, b in zip(before, after, strict=True):
        assert sorted(a["episode_id"]) == sorted(b["episode_id"]) and len(a) == len(b)
    names = sorted(k.split("/", 2)[2] for k in objects(s3, "store/killed/") if not k.endswith("/"))
    assert [n for n in names if n.startswith(("episodes/", "steps/"))] == [
        n for n in names if n.startswith(("episodes/compacted-", "steps/compacted-"))] and len(
        [n for n in names if n.startswith(("episodes/", "steps/"))]) == 2
    # the compacted objects read with plain pyarrow too, with the fixed schemas
    from traces import open_store

    store = open_store(uri2)
    for table, schema in (("episodes", EPISODES), ("steps", STEPS)):
        data = ds.dataset(store.path(table), filesystem=store.filesystem, format="parquet")
        assert data.schema.equals(schema, check_metadata=False) and data.count_rows() == len(
            after[0 if table == "episodes" else 1])


@pytest.mark.slow
def test_a_sweep_with_out_s3_killed_resumed_compacted_reported_viewed_replayed(s3, ray_with_key, tmp_path):
    from orchestrator.sweep import load_sweep
    from traces import read_manifest, read_run

    address = ray_with_key.get_runtime_context().gcs_address
    path = sweep_file(tmp_path / "s3run.yaml", models=BUILTINS[:2], repeats=1)
    expected = {s.episode_id for s in load_sweep(path).episodes()}
    out = f"s3://{BUCKET}/results"
    uri = f"{out}/s3run"
    outputs = []

    # killed right before the 3rd episode's episodes object (after the manifest and two whole
    # episodes): its steps object is there without it
    killed = gridbench("run", str(path), "--out", out, "--address", address, kill_at=7)
    outputs += [killed.stdout, killed.stderr]
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    keys = objects(s3, "results/s3run/")
    assert len([k for k in keys if k.startswith("results/s3run/episodes/")]) == 2
    assert len([k for k in keys if k.startswith("results/s3run/steps/")]) == 3
    assert len(read_run(uri)[0]) == 2

    done = gridbench("run", str(path), "--out", out, "--address", address)
    outputs += [done.stdout, done.stderr]
    assert done.returncode == 0, done.stderr[-3000:]
    assert "packed 12 episodes" in done.stderr
    episodes, steps = read_run(uri)
    assert episodes["episode_id"].is_unique and set(episodes["episode_id"]) == expected
    assert not steps.duplicated(["episode_id", "step"]).any() and int(episodes["steps"].sum()) == len(steps)
    manifest = read_manifest(uri)
    assert manifest["location"] == uri and [i["to_run"] for i in manifest["invocations"]] == [12, 10]
    tables = {k.split("/")[2] for k in objects(s3, "results/s3run/") if k.count("/") == 3}
    assert tables >= {"episodes", "steps", "compaction"}
    assert all(k.split("/")[3].startswith("compacted-")
               for k in objects(s3, "results/s3run/") if k.split("/")[2] in ("episodes", "steps")
               and not k.endswith("/"))

    compacted = gridbench("compact", uri)
    assert compacted.returncode == 0 and "already compact" in compacted.stdout, compacted.stderr
    report = gridbench("report", uri)
    assert report.returncode == 0, report.stderr[-3000:]
    # the run's 12 episodes are the two built-in agents', counted as references apart from models
    assert re.search(r"references apart: oracle 6/6, random \d/6\)", report.stdout), report.stdout
    assert f"{uri}/report" in report.stdout
    view = gridbench("view", uri)
    assert view.returncode == 0, view.stderr[-3000:]
    eid = sorted(expected)[0]
    replay = gridbench("replay", uri, eid, "--verify")
    assert replay.returncode == 0 and "verified" in replay.stdout, replay.stdout + replay.stderr
    outputs += [p.stdout + p.stderr for p in (compacted, report, view, replay)]
    keys = objects(s3)
    assert "results/s3run/report/report.html" in keys and "results/s3run/view/index.html" in keys
    assert_no_credentials(*keys.values(), *keys, *outputs)
    local = [p for p in Path(os.environ["XDG_CACHE_HOME"]).rglob("*") if p.is_file()]
    assert any(p.name == "report.html" for p in local)
    assert_no_credentials(*(p.read_bytes() for p in local))


def test_a_run_in_s3_exports_to_a_dataset_folder_that_reads_as_it(s3, tmp_path):
    """``gridbench export`` takes a run's URI as ``report`` does (docs/export.md)."""
    from traces import export_run, is_export, open_store, read_run

    uri = f"s3://{BUCKET}/store/export-source"
    write_episodes(uri, n_mazes=1)
    result = export_run(uri, tmp_path / "hf")
    assert result.rows["episodes"] == 2 and (tmp_path / "hf" / "README.md").is_file()
    # and an export put in object storage reads as the run too
    open_store(f"s3://{BUCKET}/store/exported").put_folder(result.folder)
    assert is_export(f"s3://{BUCKET}/store/exported") and not is_export(uri)
    for where in (result.folder, f"s3://{BUCKET}/store/exported"):
        for a, b in zip(read_run(uri), read_run(where), strict=True):
            key = ["episode_id", "step"] if "step" in a else ["episode_id"]
            assert a.sort_values(key).reset_index(drop=True).equals(b.sort_values(key).reset_index(drop=True))
