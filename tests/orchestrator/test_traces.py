"""Parquet traces without Ray: atomic files, reading back with pandas and DuckDB, partial-run
cleanup, and replay that catches a trace that does not reproduce."""

from __future__ import annotations

import asyncio
import os

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agents import Protocol, build_agent
from env import resolve_mazes
from env.errors import BadInput
from episodes.episode import run_episode
from episodes.replay import replay, write_gif
from traces import (
    EpisodeIdentity,
    EpisodeRecord,
    clean_partial,
    completed_ids,
    episodes_frame,
    read_episodes,
    read_manifest,
    read_run,
    write_episode,
    write_manifest,
)
from traces._schema import EPISODES, STEPS


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, maze_dir):
    """A run of three built-in agents on the test mazes, written episode by episode."""
    out = tmp_path_factory.mktemp("run")
    mazes = resolve_mazes(str(maze_dir))
    protocol = Protocol.preset("gridbench-final")
    for m in mazes:
        for name in ("oracle", "random", "explorer"):
            agent = build_agent(f"builtin/{name}", protocol, seed=1)
            identity = EpisodeIdentity(run="t", episode_id=f"{name}-{m.id}", model_name=name,
                                       model=f"builtin/{name}", condition="default", repeat=0, maze_id=m.id)
            result = asyncio.run(run_episode(m, agent, protocol, identity))
            write_episode(out, result)
    write_manifest(out, run="t", sweep={"name": "t"}, mazes={m.checksum: m.to_dict() for m in mazes},
                   invocation={"command": ["test"]})
    return out


def test_rows_in_memory_read_like_the_files(run_dir):
    """The driver's summary of a run is built from the rows it wrote, not by reading them back."""
    on_disk = read_episodes(run_dir)
    in_memory = episodes_frame(EpisodeRecord.from_row(r) for r in pq.read_table(run_dir / "episodes").to_pylist())
    pd.testing.assert_frame_equal(in_memory.sort_values("episode_id", ignore_index=True),
                                  on_disk.sort_values("episode_id", ignore_index=True))
    some = set(on_disk["episode_id"][:4]) | {"no-such-episode"}
    assert set(read_episodes(run_dir, ids=some)["episode_id"]) == some - {"no-such-episode"}


def test_traces_read_with_pandas_duckdb_and_the_fixed_schemas(run_dir):
    episodes = pd.read_parquet(run_dir / "episodes")
    steps = pd.read_parquet(run_dir / "steps")
    assert len(episodes) == 18 and episodes["episode_id"].is_unique
    assert steps.groupby("episode_id").size().to_dict() == episodes.set_index("episode_id")["steps"].to_dict()
    assert pq.read_schema(next((run_dir / "steps").glob("*.parquet"))).equals(STEPS, check_metadata=False)
    assert pq.read_schema(next((run_dir / "episodes").glob("*.parquet"))).equals(EPISODES, check_metadata=False)
    solved = duckdb.sql(
        f"SELECT model_name, sum(solved::INT) FROM read_parquet('{run_dir}/episodes/*.parquet') GROUP BY 1"
    ).fetchall()
    assert dict(solved)["oracle"] == 6
    n_steps = duckdb.sql(f"SELECT count(*) FROM read_parquet('{run_dir}/steps/*.parquet')").fetchall()[0][0]
    assert n_steps == len(steps)
    e2, s2 = read_run(run_dir)
    assert len(e2) == 18 and len(s2) == len(steps)
    manifest = read_manifest(run_dir)
    assert manifest["git"]["commit"] and "ray" in manifest["packages"] and manifest["host"]["cpus"]
    assert len(manifest["mazes"]) == 6


def test_rewriting_an_episode_replaces_it_and_partial_files_are_cleaned(run_dir, tmp_path):
    work = tmp_path / "copy"
    for sub in ("episodes", "steps"):
        (work / sub).mkdir(parents=True)
        for f in (run_dir / sub).glob("*.parquet"):
            (work / sub / f.name).write_bytes(f.read_bytes())
    eid = "oracle-scale-8"
    # a killed driver: the steps file was renamed but the episodes file never was, plus a temp file
    (work / "episodes" / f"{eid}.parquet").unlink()
    (work / "episodes" / f".{eid}.parquet.123.tmp").write_bytes(b"PAR1 half a file")
    assert eid not in completed_ids(work)
    removed = {p.name for p in clean_partial(work)}
    assert removed == {f"{eid}.parquet", f".{eid}.parquet.123.tmp"}
    assert len(pd.read_parquet(work / "steps")) == len(pd.read_parquet(run_dir / "steps")) - 21
    # writing the same episode twice leaves one row
    table = pq.read_table(run_dir / "episodes" / "random-scale-8.parquet")
    assert table.num_rows == 1
    assert not any(p.name.endswith(".tmp") for p in (run_dir / "episodes").iterdir())


def test_write_episode_with_a_bad_row_writes_nothing(tmp_path, run_dir):
    from dataclasses import replace

    from episodes.episode import EpisodeResult

    good = EpisodeRecord.from_row(pq.read_table(run_dir / "episodes").to_pylist()[0])
    with pytest.raises((pa.ArrowInvalid, pa.ArrowTypeError, TypeError)):
        write_episode(tmp_path, EpisodeResult(replace(good, steps="many"), []))
    assert not list(tmp_path.rglob("*.parquet")) and not list(tmp_path.rglob("*.tmp"))


def test_replay_verifies_every_episode_and_catches_a_tampered_trace(run_dir, tmp_path):
    for eid in ("oracle-keydoor-10", "random-distract-10", "explorer-switch-8"):
        result = replay(run_dir, eid)
        assert result.ok, result.mismatches[:3]
        assert len(result.states) == result.episode["steps"] + 1
    gif = write_gif(result, tmp_path / "e.gif", tile_size=8)
    assert gif.stat().st_size > 1000
    # move one recorded position: replay must name the step and the column
    tampered = tmp_path / "tampered"
    os.makedirs(tampered / "steps")
    os.makedirs(tampered / "episodes")
    (tampered / "manifest.json").write_bytes((run_dir / "manifest.json").read_bytes())
    eid = "oracle-keydoor-10"
    (tampered / "episodes" / f"{eid}.parquet").write_bytes((run_dir / "episodes" / f"{eid}.parquet").read_bytes())
    steps = pq.read_table(run_dir / "steps" / f"{eid}.parquet").to_pandas()
    steps.loc[4, "mechanisms"] = steps.loc[4, "mechanisms"].replace("locked", "open")
    pq.write_table(pa.Table.from_pandas(steps, schema=STEPS, preserve_index=False),
                   tampered / "steps" / f"{eid}.parquet")
    bad = replay(tampered, eid)
    assert not bad.ok and bad.mismatches[0].step == 5 and bad.mismatches[0].column == "mechanisms"
    with pytest.raises(BadInput, match="no episode"):
        replay(run_dir, "nope")
