"""``gridbench export``: a run as a Hugging Face dataset folder (docs/export.md) that reads back
as the run: its shards and card, bad input, and the report of the export equal to the run's."""

from __future__ import annotations

import json
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from tracefab import demo_run, play, room_maze, write_run

from app.cli import main
from env import resolve_maze
from traces import export_run, is_export, read_run
from traces._export import GRIDBENCH_LICENCE, card_licence, maze_licence
from traces._schema import SCHEMAS

ROOT = Path(__file__).resolve().parents[2]
STUDY_MAZE = "study-heldout/validation_10_v01_empty_room"  # MIT, the MultiNet study's


def _sorted(table: pa.Table) -> pd.DataFrame:
    keys = ["episode_id", "step"] if "step" in table.column_names else ["episode_id"]
    return table.to_pandas().sort_values(keys).reset_index(drop=True)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    """Two biased random walkers on a room of gridbench's own (Apache-2.0) and one of the study's (MIT)."""
    mazes = [room_maze(5), resolve_maze(STUDY_MAZE)]
    run = demo_run(tmp_path_factory.mktemp("results") / "small", mazes,
                   {"walker": (1, 1, 6, 1, 1, 0.1), "turner": (4, 4, 2, 1, 1, 0.1)}, seed=5, max_steps=16)
    # the command that wrote it, with places on the machine that ran it, as a manifest records it
    manifest = json.loads((run / "manifest.json").read_text())
    manifest.setdefault("invocations", []).append({"at": "2026-12-07T10:00:00+00:00", "command": [
        "gridbench", "run", "small.yaml", "--out", "/home/alice/results", "--address", "10.1.2.3:6379"]})
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


