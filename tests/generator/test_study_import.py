"""MultiNet task files (the study's maze format) convert into multinet-r1 mazes, every mechanism;
what the format does not allow is refused in one line naming the file's field."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from env.errors import BadInput
from env.importers import import_maze, import_mazes
from env.importers.study import Provenance, convert
from env.oracle import solve
from env.state import initial_state, step

DATA = Path(__file__).parent / "data"


def test_key_door_file_converts_under_the_study_rules():
    m = import_maze(f"multinet:{DATA / 'multinet_key_door.json'}")
    assert m.ruleset == "multinet-r1" and m.rulebook.key_consumption is True
    assert (m.width, m.height) == (7, 6) and m.grid[0] == "#######" and m.grid[1] == "#..#..#"
    assert m.start.dir == "east" and tuple(m.goal) == (5, 4)
    assert m.meta.source == "imported:multinet:multinet_key_door.json" and m.meta.multinet["task_id"] == "mn-key-door-7x6"
    assert [list(s) for s in m.meta.chain] == [["key_a", "door_a"]] and m.category == "mechanism"
    assert m.doors[0].state == "locked" and m.doors[0].color == m.keys[0].color == "yellow"
    sol = solve(m)
    s = initial_state(m)
    for a in sol.plan:
        s, event = step(m, s, a)
    assert event == "goal" and s.carrying < 0 and s.keys == (None,)  # the key was used up


def test_switch_gate_file_keeps_its_key_rule():
    m = import_maze(f"multinet:{DATA / 'multinet_switch_gate.json'}")
    assert m.rulebook.key_consumption is False and m.switches[0].controls == ("gate1",)
    assert m.gates[0].color == "grey" and m.switches[0].color == "yellow"  # as the study drew them
    assert [list(s) for s in m.meta.chain] == [["sw1", "gate1"]]


def test_every_mechanism_converts():
    tp = import_maze(f"multinet:{DATA / 'multinet_teleporter.json'}")
    (t,) = tp.of_kind("teleporter")
    assert (t.pos, t.to, t.bidirectional) == ((3, 3), (5, 1), False)
    assert {o.kind for o in tp.objects} == {"teleporter", "hazard", "block"} and solve(tp).status == "solved"
    sw = import_maze(f"multinet:{DATA / 'multinet_switch_kinds.json'}")
    hold, once = sw.switches
    assert (hold.switch_type, hold.color, once.switch_type, once.on) == ("hold", "white", "one_shot", True)
    assert [g.open for g in sw.gates] == [True, False] and solve(sw).status == "solved"
    nested = import_maze(f"multinet:{DATA / 'multinet_nested.json'}")
    assert nested.goal == (6, 4) and nested.start.pos == (1, 1) and nested.keys[0].pos == (1, 1)
    assert nested.doors[0].state == "open" and nested.doors[0].color == "grey"  # "closed" is open under R1
    assert {o.kind for o in nested.objects} == {"key", "door", "kill", "frozen"} and nested.rulebook.freeze_steps == 3


BASE = {"maze": {"dimensions": [6, 5], "walls": [], "start": [1, 1], "goal": [4, 3]}}


@pytest.mark.parametrize("extra,field", [
    ({"mechanisms": {"keys": [{"id": "k", "position": [9, 9], "color": "red"}]}}, "mechanisms.keys[0].position"),
    ({"mechanisms": {"keys": [{"id": "k", "position": [2, 2], "color": "orange"}]}}, "mechanisms.keys[0].color"),
    ({"mechanisms": {"keys": [{"id": "k", "position": [4, 3], "color": "red"}]}}, "mechanisms.keys[0].position"),
    ({"mechanisms": {"switches": [{"id": "s", "position": [2, 2], "controls": [], "switch_type": "pressure"}]}},
     "mechanisms.switches[0].switch_type"),
    ({"mechanisms": {"switches": [{"id": "s", "position": [2, 2], "controls": ["nope"]}]}},
     "mechanisms.switches[0].controls[0]"),
    ({"mechanisms": {"doors": [{"id": "d", "position": [2, 2]}]}}, "mechanisms.doors[0].requires_key"),
    ({"mechanisms": {"gates": [{"id": "g", "position": [2, 2], "initial_state": "ajar"}]}},
     "mechanisms.gates[0].initial_state"),
    ({"mechanisms": {"teleporters": [{"id": "t", "position_a": [2, 2], "position_b": [2, 2]}]}},
     "mechanisms.teleporters[0].position_b"),
    ({"goal": {"type": "collect_all", "target_ids": []}}, "goal.type"),
])
def test_what_the_format_does_not_allow_is_refused_in_one_line(extra, field):
    doc = {**BASE, **extra}
    with pytest.raises(BadInput) as e:
        convert(doc, "multinet:t.json", "t")
    assert e.value.field == field and "\n" not in str(e.value)


def test_a_folder_imports_with_family_ids_and_provenance(tmp_path):
    src = tmp_path / "maze_jsons"
    for family, name in (("M1", "multinet_key_door.json"), ("B1", "multinet_switch_gate.json")):
        (src / family).mkdir(parents=True)
        (src / family / "8x8_x_0.json").write_text((DATA / name).read_text())
    prov = Provenance(repository="ManifoldRG/ogbench", commit="0" * 40, path="ogbench/procgen/maze_jsons",
                      licence="MIT")
    mazes = import_mazes(f"multinet:{src}", prov)
    assert [m.id for m in mazes] == ["B1_8x8_x_0", "M1_8x8_x_0"]
    assert mazes[1].meta.provenance == {"repository": "ManifoldRG/ogbench",
                                        "path": "ogbench/procgen/maze_jsons/M1/8x8_x_0.json",
                                        "commit": "0" * 40, "licence": "MIT"}


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "app.cli", "maze", "import", *args],
                          capture_output=True, text=True)


def test_cli_imports_a_folder_and_writes_nothing_when_one_file_is_bad(tmp_path):
    src = tmp_path / "in"
    src.mkdir()
    for name in ("multinet_key_door.json", "multinet_teleporter.json"):
        (src / name).write_text((DATA / name).read_text())
    r = _cli(f"multinet:{src}", "--out", str(tmp_path / "out"), "--from-repo", "ManifoldRG/ogbench")
    assert r.returncode == 0 and sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "multinet_key_door.json", "multinet_teleporter.json"]
    assert json.loads((tmp_path / "out" / "multinet_key_door.json").read_text())["ruleset"] == "multinet-r1"
    (src / "z_bad.json").write_text(json.dumps({**BASE, "goal": {"type": "survive_steps"}}))
    r = _cli(f"multinet:{src}", "--out", str(tmp_path / "out2"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "goal.type" in r.stderr
    assert not (tmp_path / "out2").exists()


def test_cli_prints_one_maze_and_refuses_provenance_for_other_sources():
    r = _cli(f"multinet:{DATA / 'multinet_key_door.json'}")
    assert r.returncode == 0 and json.loads(r.stdout)["id"] == "mn-key-door-7x6" and r.stderr == ""
    r = _cli("minigrid:MiniGrid-Empty-5x5-v0", "--from-commit", "abc")
    assert r.returncode == 2 and "multinet" in r.stderr
