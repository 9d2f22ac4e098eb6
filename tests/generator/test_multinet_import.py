import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from env.errors import BadInput
from env.importers import import_maze
from env.importers.multinet import ConversionWarning, convert
from env.oracle import solve

DATA = Path(__file__).parent / "data"


def test_key_door_file_converts_with_the_border_and_the_consumption_warning():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = import_maze(f"multinet:{DATA / 'multinet_key_door.json'}")
    assert [w.category for w in caught] == [ConversionWarning]
    assert "key_consumption" in str(caught[0].message)
    assert (m.width, m.height) == (7, 6) and m.grid[0] == "#######" and m.grid[1] == "#..#..#"
    assert m.start.dir == "east" and tuple(m.goal) == (5, 4)
    assert m.meta.source == "imported:multinet:multinet_key_door.json" and m.meta.multinet["key_consumption"] is True
    assert [list(s) for s in m.meta.chain] == [["key_a", "door_a"]]
    assert m.doors[0].state == "locked" and m.doors[0].color == m.keys[0].color == "yellow"
    assert solve(m).status == "solved"


def test_switch_gate_file_converts_and_its_gate_is_needed():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no key consumption: no warning at all
        m = import_maze(f"multinet:{DATA / 'multinet_switch_gate.json'}")
    assert m.switches[0].controls == ("gate1",) and m.gates[0].color == m.switches[0].color
    assert [list(s) for s in m.meta.chain] == [["sw1", "gate1"]]
    assert m.meta.multinet["key_consumption"] is False


BASE = {"maze": {"dimensions": [6, 5], "walls": [], "start": [1, 1], "goal": [4, 3]}}


@pytest.mark.parametrize("extra,field", [
    ({"blocks": [{"position": [2, 2]}]}, "blocks"),
    ({"hazards": [{"position": [2, 2]}]}, "hazards"),
    ({"mechanisms": {"teleporters": [{"id": "t"}]}}, "mechanisms.teleporters"),
    ({"mechanisms": {"switches": [{"id": "s", "position": [2, 2], "controls": [], "switch_type": "hold"}]}},
     "mechanisms.switches[0].switch_type"),
    ({"mechanisms": {"keys": [{"id": "k", "position": [9, 9], "color": "red"}]}}, "mechanisms.keys[0].position"),
    ({"mechanisms": {"keys": [{"id": "k", "position": [2, 2], "color": "orange"}]}}, "mechanisms.keys[0].color"),
    ({"mechanisms": {"gates": [{"id": "g", "position": [2, 2], "initial_state": "open"}]}},
     "mechanisms.gates[0].initial_state"),
])
def test_what_gridbench_cannot_express_is_refused_in_one_line(extra, field):
    doc = {**BASE, **extra}
    with pytest.raises(BadInput) as e:
        convert(doc, "multinet:t.json", "t")
    assert e.value.field == field and "\n" not in str(e.value)


def test_cli_refuses_a_teleporter_file_with_exit_2_and_writes_nothing(tmp_path):
    out = tmp_path / "m.json"
    r = subprocess.run([sys.executable, "-m", "orchestrator.cli", "maze", "import",
                        f"multinet:{DATA / 'multinet_teleporter.json'}", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "teleporters" in r.stderr
    assert not out.exists()


def test_cli_converts_and_warns_in_one_line(tmp_path):
    out = tmp_path / "m.json"
    r = subprocess.run([sys.executable, "-m", "orchestrator.cli", "maze", "import",
                        f"multinet:{DATA / 'multinet_key_door.json'}", "--out", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0 and out.is_file()
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "key_consumption" in lines[0]
