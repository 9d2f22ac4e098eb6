"""``gridbench maze solve|check|import`` through the real command line."""

from __future__ import annotations

import json
import subprocess
import sys

from test_oracle_checks import _choke_maze

import env


def gridbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True,
                          env={"COLUMNS": "200", "PATH": ""})


def test_solve_json_gives_optimum_plan_and_effort():
    r = gridbench("maze", "solve", "example", "--json")
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout.strip())
    assert row["status"] == "solved" and row["optimal_actions"] == 19 == len(row["plan"])
    assert row["states_explored"] > 19 and row["seconds"] >= 0


def test_check_table_and_exit_codes(tmp_path):
    bad = tmp_path / "choke.json"
    env.save_maze(_choke_maze(["kd"]), bad)
    r = gridbench("maze", "check", "example", str(bad))
    assert r.returncode == 1
    assert "FAIL" in r.stdout and "kd" in r.stdout and "2 maze(s) checked, 1 failing" in r.stdout
    assert gridbench("maze", "check", "example").returncode == 0


def test_import_writes_a_valid_maze_and_bad_source_exits_2(tmp_path):
    out = tmp_path / "dk.json"
    r = gridbench("maze", "import", "minigrid:MiniGrid-DoorKey-5x5-v0@1", "--out", str(out))
    assert r.returncode == 0, r.stderr
    m = env.load_maze(out)
    assert m.meta.source == "imported:minigrid:MiniGrid-DoorKey-5x5-v0@1"
    r = gridbench("maze", "import", "nowhere:thing", "--out", str(tmp_path / "x.json"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.json").exists()
