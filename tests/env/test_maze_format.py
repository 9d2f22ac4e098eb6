"""gridbench.maze/1 files (docs/design.md §2): every rule refused with one line naming file and field."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import env
from app.cli import main as cli_main
from env import BadInput, load_maze, resolve_maze, resolve_mazes, save_maze
from env import sets as maze_sets

EXAMPLE = json.loads((Path(env.__file__).parent / "mazes" / "hand" / "example.json").read_text())


def edited(change) -> dict:
    doc = copy.deepcopy(EXAMPLE)
    change(doc)
    return doc


def _set(path: str, value):
    """A change that sets a dotted/indexed path, e.g. ``objects.1.state``."""

    def change(doc):
        *parents, last = path.split(".")
        node = doc
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[int(last) if last.isdigit() else last] = value

    return change


def _drop(path: str):
    def change(doc):
        *parents, last = path.split(".")
        node = doc
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        del node[last]

    return change


def _grid_row(y: int, row: str):
    def change(doc):
        doc["grid"][y] = row

    return change


# (name, change to the design example, the field the message must name, words it must contain)
MALFORMED = [
    ("format-wrong", _set("format", "gridbench.maze/2"), "format", "gridbench.maze/1"),
    ("format-missing", _drop("format"), "format", "gridbench.maze/1"),
    ("id-traversal", _set("id", "../evil"), "id", "safe file name"),
    ("id-absolute", _set("id", "/etc/passwd"), "id", "safe file name"),
    ("id-not-string", _set("id", 7), "id", "string"),
    ("grid-ragged", _grid_row(2, "#......#"), "grid[2]", "same length"),
    ("grid-unknown-cell", _grid_row(1, "#..x#...#"), "grid[1]", "'x'"),
    ("grid-ring-side", _grid_row(2, "........#"), "grid[2]", "outer ring"),
    ("grid-ring-top", _grid_row(0, "####.####"), "grid[0]", "outer ring"),
    ("grid-too-small", _set("grid", ["###", "###"]), "grid", "at least 3 rows"),
    ("grid-not-list", _set("grid", "#########"), "grid", "JSON list"),
    ("start-outside", _set("start.pos", [20, 1]), "start.pos", "outside"),
    ("start-on-wall", _set("start.pos", [0, 0]), "start.pos", "wall"),
    ("start-dir", _set("start.dir", "up"), "start.dir", "east"),
    ("goal-on-wall", _set("goal", [4, 1]), "goal", "wall"),
    ("goal-is-start", _set("goal", [1, 1]), "goal", "distinct"),
    ("goal-missing", _drop("goal"), "goal", "required"),
    ("goal-not-pair", _set("goal", [7]), "goal", "[x, y]"),
    ("pos-three-numbers", _set("objects.0.pos", [2, 3, 0]), "objects[0].pos", "[x, y]"),
    ("pos-bool", _set("objects.0.pos", [True, 3]), "objects[0].pos[0]", "integer"),
    ("object-id-duplicate", _set("objects.1.id", "k1"), "objects[1].id", "twice"),
    ("object-id-unsafe", _set("objects.0.id", "k 1"), "objects[0].id", "not a valid id"),
    ("kind-unknown", _set("objects.0.kind", "lever"), "objects[0].kind", "lever"),
    ("kind-missing", _drop("objects.0.kind"), "objects[0].kind", "required"),
    ("color-unknown", _set("objects.0.color", "pink"), "objects[0].color", "pink"),
    ("door-state-unknown", _set("objects.1.state", "ajar"), "objects[1].state", "ajar"),
    ("door-state-missing", _drop("objects.1.state"), "objects[1].state", "required"),
    ("switch-on-not-bool", _set("objects.2.on", "yes"), "objects[2].on", "true or false"),
    ("switch-controls-door", _set("objects.2.controls", ["d1"]), "objects[2].controls[0]", "gate"),
    ("switch-controls-twice", _set("objects.2.controls", ["g1", "g1"]), "objects[2].controls", "twice"),
    ("object-on-wall", _set("objects.0.pos", [4, 1]), "objects[0].pos", "wall"),
    ("object-on-start", _set("objects.0.pos", [1, 1]), "objects[0].pos", "start"),
    ("object-on-goal", _set("objects.3.pos", [7, 4]), "objects[3].pos", "goal"),
    ("objects-share-cell", _set("objects.3.pos", [5, 1]), "objects[3].pos", "one object per cell"),
    ("object-unknown-field", _set("objects.0.size", 2), "objects[0].size", "unknown field"),
    ("top-unknown-field", _set("colour", "red"), "colour", "unknown field"),
    ("meta-not-object", _set("meta", [1]), "meta", "JSON object"),
    ("meta-category", _set("meta.category", "hard"), "meta.category", "hard"),
    ("meta-source", _set("meta.source", "web"), "meta.source", "imported:<origin>"),
    ("meta-chain-unknown-id", _set("meta.chain", [["k9", "d1"]]), "meta.chain[0][0]", "k9"),
    ("meta-chain-empty-step", _set("meta.chain", [[]]), "meta.chain[0]", "empty"),
    ("meta-distractor-unknown", _set("meta.distractors", ["zz"]), "meta.distractors[0]", "zz"),
    ("meta-deadend-malformed", _set("meta.distractors", ["deadend:x"]), "meta.distractors", "deadend:N"),
    ("meta-generator-type", _set("meta.generator", [1]), "meta.generator", "JSON object"),
    ("skin-unknown", _set("skin", "retro"), "skin", "neutral"),
]


def write(tmp_path: Path, name: str, doc) -> Path:
    p = tmp_path / f"{name}.json"
    if isinstance(doc, bytes):
        p.write_bytes(doc)
    else:
        p.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return p


def assert_one_line(err: BadInput, path: Path, field: str, words: str) -> None:
    line = str(err)
    assert "\n" not in line
    assert line.startswith(f"{path}: {field}: "), line
    assert err.source == str(path) and err.field == field
    assert words in line, line


def test_the_design_example_itself_loads():
    maze = load_maze(Path(env.__file__).parent / "mazes" / "hand" / "example.json")
    assert (maze.width, maze.height, len(maze.objects)) == (9, 6, 4)


@pytest.mark.parametrize("name,change,field,words", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_each_broken_rule_is_one_line_naming_file_and_field(tmp_path, name, change, field, words):
    path = write(tmp_path, name, edited(change))
    with pytest.raises(BadInput) as info:
        load_maze(path)
    assert_one_line(info.value, path, field, words)


@pytest.mark.parametrize(
    "name,text,words",
    [
        ("not-json", '{"format": "gridbench.maze/1", ', "not valid JSON"),
        ("not-an-object", "[1, 2, 3]", "JSON object"),
        ("not-utf8", b"\xff\xfe{}", "not UTF-8"),
    ],
)
def test_unparseable_files(tmp_path, name, text, words):
    path = write(tmp_path, name, text)
    with pytest.raises(BadInput) as info:
        load_maze(path)
    assert_one_line(info.value, path, "(file)", words)


def test_the_malformed_table_covers_at_least_15_distinct_rules():
    assert len({field for _, _, field, _ in MALFORMED}) >= 15


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        cli_main(list(args))
    out, err = capsys.readouterr()
    return info.value.code, out, err


@pytest.mark.parametrize("name,change,field,words", MALFORMED[::4], ids=[m[0] for m in MALFORMED[::4]])
def test_cli_show_bad_file_one_stderr_line_exit_2_writes_nothing(tmp_path, capsys, name, change, field, words):
    bad = write(tmp_path, name, edited(change))
    out_png = tmp_path / "out" / "frame.png"
    before = sorted(tmp_path.rglob("*"))
    code, out, err = run_cli(capsys, "maze", "show", str(bad), "--png", str(out_png), "--text")
    assert code == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and str(bad) in lines[0] and field in lines[0]
    assert sorted(tmp_path.rglob("*")) == before


def test_cli_one_bad_file_among_good_ones_writes_no_frame(tmp_path, capsys):
    bad = write(tmp_path, "bad", edited(_set("goal", [0, 0])))
    folder = tmp_path / "frames"
    code, _, err = run_cli(capsys, "maze", "show", "example", str(bad), "--png", str(folder))
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert not folder.exists()


def test_console_script_bad_file_exit_2_one_line(tmp_path):
    bad = write(tmp_path, "bad", edited(_set("objects.0.color", "pink")))
    r = subprocess.run([sys.executable, "-m", "app.cli", "maze", "show", str(bad)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"gridbench: {bad}: objects[0].color: \"pink\" is not one of "
                                             "'red', 'green', 'blue', 'purple', 'yellow' or 'grey'"]


# ---- ids are safe file names; loading never leaves what the user named ---------------------------


@pytest.mark.parametrize("spec", ["../example", "hand/../example", "hand/../../env/mazes/hand/example",
                                  "/etc/passwd", "hand//etc/passwd", "hand/.example", "..", "hand/.."])
def test_ids_never_reach_outside_the_set_folders(spec):
    with pytest.raises(BadInput) as info:
        resolve_maze(spec)
    assert "\n" not in str(info.value) and spec in str(info.value)


def test_an_absolute_path_the_user_names_is_read_as_a_file_not_an_id(tmp_path):
    outside = write(tmp_path, "elsewhere", EXAMPLE)
    assert resolve_maze(str(outside.resolve())).id == "example"
    # but the same text inside set/id form is never joined onto a set folder
    with pytest.raises(BadInput):
        resolve_maze(f"hand/{outside.resolve()}")


@pytest.fixture
def fake_sets(tmp_path, monkeypatch):
    """A private copy of the named-set root, so the test can plant links in a set folder."""
    root = tmp_path / "mazes"
    (root / "hand").mkdir(parents=True)
    (root / "hand" / "example.json").write_text(json.dumps(EXAMPLE))
    monkeypatch.setattr(maze_sets, "MAZES_DIR", root)
    return root


def test_a_link_in_a_set_folder_that_leaves_it_is_refused(tmp_path, fake_sets):
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(edited(_set("id", "secret"))))
    link = fake_sets / "hand" / "secret.json"
    os.symlink(secret, link)
    assert resolve_maze("hand/example").id == "example"
    for spec in ("secret", "hand/secret", "hand"):
        with pytest.raises(BadInput) as info:
            resolve_mazes(spec)
        assert str(link) in str(info.value) and "outside" in str(info.value)


def test_a_link_in_a_user_folder_that_leaves_it_is_refused(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    write(folder, "a", EXAMPLE)
    write(tmp_path, "other", edited(_set("id", "other")))
    os.symlink(tmp_path / "other.json", folder / "b.json")
    with pytest.raises(BadInput) as info:
        resolve_mazes(str(folder))
    assert str(folder / "b.json") in str(info.value)
    # a link that stays inside the folder is just another name for a file the user gave
    (folder / "b.json").unlink()
    os.symlink(folder / "a.json", folder / "c.json")
    assert [m.id for m in resolve_mazes(str(folder))] == ["example", "example"]


def test_save_writes_under_the_name_given_and_leaves_no_temporary(tmp_path):
    maze = resolve_maze("example")
    target = tmp_path / "sub" / "x.json"
    save_maze(maze, target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.json"]  # no temporary left


# ---- round trip -------------------------------------------------------------------------------


def test_round_trip_load_save_load_is_equal_with_the_same_checksum(tmp_path):
    first = resolve_maze("example")
    path = save_maze(first, tmp_path / "example.json")
    second = load_maze(path)
    assert second == first and second.checksum == first.checksum
    assert second.to_dict() == first.to_dict() == EXAMPLE
    path2 = save_maze(second, tmp_path / "again.json")
    assert path2.read_text() == path.read_text()


def test_checksum_ignores_whitespace_but_not_content(tmp_path):
    a = write(tmp_path, "a", json.dumps(EXAMPLE, indent=None))
    b = write(tmp_path, "b", json.dumps(EXAMPLE, indent=7))
    c = write(tmp_path, "c", edited(_set("objects.1.state", "closed")))
    assert load_maze(a).checksum == load_maze(b).checksum != load_maze(c).checksum


def test_meta_is_optional_and_round_trips_without_it(tmp_path):
    doc = edited(_drop("meta"))
    maze = load_maze(write(tmp_path, "nometa", doc))
    assert maze.meta is None and maze.to_dict() == doc
    assert load_maze(save_maze(maze, tmp_path / "again.json")) == maze


def test_the_skin_is_left_out_at_its_default_and_kept_otherwise(tmp_path):
    """A classic maze has the content and checksum it had before skins; a neutral one is another
    maze, written with its skin after the id."""
    classic = load_maze(write(tmp_path, "classic", edited(_set("skin", "classic"))))
    assert classic.to_dict() == EXAMPLE and classic.checksum == resolve_maze("example").checksum
    neutral = load_maze(write(tmp_path, "neutral", edited(_set("skin", "neutral"))))
    assert neutral.checksum != classic.checksum and neutral.to_dict()["skin"] == "neutral"
    text = save_maze(neutral, tmp_path / "again.json").read_text()
    assert '"skin": "neutral"' in text.splitlines()[3]
    assert load_maze(tmp_path / "again.json") == neutral
