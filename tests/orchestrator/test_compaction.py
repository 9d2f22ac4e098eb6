"""Compaction of a run's per-episode files, without Ray: uncompacted, compacted and mixed runs read
alike (pandas, DuckDB, the readers, replay), compaction is idempotent, and a compaction that
crashes or is SIGKILLed at any point loses and duplicates nothing, for readers during and after
it and once a rerun has finished it."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from agents import Protocol, build_agent
from env import resolve_mazes
from episodes.episode import failed_episode, run_episode
from episodes.replay import replay
from traces import (
    EpisodeIdentity,
    clean_partial,
    compact,
    completed_ids,
    extract,
    read_episode,
    read_run,
    trace_dataset,
    write_episode,
    write_manifest,
)
from traces import _compaction as compaction
from traces._commit import table_files
from traces._schema import EPISODES, STEPS
from traces._store import LocalStore

ROOT = Path(__file__).resolve().parents[2]
KILL_STORE = Path(__file__).with_name("kill_store.py")
AGENTS = ("oracle", "random", "explorer")


def write_run(out: Path, maze_dir: Path, agents=AGENTS, repeats: int = 1, error: str | None = None) -> Path:
    """A run of built-in agents on the test mazes, written episode by episode (plus one error
    episode with id ``error``, when given)."""
    mazes = resolve_mazes(str(maze_dir))
    protocol = Protocol.preset("gridbench-final")
    for m in mazes:
        for name in agents:
            for r in range(repeats):
                identity = EpisodeIdentity(run=out.name, episode_id=f"{name}-{m.id}-{r}", model_name=name,
                                           model=f"builtin/{name}", condition="default", repeat=r, maze_id=m.id)
                agent = build_agent(f"builtin/{name}", protocol, seed=r)
                write_episode(out, asyncio.run(run_episode(m, agent, protocol, identity)))
    if error:
        m = mazes[0]
        identity = EpisodeIdentity(run=out.name, episode_id=error, model_name="oracle", model="builtin/oracle",
                                   condition="default", repeat=9, maze_id=m.id)
        write_episode(out, failed_episode(identity, m, protocol, "RayActorError", "lost", 3))
    write_manifest(out, run=out.name, sweep={"name": out.name}, mazes={m.checksum: m.to_dict() for m in mazes},
                   invocation={"command": ["test"]})
    return out


@pytest.fixture(scope="module")
def uncompacted_run(tmp_path_factory, maze_dir) -> Path:
    return write_run(tmp_path_factory.mktemp("uncompacted") / "run", maze_dir, error="error-ep")


def copy_run(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def by_key(episodes: pd.DataFrame, steps: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    return (episodes.sort_values("episode_id", ignore_index=True),
            steps.sort_values(["episode_id", "step"], ignore_index=True))


def assert_same_tables(run: Path, expected: tuple[pd.DataFrame, pd.DataFrame], raw: bool = True) -> None:
    """The readers (and, with ``raw``, pandas and DuckDB over the folders) see exactly the
    expected rows, each episode once."""
    e, s = by_key(*read_run(run))
    pd.testing.assert_frame_equal(e, expected[0])
    pd.testing.assert_frame_equal(s, expected[1])
    assert completed_ids(run) == set(expected[0]["episode_id"])
    data = trace_dataset(run, "steps")  # noqa: F841 - DuckDB reads the Arrow dataset by its name
    assert duckdb.sql("SELECT count(*), count(DISTINCT (episode_id, step)) FROM data").fetchall()[0] == (
        len(expected[1]), len(expected[1]))
    if raw:
        e, s = by_key(pd.read_parquet(run / "episodes"), pd.read_parquet(run / "steps"))
        pd.testing.assert_frame_equal(e, expected[0])
        pd.testing.assert_frame_equal(s, expected[1])
        n, distinct = duckdb.sql(f"SELECT count(*), count(DISTINCT (episode_id, step)) FROM "
                                 f"read_parquet('{run}/steps/*.parquet')").fetchall()[0]
        assert n == distinct == len(expected[1])


def test_compacted_and_mixed_runs_read_like_the_per_episode_files(uncompacted_run, tmp_path):
    expected = by_key(*read_run(uncompacted_run))
    assert len(expected[0]) == 19 and len(expected[1]) > 500

    run = copy_run(uncompacted_run, tmp_path / "run")
    # mixed: part of the run compacted, then more episodes written as a resumed run would
    later = sorted(p.name for p in (run / "episodes").glob("*.parquet"))[12:]
    held = tmp_path / "held"
    for sub in ("episodes", "steps"):
        (held / sub).mkdir(parents=True)
        for name in later:
            (run / sub / name).rename(held / sub / name)
    first = compact(run)
    assert first.episodes == 12 and first.files == {"episodes": 1, "steps": 1}
    for sub in ("episodes", "steps"):
        for name in later:
            (held / sub / name).rename(run / sub / name)
    mixed = sorted(p.name for p in (run / "episodes").iterdir())
    assert len(mixed) == 8 and sum(n.startswith("compacted-") for n in mixed) == 1
    assert_same_tables(run, expected)
    for eid in ("oracle-keydoor-10-0", later[-1][:-len(".parquet")]):  # one compacted, one per-episode
        assert replay(run, eid).ok

    second = compact(run)
    # the small compacted file is merged with the new episodes: still one file per table
    assert second.episodes == 7 and second.rewritten == 2 and second.files == {"episodes": 1, "steps": 1}
    for sub in ("episodes", "steps"):
        names = sorted(p.name for p in (run / sub).iterdir())
        assert len(names) == 1 and names[0].startswith("compacted-"), names
        assert pq.read_schema(run / sub / names[0]).equals({"episodes": EPISODES, "steps": STEPS}[sub],
                                                          check_metadata=False)
    assert sorted(p.name for p in (run / "compaction").iterdir()) == [f"{second.record.stem}.json"]
    assert_same_tables(run, expected)
    for eid in expected[0]["episode_id"]:
        if eid != "error-ep":
            assert replay(run, eid).ok, eid
    row, steps = read_episode(run, "random-scale-8-0")
    assert row["episode_id"] == "random-scale-8-0" and list(steps["step"]) == list(range(1, len(steps) + 1))

    # idempotent: nothing left to do changes nothing
    names = {sub: sorted(p.name for p in (run / sub).iterdir()) for sub in ("episodes", "steps", "compaction")}
    again = compact(run)
    assert not again.changed and again.record == second.record
    assert {sub: sorted(p.name for p in (run / sub).iterdir()) for sub in names} == names


def test_compacted_files_are_sorted_in_bounded_row_groups_that_a_lookup_prunes(uncompacted_run, tmp_path, monkeypatch):
    monkeypatch.setitem(compaction.ROW_GROUP_ROWS, "steps", 40)
    monkeypatch.setitem(compaction.PART_ROWS, "steps", 300)
    run = copy_run(uncompacted_run, tmp_path / "run")
    expected = by_key(*read_run(run))
    result = compact(run)
    parts = sorted((run / "steps").iterdir())
    assert len(parts) == result.files["steps"] >= 2  # cut by size
    ids = []
    for part in parts:
        meta = pq.ParquetFile(part).metadata
        assert all(meta.row_group(i).num_rows <= 40 for i in range(meta.num_row_groups))
        assert meta.num_rows <= 300 + 40
        table = pq.read_table(part, columns=["episode_id", "step"]).to_pandas()
        # sorted by episode id, each episode's steps in order
        assert table.equals(table.sort_values(["episode_id", "step"], ignore_index=True))
        ids += list(table["episode_id"])
    assert ids == sorted(ids)
    # filtering one episode touches only the row groups whose statistics can hold it
    eid = "explorer-switch-8-0"
    want = ds.field("episode_id") == eid
    groups = [g for part in parts for g in next(ds.dataset(part).get_fragments()).split_by_row_group(filter=want)]
    n_steps = int(expected[0].set_index("episode_id").loc[eid, "steps"])
    total = sum(pq.ParquetFile(p).metadata.num_row_groups for p in parts)
    assert 1 <= len(groups) <= n_steps // 40 + 2 < total
    assert_same_tables(run, expected)


def rerun_error_episode(run: Path, maze_dir: Path) -> None:
    """The rerun of the fixture's error episode: this time it finishes (the oracle solves it)."""
    m = resolve_mazes(str(maze_dir))[0]
    protocol = Protocol.preset("gridbench-final")
    identity = EpisodeIdentity(run="run", episode_id="error-ep", model_name="oracle", model="builtin/oracle",
                               condition="default", repeat=9, maze_id=m.id)
    write_episode(run, asyncio.run(run_episode(m, build_agent("builtin/oracle", protocol, seed=0), protocol,
                                               identity)))


