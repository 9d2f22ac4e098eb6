"""The mechanics registry (env.mechanics): one module per mechanic, and every list of kinds,
removal twins, generator tiles and study fields read off it. The lists below are the values the
code held before the registry (commit fb21cfb), so the move changed none of them, with the two
mechanics added since (``oneway``, ``reverser``) appended to each, after the others.

The box maze is the study's ogbench M7 ``18x18_dense_kr_sg_kb_box_0.json`` (MIT, Manifold Research
Group), kept here as the study published it."""

import importlib
import json
from pathlib import Path

import numpy as np
import pytest

from analysis.twins import REMOVED_MECHANISM
from app.cli import main as cli_main
from env.discovery import KINDS as DISCOVERY_KINDS
from env.discovery import LATER_KINDS as LATER_DISCOVERY_KINDS
from env.generator.generator import TILE_OBJECT, TILE_TWIN, TILES
from env.importers.study import FIELDS, LATER_FIELDS
from env.maze import KINDS, PR57_KINDS, R1_KINDS, STUDY_KINDS, load_maze
from env.mechanics import MECHANICS, by_name, of_kind, removal_twins
from env.variants import ABLATIONS, TILE_REMOVALS
from env.variants import KINDS as VARIANT_KINDS

BOX = Path(__file__).parent / "study_files" / "M7_18x18_dense_kr_sg_kb_box_0.json"


def run_cli(capsys, *args: str) -> tuple[int | None, str, str]:
    """The command's exit code (None: it returned), its stdout and its stderr."""
    code: int | None = None
    try:
        cli_main(list(args))
    except SystemExit as exit_:
        code = exit_.code  # type: ignore[assignment]
    out, err = capsys.readouterr()
    return code, out, err


ADDED = {"oneway": "no-oneways", "reverser": "no-reversers"}  # name (and kind) -> removal twin


def test_every_list_read_off_the_registry_is_what_it_was():
    assert KINDS == ("key", "door", "switch", "gate", "teleporter", "hazard", "block", "kill", "frozen", "turntable",
                     *ADDED)
    assert R1_KINDS == ("teleporter", "hazard", "block", "kill", "frozen") and PR57_KINDS == ("turntable", *ADDED)
    assert STUDY_KINDS == (*R1_KINDS, *PR57_KINDS)
    assert TILE_OBJECT == {"portal": "teleporter", "death": "kill", "ice": "frozen", "turntable": "turntable",
                           **{k: k for k in ADDED}}
    assert TILE_TWIN == {"portal": "no-portals", "death": "no-deaths", "ice": "no-ice", "turntable": "no-turntables",
                         **ADDED}
    assert TILES == ("none", "portal", "death", "ice", "turntable", *ADDED)
    assert TILE_REMOVALS == {"no-portals": "teleporter", "no-deaths": "kill", "no-ice": "frozen",
                             "no-turntables": "turntable", **{v: k for k, v in ADDED.items()}}
    assert ABLATIONS == ("no-switches", "no-keys", "no-distractors", "drop-link", "no-portals", "no-deaths",
                         "no-ice", "no-turntables", *ADDED.values())
    assert REMOVED_MECHANISM == {"no-keys": "key-door", "no-switches": "switch-gate", "no-portals": "portal",
                                 "no-deaths": "death tile", "no-ice": "ice", "no-turntables": "turntable",
                                 "no-oneways": "one-way tile", "no-reversers": "reversing tile"}
    assert FIELDS["mechanisms"] == frozenset({
        "keys", "doors", "switches", "gates", "blocks", "hazards", "teleporters", "kill_cells", "death_portals",
        "frozen_tiles", "freeze_steps", "rotating_tiles", "rotating_initial_directions"})
    assert LATER_FIELDS == ("death_portals", "rotating_tiles", "rotating_initial_directions")
    # the discovery timelines' kinds: the same set, in the registry's order (turntable now last)
    assert DISCOVERY_KINDS == ("key", "door", "switch", "gate", "teleporter", "kill", "frozen", "turntable", *ADDED)
    assert set(LATER_DISCOVERY_KINDS) == {"teleporter", "turntable", "kill", "frozen", *ADDED}


def test_each_mechanic_is_one_module_and_each_kind_belongs_to_one_mechanic():
    names = [m.name for m in MECHANICS]
    assert len(set(names)) == len(names)
    for m in MECHANICS:
        module = importlib.import_module(m.module)
        assert module.MECHANIC is m and m.module == f"env.mechanics.{m.name.replace('-', '_')}"
        assert by_name(m.name) is m and all(of_kind(k) is m for k in m.kinds)
    assert sorted(k for m in MECHANICS for k in m.kinds) == sorted(KINDS)
    # a removal twin is a kind of variant; a generated mechanic is a tile the generator lays
    assert set(removal_twins()) <= set(VARIANT_KINDS)
    assert {m.name for m in MECHANICS if m.generated} == set(TILES[1:])
    with pytest.raises(KeyError):
        of_kind("lava")
    # what nothing enters is the solid mechanics' cells, as the R1 rulebook's hazards and blocks
    assert {m.name for m in MECHANICS if m.solid} == {"hazard", "block"}