@pytest.fixture(scope="module")
def exported(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("exports") / "small-hf"
    return export_run(run, out, shard_bytes=4096)  # small shards: the steps table takes several


def front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    head, _, _ = card[4:].partition("\n---\n")
    return yaml.safe_load(head)


def test_the_export_is_shards_a_card_and_the_manifest(run, exported):
    folder = exported.folder
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    shards = {t: [f for f in files if f.startswith(f"data/{t}-")] for t in ("episodes", "steps")}
    assert files == sorted(["README.md", "manifest.json", *shards["episodes"], *shards["steps"]])
    assert shards == exported.shards and len(shards["steps"]) > 1
    n = len(shards["steps"])
    assert shards["steps"] == [f"data/steps-{i:05d}-of-{n:05d}.parquet" for i in range(n)]
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temporary sibling left

    card = (folder / "README.md").read_text()
    meta = front_matter(card)
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert set(configs) == {"episodes", "steps"} and configs["episodes"].get("default") is True
    for table, config in configs.items():
        (entry,) = config["data_files"]
        assert entry["split"] == "train"
        assert [f for f in files if fnmatch(f, entry["path"])] == shards[table]
    # two licences among the mazes: `other`, and the card names both
    assert exported.licences == {GRIDBENCH_LICENCE: 1, "MIT, Copyright (c) 2026 Manifold Research Group": 1}
    assert meta["license"] == exported.licence == "other"
    assert "gridbench" in meta["tags"] and meta["pretty_name"] == "gridbench run small"
    assert GRIDBENCH_LICENCE in card and "MIT, Copyright (c) 2026 Manifold Research Group" in card
    assert "ManifoldRG/MultiNet-v2.0" in card  # the study maze's provenance
    for part in ("## Schema", "| `termination` | string |", "| `action` | string |", "load_dataset(", "pd.read_parquet",
                 "maze set checksum", "$", "`walker` (openai/fabricated)"):
        assert part in card, part

    # the card is published: the command is shown without the places it names on the machine that ran it
    assert "`gridbench run small.yaml --out <out> --address <address>`" in card
    assert "/home/alice" not in card and "10.1.2.3" not in card

    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["mazes"] == json.loads((run / "manifest.json").read_text())["mazes"]


def test_the_shards_hold_the_runs_rows_with_its_schema(run, exported):
    episodes, steps = read_run(run)
    for table, frame in (("episodes", episodes), ("steps", steps)):
        parts = [pq.read_table(exported.folder / p) for p in exported.shards[table]]
        assert all(p.schema.equals(SCHEMAS[table]) for p in parts)
        back = pa.concat_tables(parts)
        assert back.num_rows == len(frame) == exported.rows[table]
        pd.testing.assert_frame_equal(_sorted(back), _sorted(pa.Table.from_pandas(frame, schema=SCHEMAS[table])))


def test_the_export_reads_back_as_the_run(run, exported):
    assert is_export(exported.folder) and not is_export(run)
    for a, b in zip(read_run(run), read_run(exported.folder), strict=True):
        pd.testing.assert_frame_equal(_sorted(pa.Table.from_pandas(a)), _sorted(pa.Table.from_pandas(b)))


def test_the_report_of_the_export_is_the_report_of_the_run(run, exported):
    """The report's tables (its CSV files and metrics.json's) and headline, built from the run and
    from its export."""
    import matplotlib.pyplot as plt

    from analysis.load import load_runs
    from analysis.report import sections
    from analysis.steps import annotate

    def report(where: Path) -> tuple[dict, dict]:
        traces = load_runs([where])
        assert all(traces.mazes.values())  # the mazes came from the export's manifest
        shown, head = sections(traces, annotate(traces))
        plt.close("all")  # the figures are not compared
        return {name: df.to_csv(index=False) for _, built in shown for name, df in built.tables.items()}, head

    tables, head = report(run)
    tables_x, head_x = report(exported.folder)
    assert head_x == head and head["episodes"] == 4
    assert tables_x.keys() == tables.keys() and len(tables) > 10
    for name in tables:
        assert tables_x[name] == tables[name], name


def test_an_incomplete_export_is_one_line_of_bad_input(exported, tmp_path, capsys):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(exported.folder, broken)
    (broken / exported.shards["steps"][0]).unlink()
    with pytest.raises(SystemExit) as exit_:
        main(["report", str(broken)])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2 and len(err.splitlines()) == 1 and "shards are incomplete" in err
    assert not (broken / "report").exists()


def _refused(capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(["export", *args])
    err = capsys.readouterr().err.strip()
    assert exit_.value.code == 2, err
    assert len(err.splitlines()) == 1, err
    return err


def test_bad_input_is_one_line_exit_2_and_writes_nothing(run, exported, tmp_path, capsys):
    out = tmp_path / "out"
    assert "no such run folder" in _refused(capsys, str(tmp_path / "missing"), "--out", str(out))
    (tmp_path / "empty").mkdir()
    assert "not a gridbench run" in _refused(capsys, str(tmp_path / "empty"), "--out", str(out))
    write_run(tmp_path / "bare", [], [])  # tables but no manifest
    assert "manifest.json" in _refused(capsys, str(tmp_path / "bare"), "--out", str(out))
    assert "local folder" in _refused(capsys, str(run), "--out", "s3://bucket/export")
    assert "is the run's folder" in _refused(capsys, str(run), "--out", str(run.parent), "--force")
    assert not out.exists()

    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    assert "--force" in _refused(capsys, str(run), "--out", str(taken))
    assert "not a gridbench export" in _refused(capsys, str(run), "--out", str(taken), "--force")
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]
    damaged = write_run(tmp_path / "damaged", [], [])
    (damaged / "manifest.json").write_text("{}")
    (damaged / "steps" / "x.parquet").write_bytes(b"not parquet")
    assert "unreadable trace files" in _refused(capsys, str(damaged), "--out", str(out))
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bare", "damaged", "empty", "taken"]  # no temporary folder

    earlier = tmp_path / "earlier"
    export_run(run, earlier)
    assert "not empty" in _refused(capsys, str(run), "--out", str(earlier))
    main(["export", str(run), "--out", str(earlier), "--force"])  # an earlier export is replaced whole
    assert "4 episodes and" in capsys.readouterr().out
    assert is_export(earlier)


def test_the_licence_of_each_maze_and_of_the_card():
    assert maze_licence({"meta": {"source": "generated"}}) == GRIDBENCH_LICENCE
    assert maze_licence({"grid": []}) == GRIDBENCH_LICENCE  # hand-made
    assert maze_licence({"meta": {"source": "imported:minigrid:x"}}) == "unknown"
    assert maze_licence(None) == "unknown"
    assert card_licence({"MIT, Copyright (c) 2026 Someone": 3}) == "mit"
    assert card_licence({GRIDBENCH_LICENCE: 2}) == "apache-2.0"
    assert card_licence({"MIT": 1, GRIDBENCH_LICENCE: 1}) == "other"
    assert card_licence({"unknown": 1}) == "other"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert GRIDBENCH_LICENCE == project


def test_a_blank_run_column_keeps_the_runs_name(tmp_path):
    """A run whose rows leave ``run`` blank is named by its folder (analysis.load); its export, in
    a folder of another name, carries that name in the rows, so the report names it the same."""
    from analysis.load import load_runs

    maze = room_maze(5)
    row, steps = play(maze, ["forward", "right", "forward"], run="")
    source = write_run(tmp_path / "blank", [row], steps)
    (source / "manifest.json").write_text(json.dumps({"format": "gridbench.run/1", "mazes": {maze.checksum: maze.to_dict()}}))
    result = export_run(source, tmp_path / "blank-hf")
    for table in ("episodes", "steps"):
        back = pa.concat_tables([pq.read_table(result.folder / p) for p in result.shards[table]])
        assert set(back.column("run").to_pylist()) == {"blank"}
    a, b = load_runs([source]), load_runs([result.folder])
    pd.testing.assert_frame_equal(a.episodes, b.episodes)


def test_an_episode_of_the_export_replays(tmp_path):
    """Replay reads the episode and its maze (from the export's manifest) as it reads them from the run."""
    import asyncio

    from agents import Protocol, build_agent
    from episodes.episode import run_episode
    from episodes.replay import replay
    from traces import EpisodeIdentity, write_episode, write_manifest

    maze, protocol = room_maze(5), Protocol.preset("gridbench-final")
    identity = EpisodeIdentity(run="one", episode_id="oracle-room5", model_name="oracle", model="builtin/oracle",
                               condition="baseline", repeat=0, maze_id=maze.id)
    write_episode(tmp_path / "one", asyncio.run(run_episode(maze, build_agent("builtin/oracle", protocol), protocol,
                                                            identity)))
    write_manifest(tmp_path / "one", run="one", sweep={"name": "one"}, mazes={maze.checksum: maze.to_dict()},
                   invocation={"command": ["test"]}, git={"commit": None, "dirty": None})
    result = export_run(tmp_path / "one", tmp_path / "one-hf")
    replayed = replay(result.folder, "oracle-room5")
    assert replayed.ok and replayed.episode["solved"] and replayed.maze.checksum == maze.checksum


def test_a_run_on_a_sealed_set_is_exported_only_when_asked_in_so_many_words(run, tmp_path, capsys):
    import shutil

    sealed = shutil.copytree(run, tmp_path / "sealed-run")
    manifest = json.loads((sealed / "manifest.json").read_text())
    seal = {"commitment": "ab" * 32, "set": "blind3"}
    (sealed / "manifest.json").write_text(json.dumps({**manifest, "sealed": seal}))
    out = tmp_path / "out"
    err = _refused(capsys, str(sealed), "--out", str(out))
    assert "manifest.json: sealed:" in err and "'blind3'" in err and "--unsealed" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sealed-run"]  # nothing written, not even a temporary
    main(["export", str(sealed), "--out", str(out), "--unsealed"])
    assert "4 episodes and" in capsys.readouterr().out
    assert json.loads((out / "manifest.json").read_text())["sealed"] == seal