def test_episodes_moved_out_for_a_rerun_replace_their_compacted_rows(uncompacted_run, tmp_path, maze_dir):
    """--retry-errors on a compacted run: the error episode leaves the compacted files (as its own
    files, as before compaction), the rerun replaces them, and the next compaction packs it."""
    run = copy_run(uncompacted_run, tmp_path / "run")
    expected = by_key(*read_run(run))
    compact(run)
    assert completed_ids(run, include_errors=False) == completed_ids(run) - {"error-ep"}
    assert extract(run, ["error-ep", "oracle-scale-8-0", "not-in-the-run"]) == 2
    assert sorted(p.name for p in (run / "episodes").iterdir() if not p.name.startswith("compacted-")) == [
        "error-ep.parquet", "oracle-scale-8-0.parquet"]
    assert_same_tables(run, expected)
    assert extract(run, ["error-ep"]) == 0  # already its own files
    rerun_error_episode(run, maze_dir)
    e, s = read_run(run)
    assert len(e) == 19 and e.set_index("episode_id").loc["error-ep", "termination"] == "solved"
    assert (s["episode_id"] == "error-ep").sum() == e.set_index("episode_id").loc["error-ep", "steps"]
    compact(run)
    assert all(p.name.startswith("compacted-") for p in (run / "episodes").iterdir())
    e2, s2 = by_key(*read_run(run))
    assert e2.set_index("episode_id").loc["error-ep", "termination"] == "solved"
    pd.testing.assert_frame_equal(e2, by_key(e, s)[0])
    pd.testing.assert_frame_equal(s2, by_key(e, s)[1])
    assert_same_tables(run, (e2, s2))


