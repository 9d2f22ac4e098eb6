"""Every field of the study's task format is read or refused by name (issue 33): a document holding
every field converts, each field fed a value gridbench cannot play as the study did is refused in
one line naming that field, each descriptive field changes nothing in the game, and a field the
format does not have is refused wherever it sits. On the command line: one line, exit code 2."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from env.errors import BadInput
from env.generator.maze_pool import content_key
from env.importers.study import FIELDS, convert

GRID_WALLS = [[4, 1], [4, 2], [4, 3]]


def full_doc() -> dict:
    """A later-harness task file with one of everything, every field of ``FIELDS`` given."""
    return {
        "task_id": "every_field", "version": "1.0", "seed": 3, "difficulty_tier": 6,
        "description": "one of every mechanism", "max_steps": 1000,
        "dependency_chain": {"depth": 1, "notation": "kr", "sequence": []}, "distractors": [],
        "metadata": {"chain_pattern": "kr"},
        "maze": {"dimensions": [12, 8], "walls": GRID_WALLS, "start": [1, 1], "goal": [10, 6]},
        "mechanisms": {
            "keys": [{"id": "kR", "position": [2, 1], "color": "red"}],
            "doors": [{"id": "DR", "position": [4, 4], "color": "red", "requires_key": "red",
                       "initial_state": "locked"}],
            "switches": [{"id": "s1", "position": [2, 5], "controls": ["g1"], "color": "yellow",
                          "switch_type": "toggle", "initial_state": "off"}],
            "gates": [{"id": "g1", "position": [4, 5], "color": "black", "initial_state": "closed"}],
            "blocks": [{"id": "b1", "position": [7, 1], "color": "blue", "pushable": False}],
            "hazards": [{"id": "h1", "position": [7, 2], "hazard_type": "lava"}],
            "teleporters": [{"id": "p1", "position_a": [1, 6], "position_b": [8, 6], "color": "cyan",
                             "bidirectional": True}],
            "kill_cells": [[6, 3]],
            "death_portals": [[6, 4]],
            "frozen_tiles": [[9, 3]],
            "freeze_steps": 4,
            "rotating_tiles": [[8, 4]],
            "rotating_initial_directions": [2],
        },
        "rules": {"key_consumption": True, "switch_type": "toggle", "hidden_mechanisms": [],
                  "observability": "full", "view_size": 7},
        "goal": {"type": "reach_position", "target": [10, 6], "auxiliary_conditions": []},
    }


def fields_of(doc: dict) -> set[tuple[str, str]]:
    """(table of FIELDS, field) of every field ``doc`` holds."""
    out = {("", k) for k in doc}
    out |= {("maze", k) for k in doc["maze"]} | {("mechanisms", k) for k in doc["mechanisms"]}
    out |= {("rules", k) for k in doc["rules"]} | {("goal", k) for k in doc["goal"]}
    for name, items in doc["mechanisms"].items():
        if name in FIELDS:
            out |= {(name, k) for item in items for k in item}
    return out


# the other spellings of the same thing, fed by nested_doc()
ALIASES = {("", "id"), ("", "name"), ("goal", "goal_type"), ("maze", "layout"), ("maze", "mechanisms"),
           ("maze.layout", "walls"), ("maze.layout", "start"), ("maze.layout", "goal")}


def nested_doc() -> dict:
    doc = full_doc()
    del doc["task_id"]
    doc["id"], doc["name"] = "every_field", "every field"
    maze = doc["maze"]
    doc["maze"] = {"dimensions": maze["dimensions"], "mechanisms": doc.pop("mechanisms"),
                   "layout": {"walls": maze["walls"], "start": maze["start"], "goal": maze["goal"]}}
    doc["goal"] = {"goal_type": "reach_position", "target": [10, 6], "auxiliary_conditions": []}
    return doc


def test_the_documents_feed_every_field_of_the_format():
    every = {(table, f) for table, names in FIELDS.items() for f in names}
    nested = nested_doc()
    fed = fields_of(full_doc()) | {("", k) for k in nested} | {("goal", k) for k in nested["goal"]}
    fed |= {("maze", k) for k in nested["maze"]} | {("maze.layout", k) for k in nested["maze"]["layout"]}
    assert fed == every and ALIASES <= fed


def test_a_document_with_every_field_converts_and_every_mechanism_is_read():
    m = convert(full_doc(), "multinet:every.json", "every")
    assert m.ruleset == "multinet-pr57" and m.rulebook.freeze_steps == 4
    kinds = sorted(o.kind for o in m.objects)
    assert kinds == sorted(["key", "door", "switch", "gate", "block", "hazard", "teleporter", "kill", "kill",
                            "frozen", "turntable"])
    (t,) = m.of_kind("turntable")
    assert (t.pos, t.dir) == ((8, 4), "west") and m.of_kind("teleporter")[0].color == "cyan"
    assert {o.id for o in m.objects if o.kind == "kill"} == {"kill0", "death0"}
    nested = convert(nested_doc(), "multinet:nested.json", "every")
    assert content_key(nested) == content_key(m)


LABELS = [("version", "2.0"), ("seed", 99), ("description", "another text"), ("max_steps", 140),
          ("dependency_chain", {}), ("distractors", [{"type": "key"}]), ("difficulty_tier", 1),
          ("metadata", {"anything": 1}), ("task_id", "renamed")]


@pytest.mark.parametrize("field,value", LABELS)
def test_a_descriptive_field_changes_nothing_in_the_game(field, value):
    doc = full_doc()
    doc[field] = value
    assert content_key(convert(doc, "multinet:t.json", "t")) == content_key(convert(full_doc(), "multinet:t.json", "t"))


def _set(doc: dict, path: str, value) -> None:
    parts = path.replace("]", "").replace("[", ".").split(".")
    node = doc
    for p in parts[:-1]:
        node = node[int(p)] if p.isdigit() else node[p]
    last = parts[-1]
    node[int(last) if last.isdigit() else last] = value


REFUSED = [
    ("maze.dimensions", "x"), ("maze.walls", 5), ("maze.start", [0, 0]), ("maze.goal", [99, 1]),
    ("mechanisms.keys[0].id", True), ("mechanisms.keys[0].position", [99, 99]), ("mechanisms.keys[0].color", "orange"),
    ("mechanisms.doors[0].id", None), ("mechanisms.doors[0].position", [4, 1]),
    ("mechanisms.doors[0].requires_key", "orange"), ("mechanisms.doors[0].initial_state", 5),
    ("mechanisms.switches[0].id", None), ("mechanisms.switches[0].position", "here"),
    ("mechanisms.switches[0].controls", "g1"), ("mechanisms.switches[0].color", "orange"),
    ("mechanisms.switches[0].switch_type", "pressure"), ("mechanisms.switches[0].initial_state", "maybe"),
    ("mechanisms.gates[0].id", None), ("mechanisms.gates[0].position", [0, 5]),
    ("mechanisms.gates[0].initial_state", "ajar"),
    ("mechanisms.teleporters[0].id", None), ("mechanisms.teleporters[0].position_a", [2, 1]),
    ("mechanisms.teleporters[0].position_b", [4, 2]), ("mechanisms.teleporters[0].color", "orange"),
    ("mechanisms.teleporters[0].bidirectional", "yes"),
    ("mechanisms.blocks[0].id", None), ("mechanisms.blocks[0].position", [10, 6]),
    ("mechanisms.blocks[0].color", "orange"), ("mechanisms.blocks[0].pushable", True),
    ("mechanisms.hazards[0].id", None), ("mechanisms.hazards[0].position", [4, 3]),
    ("mechanisms.hazards[0].hazard_type", "fire"),
    ("mechanisms.kill_cells[0]", [4, 1]), ("mechanisms.death_portals[0]", "x"), ("mechanisms.frozen_tiles[0]", [2, 1]),
    ("mechanisms.freeze_steps", 0), ("mechanisms.rotating_tiles[0]", [4, 2]),
    ("mechanisms.rotating_initial_directions[0]", 4), ("mechanisms.rotating_initial_directions", [0, 1]),
    ("rules.key_consumption", "yes"), ("rules.switch_type", "pressure"), ("rules.hidden_mechanisms", ["kR"]),
    ("rules.observability", "partial"), ("rules.view_size", "wide"),
    ("goal.type", "collect_all"), ("goal.target", [4, 1]), ("goal.auxiliary_conditions", ["keys_collected"]),
]


@pytest.mark.parametrize("path,value", REFUSED)
def test_a_value_gridbench_cannot_play_is_refused_by_its_field(path, value):
    doc = full_doc()
    _set(doc, path, value)
    with pytest.raises(BadInput) as e:
        convert(doc, "multinet:t.json", "t")
    assert e.value.field == path and "\n" not in str(e.value)


@pytest.mark.parametrize("where", ["", "maze", "mechanisms", "rules", "goal", "mechanisms.keys[0]",
                                   "mechanisms.doors[0]", "mechanisms.switches[0]", "mechanisms.gates[0]",
                                   "mechanisms.teleporters[0]", "mechanisms.blocks[0]", "mechanisms.hazards[0]"])
def test_a_field_the_format_does_not_have_is_refused_wherever_it_sits(where):
    doc = full_doc()
    _set(doc, f"{where}.conveyors" if where else "conveyors", [[3, 3]])
    with pytest.raises(BadInput) as e:
        convert(doc, "multinet:t.json", "t")
    assert e.value.field == (f"{where}.conveyors" if where else "conveyors")
    assert "refused rather than played as another maze" in e.value.message


def test_r1_files_keep_r1_and_refuse_turntables_when_r1_is_asked_for():
    doc = full_doc()
    for name in ("death_portals", "rotating_tiles", "rotating_initial_directions"):
        del doc["mechanisms"][name]
    del doc["mechanisms"]["teleporters"][0]["color"]
    m = convert(doc, "multinet:t.json", "t")
    assert m.ruleset == "multinet-r1" and m.of_kind("teleporter")[0].color == "purple"  # as R1 drew every teleporter
    with pytest.raises(BadInput) as e:
        convert(full_doc(), "multinet:t.json", "t", ruleset="multinet-r1")
    assert e.value.field == "mechanisms.rotating_tiles"
    pushed = copy.deepcopy(doc)
    pushed["mechanisms"]["blocks"][0]["pushable"] = True  # R1's rulebook ignores the flag: a cell never entered
    assert convert(pushed, "multinet:t.json", "t").ruleset == "multinet-r1"


def test_the_command_line_refuses_in_one_line_with_exit_code_2(tmp_path: Path):
    doc = full_doc()
    doc["mechanisms"]["conveyors"] = []
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "out.json"
    r = subprocess.run([sys.executable, "-m", "app.cli", "maze", "import", f"multinet:{f}", "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and not out.exists()
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "mechanisms.conveyors" in lines[0]


def test_rule_sets_a_setting_of_every_maze_and_a_setting_its_ruleset_lacks_is_refused(tmp_path: Path):
    """``--rule NAME=VALUE`` sets a field of every imported maze's rules (each mechanic declares its
    own, ``Mechanic.settings``); a value the maze's ruleset does not have is refused in one line
    naming the field, with exit code 2 and nothing written."""
    f = tmp_path / "later.json"
    f.write_text(json.dumps(full_doc()), encoding="utf-8")

    def run(*rules: str, src: Path = f) -> subprocess.CompletedProcess:
        out = tmp_path / "out.json"
        out.unlink(missing_ok=True)
        return subprocess.run([sys.executable, "-m", "app.cli", "maze", "import", f"multinet:{src}", "--out", str(out),
                               *(a for rule in rules for a in ("--rule", rule))], capture_output=True, text=True,
                              timeout=120)

    assert run("death=fail", "freeze_steps=7").returncode == 0
    written = json.loads((tmp_path / "out.json").read_text())
    assert written["rules"]["death"] == "fail" and written["rules"]["freeze_steps"] == 7
    assert run().returncode == 0 and "death" not in json.loads((tmp_path / "out.json").read_text())["rules"]
    r1 = tmp_path / "r1.json"
    r1.write_text((Path(__file__).parent / "data" / "multinet_key_door.json").read_text(), encoding="utf-8")
    for rules, field in ((("death=fail",), "rules.death"), (("death=sometimes",), "rules.death"),
                         (("fail",), "--rule")):
        r = run(*rules, src=r1 if rules == ("death=fail",) else f)
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        assert r.returncode == 2 and len(lines) == 1 and field in lines[0], (rules, r.stderr)
        assert not (tmp_path / "out.json").exists()