def test_gridbench_maze_mechanics_lists_each_with_its_module_fields_and_twin(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run_cli(capsys, "maze", "mechanics", "--json")
    assert code in (0, None)
    listed = {m["name"]: m for m in json.loads(out)}
    assert list(listed) == [m.name for m in MECHANICS]
    assert listed["turntable"]["rulesets"] == ["multinet-pr57"] and listed["turntable"]["removal_twin"] == "no-turntables"
    assert listed["death"]["study_fields"] == ["kill_cells", "death_portals"]
    assert listed["key-door"]["module"] == "env.mechanics.key_door" and listed["block"]["removal_twin"] is None
    code, out, _ = run_cli(capsys, "maze", "mechanics")
    assert code in (0, None) and all(m.name in out for m in MECHANICS)


def test_the_study_box_maze_imports_under_r1_plays_and_has_no_solution(tmp_path, capsys):
    """Under the R1 rulebook nothing pushes a block: the brown box closes the passage between the
    blue key and the blue door, so the maze has no solution. Under multinet-pr57 it is refused, as
    gridbench has no push rule."""
    out = tmp_path / "box.json"
    code, _, err = run_cli(capsys, "maze", "import", f"multinet:{BOX}", "--out", str(out))
    assert code in (0, None), err
    maze = load_maze(out)
    assert maze.ruleset == "multinet-r1"
    (box,) = [o for o in maze.objects if o.kind == "block"]
    assert (box.color, box.pos) == ("brown", (10, 13))
    code, shown, _ = run_cli(capsys, "maze", "solve", str(out))
    assert code == 1 and "unsolvable" in shown
    code, text, _ = run_cli(capsys, "maze", "show", str(out), "--text")
    assert code in (0, None) and text.splitlines()[2 + 13][4 + 10] == "B" and "brown box at (10, 13)" in text
    from env.render import frame
    from env.state import initial_state

    image = frame(maze, initial_state(maze))
    cell = image[13 * 32:14 * 32, 10 * 32:11 * 32].reshape(-1, 3)
    assert (np.abs(cell.astype(int) - (139, 90, 43)).sum(axis=1) < 10).any()  # drawn in its brown
    code, _, err = run_cli(capsys, "maze", "import", f"multinet:{BOX}", "--ruleset", "multinet-pr57",
                           "--out", str(tmp_path / "pr57.json"))
    assert code == 2 and "mechanisms.blocks[0].pushable" in err and not (tmp_path / "pr57.json").exists()


def test_the_skins_gathered_from_the_mechanics_are_the_skins_before_the_move():
    """Every noun, state word, map letter and legend name of each skin, as recorded from
    env/skins.py before the mechanics declared them (``skins_before_registry.json``); the added
    mechanics' words come on top, each letter one no other kind has."""
    from env.skins import GLYPH_NAMES, SKINS, STATE_WORDS

    before = json.loads((Path(__file__).parent / "skins_before_registry.json").read_text())
    assert list(STATE_WORDS) == before["state_words"]
    assert sorted(GLYPH_NAMES) == sorted([*before["glyph_names"], *ADDED])
    for name, skin in SKINS.items():
        recorded = before["skins"][name]
        assert {k: list(v) for k, v in skin.nouns.items() if k not in ADDED} == recorded["nouns"]
        assert dict(skin.states) == recorded["states"]
        assert {k: v for k, v in skin.glyphs.items() if k not in ADDED} == recorded["glyphs"]
        assert dict(skin.legend_names) == recorded["legend_names"]
        assert len(set(skin.glyphs.values())) == len(skin.glyphs) and set(ADDED) <= set(skin.nouns)
    assert set(SKINS) == set(before["skins"])
    # every mechanic names itself in every skin
    assert all(set(m.words) == set(SKINS) for m in MECHANICS)


@pytest.mark.parametrize("name", ["portal", "death", "ice", "turntable", "oneway", "reverser"])
def test_a_later_tile_is_named_only_by_its_module_and_the_registry(name):
    """Outside tests, docs, bench and testing, a later tile's name stands in its own module, the
    registry and, for the study's four, the script that describes the study's files: every rule,
    record, glyph, word, reader and prompt line of it is its module's."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    found = subprocess.run(["git", "grep", "--untracked", "-l", "-i", "-w", "-E", f"{name}s?", "--", "*.py", "*.js"],
                           cwd=root, capture_output=True, text=True, check=False).stdout.split()
    outside = {f for f in found if not f.startswith(("tests/", "docs/", "bench/", "testing/"))}
    module = f"env/mechanics/{by_name(name).module.rsplit('.', 1)[1]}.py"
    allowed = {module, "env/mechanics/__init__.py", "scripts/build_study_m7m10_set.py"}
    assert module in outside and outside <= allowed and len(outside) <= 4, sorted(outside - allowed)