def test_a_per_episode_file_newer_than_its_compacted_rows_wins(uncompacted_run, tmp_path, maze_dir):
    """Should an episode's own files be written again after it was compacted (not through
    ``extract``), the next compaction keeps the newer files and drops the compacted rows."""
    run = copy_run(uncompacted_run, tmp_path / "run")
    compact(run)
    rerun_error_episode(run, maze_dir)
    result = compact(run)
    assert result.episodes == 1 and result.rewritten == 2
    e, s = read_run(run)
    assert len(e) == 19 and e["episode_id"].is_unique
    assert e.set_index("episode_id").loc["error-ep", "termination"] == "solved"
    assert not s.duplicated(["episode_id", "step"]).any()


def test_an_episode_rerun_while_it_is_compacted_ends_once_with_its_newer_files(uncompacted_run, tmp_path, maze_dir,
                                                                              monkeypatch):
    """The error episode is rerun after the compaction read its files and before it finished:
    its newer files survive the first pass and the second pass packs them in place of the rows
    the first one wrote, so the run ends with every episode once and the rerun's result."""
    run = copy_run(uncompacted_run, tmp_path / "run")
    real_finish = compaction.finish
    reruns = []

    def rerun_then_finish(store, record, older):
        if not reruns:
            rerun_error_episode(run, maze_dir)
            reruns.append(record.name)
        return real_finish(store, record, older)

    monkeypatch.setattr(compaction, "finish", rerun_then_finish)
    result = compact(run)
    assert reruns and result.rewritten_meanwhile == set()
    e, s = read_run(run)
    assert len(e) == 19 and e["episode_id"].is_unique
    assert e.set_index("episode_id").loc["error-ep", "termination"] == "solved"
    assert not s.duplicated(["episode_id", "step"]).any()
    assert all(p.name.startswith("compacted-") for p in (run / "episodes").iterdir())


class Crash(BaseException):
    """Stands for the process dying: nothing after it runs (no except clause takes it)."""


def store_ops(monkeypatch, hook) -> None:
    """Call ``hook(op, path)`` before every write, move and delete a run's store makes."""
    for op in ("put", "move", "delete", "open_write"):
        real = getattr(LocalStore, op)

        def wrapped(self, *args, _real=real, _op=op, **kwargs):
            hook(_op, args[0])
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(LocalStore, op, wrapped)


def test_a_compaction_crashing_at_every_step_loses_and_doubles_nothing(tmp_path, maze_dir, monkeypatch):
    base = write_run(tmp_path / "base", maze_dir, agents=("oracle", "random"))
    expected = by_key(*read_run(base))
    ops: list[tuple[str, str]] = []
    with monkeypatch.context() as m:
        store_ops(m, lambda op, path: ops.append((op, path)))
        compact(copy_run(base, tmp_path / "counted"))
    kinds = {op for op, _ in ops}
    assert kinds == {"put", "move", "delete", "open_write"}, ops
    for i in range(len(ops)):
        run = copy_run(base, tmp_path / f"crash{i}")
        calls = [0]

        def hook(op, path, i=i, run=run, calls=calls):
            if calls[0] == i:
                # a reader in the middle of the compaction, right where it dies
                assert_same_tables(run, expected, raw=False)
                raise Crash(f"{op} {path}")
            calls[0] += 1

        with monkeypatch.context() as m:
            store_ops(m, hook)
            with pytest.raises(Crash):
                compact(run)
        assert_same_tables(run, expected, raw=False)
        # the next writer finishes or takes back what the crash left; the run is then compact
        if i % 2:
            clean_partial(run)
            assert_same_tables(run, expected, raw=False)
        result = compact(run)
        assert_same_tables(run, expected)
        assert not list(run.rglob("*.tmp")) and result.files == {"episodes": 1, "steps": 1}
        assert len(list((run / "compaction").iterdir())) == 1
        assert not compact(run).changed


def kill_compact(run: Path, at: int) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(KILL_STORE), str(at), "compact", str(run)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_gridbench_compact_sigkilled_at_each_kind_of_step_then_rerun(uncompacted_run, tmp_path):
    expected = by_key(*read_run(uncompacted_run))
    counted = kill_compact(copy_run(uncompacted_run, tmp_path / "counted"), 0)
    assert counted.returncode == 0, counted.stderr[-2000:]
    ops = [line.split(" ", 2)[1:] for line in counted.stderr.splitlines() if line.startswith("op ")]
    assert len(ops) > 40
    # the first of each kind of step, the record, between the two publishes, the last delete
    points = sorted({next(i for i, (op, _) in enumerate(ops, 1) if op == kind)
                     for kind in ("open_write", "put", "move", "delete")}
                    | {i for i, (op, path) in enumerate(ops, 1) if op == "put" and path.endswith(".json")}
                    | {i for i, (op, _) in enumerate(ops, 1) if op == "move"} | {len(ops)})
    for at in points:
        run = copy_run(uncompacted_run, tmp_path / f"kill{at}")
        killed = kill_compact(run, at)
        assert killed.returncode == -signal.SIGKILL, (at, killed.stderr[-2000:])
        assert_same_tables(run, expected, raw=False)
        for eid in ("oracle-keydoor-10-0", "random-switch-8-0"):
            assert replay(run, eid).ok
        again = subprocess.run([sys.executable, "-m", "app.cli", "compact", str(run)], cwd=ROOT,
                               capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-2000:]
        assert_same_tables(run, expected)
        assert not list(run.rglob("*.tmp"))


def test_clean_partial_leaves_other_folders_alone(uncompacted_run, tmp_path):
    run = copy_run(uncompacted_run, tmp_path / "run")
    (run / "partial").mkdir()
    (run / "partial" / "abc.jsonl").write_text("{}\n")
    (run / "partial" / ".x.tmp").write_text("")
    (run / "steps" / "orphan.parquet").write_bytes((run / "steps" / "oracle-scale-8-0.parquet").read_bytes())
    removed = {p.name for p in clean_partial(run)}
    assert removed == {"orphan.parquet"}
    compact(run)
    assert sorted(p.name for p in (run / "partial").iterdir()) == [".x.tmp", "abc.jsonl"]


def test_table_files_names_each_episode_once(uncompacted_run, tmp_path):
    run = copy_run(uncompacted_run, tmp_path / "run")
    before = table_files(run, "episodes")
    assert before.record is None and not before.compacted and len(before.per_episode) == 19
    compact(run)
    after = table_files(run, "episodes")
    assert after.record is not None and len(after.compacted) == 1 and not after.per_episode


def test_compact_command_bad_input_and_summary(uncompacted_run, tmp_path):
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "app.cli", "compact", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})

    missing = cli(str(tmp_path / "nope"))
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1 and "no such run" in missing.stderr
    secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
    refused = cli(f"s3://AKIAEXAMPLE:{secret}@bucket/runs/main")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "credentials in the URI" in refused.stderr and secret not in refused.stderr
    assert "AKIAEXAMPLE" not in refused.stderr
    refused = cli(f"s3://bucket/runs/main?secret_key={secret}")
    assert refused.returncode == 2 and secret not in refused.stderr
    assert cli("ftp://host/run").returncode == 2

    run = copy_run(uncompacted_run, tmp_path / "run")
    done = cli(str(run))
    assert done.returncode == 0, done.stderr
    assert "packed 19 episodes into 1 episodes files" in done.stdout
    again = cli(str(run))
    assert again.returncode == 0 and "already compact" in again.stdout
