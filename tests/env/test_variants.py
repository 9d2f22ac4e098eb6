"""Maze variants (docs/variants.md): each changes one thing, exactly as recorded."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

import env
from app.cli import main as cli_main
from env import initial_state, load_maze, maze_from_dict, render_state, resolve_maze, resolve_mazes, step
from env.checks import run_checks
from env.maze import COLORS, MULTINET_R1
from env.names import is_name
from env.oracle import solve
from env.text import text_projection
from env.variants import (
    KINDS,
    Skipped,
    ablate,
    assess,
    build_variants,
    color_permutation,
    control,
    control_band,
    drop_link,
    kinds_from,
    mirror,
    recolor,
    record_of,
    reskin,
    rotate,
    step_kinds,
    variant_id,
    variant_set,
)

GEOMETRIC = ("rotate-90", "rotate-180", "rotate-270", "mirror-lr", "mirror-tb")


def geometric(maze, name):
    return rotate(maze, int(name[7:])) if name.startswith("rotate") else mirror(maze, name[7:])


def count(maze) -> int | None:
    return solve(maze, cache=False).optimal_actions


# ---- isomorphic ---------------------------------------------------------------------------------


def test_every_rotation_mirror_and_recolouring_keeps_the_count_of_every_minigrid_maze():
    """The whole pool and the hand-made mazes (gridbench's own rules): every one is exact."""
    mazes = resolve_mazes(["pool", "hand"])
    assert len(mazes) == 229
    for m in mazes:
        n = count(m)
        for name in GEOMETRIC:
            v = geometric(m, name)
            assert v.family == "isomorphic" and count(v.maze) == n, (m.id, name)
        assert count(recolor(m, 7).maze) == n and count(reskin(m).maze) == n, m.id


def test_under_the_study_rules_only_the_top_bottom_mirror_is_exact():
    """The study's 50 + 15 mazes start facing east, and so must every variant: a rotation or a
    left-right mirror turns the start against the layout, is labelled near-isomorphic and moves the
    count by at most the two turns the new heading can cost; the top-bottom mirror keeps east."""
    mazes = resolve_mazes(["study", "study-heldout"])
    assert len(mazes) == 65 and {m.ruleset for m in mazes} == {MULTINET_R1}
    moved = dict.fromkeys(GEOMETRIC, 0)
    for m in mazes:
        n = count(m)
        for name in GEOMETRIC:
            v = geometric(m, name)
            assert v.maze.start.dir == "east"
            got = count(v.maze)
            if name == "mirror-tb":
                assert v.family == "isomorphic" and got == n, m.id
            else:
                assert v.family == "near-isomorphic" and "start heading" in v.changed[-1]
                assert got is not None and abs(got - n) <= 2, (m.id, name)
                moved[name] += got != n
        assert count(recolor(m, 7).maze) == n and count(reskin(m).maze) == n, m.id
    assert moved["mirror-tb"] == 0 and moved["rotate-90"] > 0 and moved["mirror-lr"] > 0


def test_four_quarter_turns_and_two_mirrors_give_the_maze_back():
    for m in (resolve_maze("example"), resolve_maze("pool/p0020")):  # 9x6, and one with dead ends
        turned = m
        for _ in range(4):
            turned = rotate(turned, 90).maze
        assert (turned.width, turned.height) == (m.width, m.height)
        assert rotate(m, 90).maze.width == m.height
        for back in (turned, mirror(mirror(m, "lr").maze, "lr").maze, mirror(mirror(m, "tb").maze, "tb").maze):
            d, e = back.to_dict(), m.to_dict()
            for doc in (d, e):
                doc.pop("id")
                doc["meta"].pop("variant", None)
                doc["meta"].pop("generator")
            assert d == e
        # the dead ends move with their cells: the distractor check judges them where they now are
        for name in GEOMETRIC:
            v = geometric(m, name).maze
            assert [(r.check, r.passed, r.reason) for r in run_checks(v)] == \
                [(r.check, r.passed, r.reason) for r in run_checks(m)], name


def test_a_colour_permutation_moves_every_colour_it_may_and_keeps_keys_with_their_doors():
    for ruleset in ("minigrid", MULTINET_R1):
        perm = color_permutation(7, ruleset)
        fixed = {"grey"} if ruleset == MULTINET_R1 else set()
        assert set(perm) == set(COLORS) - fixed and set(perm.values()) == set(perm)
        assert all(a != b for a, b in perm.items())
    for m in resolve_mazes(["hand", "study"]):
        v = recolor(m, 3).maze
        perm = color_permutation(3, m.ruleset)
        for o, p in zip(m.objects, v.objects, strict=True):
            assert getattr(p, "color", None) == perm.get(getattr(o, "color", None), getattr(o, "color", None))
        pairs = lambda maze: {(k.id, d.id) for k in maze.keys for d in maze.doors if k.color == d.color}  # noqa: E731
        assert pairs(v) == pairs(m)


# ---- reskin -------------------------------------------------------------------------------------


def test_a_reskin_changes_the_frames_and_the_text_and_never_the_dynamics():
    """Random walks on mazes of both rulesets: the same state and event at every step, the same
    checks; frames that differ when there is an object to draw, text that always does (its legend)."""
    mazes = resolve_mazes("study")[::5] + resolve_mazes("hand")[::3]
    rng = random.Random(24)
    for m in mazes:
        v = reskin(m).maze
        assert v.skin == "neutral" and count(v) == count(m) and record_of(v)["twin_of"] == m.id
        s = initial_state(m)
        assert np.array_equal(render_state(m, s, 8), render_state(v, s, 8)) == (not m.objects)
        for _ in range(60):
            a = rng.randrange(6)
            (s1, e1), (s2, e2) = step(m, s, a), step(v, s, a)
            assert (s1, e1) == (s2, e2)
            s = s1
            assert text_projection(m, s) != text_projection(v, s)
        assert [r.passed for r in run_checks(v)] == [r.passed for r in run_checks(m)]


# ---- ablations ----------------------------------------------------------------------------------


def _ids(maze) -> set[str]:
    return {o.id for o in maze.objects}


def test_each_ablation_twin_lacks_what_it_names_and_records_its_count_and_checks():
    """The study's mazes (some fail a check already: those failures are inherited) and a sixth of
    the pool: a twin has nothing of what it removes, the rest unchanged; its recorded count and
    checks are its own."""
    mazes = resolve_mazes(["study", "study-heldout"]) + resolve_mazes("pool")[::6]
    made = variant_set(mazes, ["no-switches", "no-keys", "no-distractors", "drop-link"])
    by_id = {m.id: m for m in made.mazes}
    sources = {m.id: m for m in mazes}
    twins = [e for e in made.entries if e["variant"]["kind"] != "original"]
    assert len(twins) > 120
    for e in twins:
        rec, twin = e["variant"], by_id[e["id"]]
        src = sources[rec["twin_of"]]
        assert rec["twin_of_checksum"] == src.checksum and record_of(twin)["kind"] == rec["kind"]
        kept = _ids(twin)
        if rec["kind"] == "no-switches":
            assert not twin.switches and not twin.gates and src.switches
        elif rec["kind"] == "no-keys":
            assert not twin.keys and not twin.doors and src.keys
        elif rec["kind"] == "no-distractors":
            assert not twin.meta.distractors and not kept & set(src.meta.distractors)
        else:
            step_ids = set(src.meta.chain[rec["params"]["step"] - 1])
            assert step_ids - kept and len(twin.meta.chain) == len(src.meta.chain) - 1
        assert kept < _ids(src) or rec["kind"] == "no-distractors"
        assert e["optimal_actions"] == count(twin) and rec["source_optimal_actions"] == count(src)
    for e in twins[::3]:
        assert [(c["check"], c["passed"], c["object"]) for c in e["variant"]["checks"]] == \
            [(r.check, r.passed, r.object_id) for r in run_checks(by_id[e["id"]])]
    skipped = {(n["source"], n["kind"]) for n in made.not_written}
    for m in mazes:
        assert ((m.id, "no-switches") in skipped) == (not m.switches)
        assert ((m.id, "no-keys") in skipped) == (not m.keys)


def _two_routes() -> dict:
    """The goal behind a yellow door (its key in the room) or behind a red decoy door no key opens."""
    return {"format": "gridbench.maze/1", "id": "two-routes",
            "grid": ["#######", "#.....#", "#.###.#", "#.###.#", "#.....#", "#######"],
            "start": {"pos": [1, 1], "dir": "east"}, "goal": [5, 4],
            "objects": [{"id": "k1", "kind": "key", "color": "yellow", "pos": [3, 1]},
                        {"id": "d1", "kind": "door", "color": "yellow", "pos": [5, 2], "state": "locked"},
                        {"id": "d2", "kind": "door", "color": "red", "pos": [1, 3], "state": "locked"}],
            "meta": {"category": "distractor", "chain": [["k1", "d1"]], "distractors": ["d2"], "source": "hand"}}


def test_a_twin_that_fails_a_check_its_source_passes_is_reported_not_written():
    """Without its decoy door the maze has a way round the real one: the key is no longer needed."""
    m = maze_from_dict(_two_routes())
    assert all(r.passed for r in run_checks(m))
    twin = ablate(m, "no-distractors")
    a = assess(twin, m)
    assert not a.kept and [(r.check, r.object_id) for r in a.new_failures] == [("mechanism_necessity", "k1")]
    made = variant_set([m], ["no-distractors", "no-keys"])
    assert [e["id"] for e in made.entries] == ["two-routes", "two-routes.no-keys"]
    (left,) = made.not_written
    assert left["id"] == "two-routes.no-distractors" and "mechanism_necessity" in left["reason"]
    assert left["optimal_actions"] == count(twin.maze) < count(m)


def test_a_link_shared_with_another_step_stays():
    doc = _two_routes()
    doc["objects"][2].update(color="yellow")  # the key opens both doors: two steps share it
    doc["meta"].update(chain=[["k1", "d1"], ["k1", "d2"]], distractors=[])
    m = maze_from_dict(doc)
    twin = drop_link(m, 1)
    assert _ids(twin.maze) == {"k1", "d2"} and twin.maze.meta.chain == (("k1", "d2"),)
    assert isinstance(drop_link(m, 3), Skipped)


# ---- matched controls ---------------------------------------------------------------------------


def test_matched_controls_meet_their_band_with_no_mechanism_or_the_other_kind():
    for source in (resolve_maze("pool/p0057"), resolve_maze("study/r1_M6_8x8_corridor_kr_sg_kb_0")):
        n = count(source)
        lo, hi = control_band(n)
        assert hi - lo == 2 * max(2, round(0.05 * n))
        none = control(source, "control-none", 1)
        other = control(source, "control-other", 1)
        for v in (none, other):
            assert not isinstance(v, Skipped), v
            m = v.maze
            assert (m.width, m.height, m.ruleset) == (source.width, source.height, source.ruleset)
            assert lo <= count(m) <= hi and v.family == "control" and v.twin_of == source.id
            assert all(r.passed for r in run_checks(m)) or m.ruleset == MULTINET_R1
        assert not none.maze.objects and none.maze.category == "scale"
        swapped = [{"key": "switch", "switch": "key"}[k] for k in step_kinds(source)]
        got = step_kinds(other.maze)
        # one or two steps, or steps of one kind, are swapped step by step; a longer mix is drawn
        assert got == swapped if len(swapped) <= 2 or len(set(swapped)) == 1 else set(got) == {"key", "switch"}
        again = control(source, "control-other", 1)
        assert again.maze.checksum == other.maze.checksum  # deterministic in the seed and the source


def test_a_control_the_generator_cannot_match_is_skipped_with_the_reason():
    tiny = resolve_maze("example")  # 9x6: the generator makes sides of 7 and more
    assert "7 to 40" in control(tiny, "control-none", 0).reason
    scale = resolve_maze("study/r1_S4_10x10_dense_1")  # no mechanism: nothing to swap
    assert "no mechanism chain" in control(scale, "control-other", 0).reason


# ---- ids, kinds -----------------------------------------------------------------------------------


def test_variant_ids_are_safe_and_stable():
    m = resolve_maze("study-heldout/conditional_d_d3_10x10_dense_deadend_ky_dy_1")
    names = [v.maze.id for k in KINDS if k not in ("control-none", "control-other")
             for v in build_variants(m, k, 5) if not isinstance(v, Skipped)]
    assert names == [v.maze.id for k in KINDS if k not in ("control-none", "control-other")
                     for v in build_variants(m, k, 5) if not isinstance(v, Skipped)]
    for n in names:
        name = n.rpartition(".")[2]
        assert is_name(n) and n == variant_id(m.id, name)
        # the source's id whole wherever it fits (the longer projection names do not: 45 + 31 characters)
        assert n.startswith(m.id + ".") or len(f"{m.id}.{name}") > 64
    assert any(not n.startswith(m.id + ".") for n in names)  # the cut, exercised
    long = variant_id("x" * 64, "control-other-s123456")
    assert len(long) == 64 and is_name(long) and long == variant_id("x" * 64, "control-other-s123456")
    assert long != variant_id("x" * 63 + "y", "control-other-s123456")
    assert recolor(m, 5).maze.checksum == recolor(m, 5).maze.checksum != recolor(m, 6).maze.checksum


@pytest.mark.parametrize("spec,want", [
    ("isomorphic", ["rotate", "mirror", "recolor"]),
    ("mirror-tb,reskin,mirror-tb,no-keys", ["mirror-tb", "reskin", "no-keys"]),
    ("all", list(KINDS)), ("drop-link-2", ["drop-link-2"])])
def test_kinds_are_named_by_kind_group_or_single_variant(spec, want):
    assert kinds_from(spec) == want


# ---- the command ----------------------------------------------------------------------------------


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    try:
        cli_main(list(args))
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_writes_sources_and_twins_with_a_manifest_and_maze_show_renders_them(tmp_path, capsys):
    out = tmp_path / "set"
    code, stdout, _ = run_cli(capsys, "variants", "hand/example", "--kinds", "mirror,reskin,no-distractors,no-keys",
                              "--out", str(out), "--seed", "4")
    assert code == 0 and "wrote 5 mazes" in stdout
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format"] == "gridbench.mazeset/1" and manifest["count"] == 5
    assert manifest["variants"]["kinds"] == ["mirror", "reskin", "no-distractors", "no-keys"]
    ids = [e["id"] for e in manifest["mazes"]]
    assert ids == ["example", "example.mirror-lr", "example.mirror-tb", "example.reskin-neutral", "example.no-keys"]
    assert sorted(p.stem for p in out.glob("*.json") if p.name != "manifest.json") == sorted(ids)
    for e in manifest["mazes"]:
        maze = load_maze(out / e["file"])
        assert maze.checksum == e["checksum"] and e["optimal_actions"] == count(maze)
        assert e["variant"]["twin_of"] == (None if e["id"] == "example" else "example")
    assert [(n["id"], n["kind"]) for n in manifest["not_written"]] == [("example.no-distractors", "no-distractors")]
    code, stdout, _ = run_cli(capsys, "maze", "show", str(out / "example.reskin-neutral.json"), "--text",
                              "--png", str(tmp_path / "f.png"))
    assert code == 0 and stdout.startswith("reskin variant reskin-neutral of example: skin classic -> neutral")
    assert "yellow wug at (4, 2): marked" in stdout and (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    # run again with fewer kinds: the set is replaced whole
    assert run_cli(capsys, "variants", "hand/example", "--kinds", "rotate-90", "--out", str(out))[0] == 0
    assert sorted(p.name for p in out.iterdir()) == ["example.json", "example.rotate-90.json", "manifest.json"]


@pytest.mark.parametrize("args,field", [
    (["hand/example", "--kinds", "rotate-45"], "rotate-45"),
    (["hand/example", "--kinds", ","], "--kinds"),
    (["no-such-set", "--kinds", "reskin"], "no-such-set"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, args, field):
    out = tmp_path / "set"
    code, stdout, err = run_cli(capsys, "variants", *args, "--out", str(out))
    assert code == 2 and stdout == "" and len(err.strip().splitlines()) == 1 and field in err
    assert not out.exists() and list(tmp_path.iterdir()) == []


def test_a_folder_that_holds_other_files_is_never_replaced(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("mine")
    code, _, err = run_cli(capsys, "variants", "hand/example", "--kinds", "reskin", "--out", str(tmp_path))
    assert code == 2 and "not replaced" in err and [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_without_out_the_set_goes_under_results_and_the_summary_counts_single_variants(tmp_path, capsys,
                                                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, stdout, err = run_cli(capsys, "variants", "study-heldout", "--kinds", "mirror-tb,reskin")
    out = tmp_path / "results" / "variants" / "study-heldout-twins"
    assert code == 0 and stdout.strip() == f"wrote 45 mazes to {out.relative_to(tmp_path)}: 15 sources; " \
                                           "mirror-tb 15, reskin 15"
    assert len(list(out.glob("*.mirror-tb.json"))) == 15 and len(list(out.glob("*.reskin-neutral.json"))) == 15
    # stderr is no terminal here: the progress is plain lines, the last one at the end
    assert err.strip().splitlines()[-1].startswith("building variants: 30/30 (")


def test_a_set_of_the_studys_mazes_carries_its_licence_notice(tmp_path, capsys):
    out = tmp_path / "twins"
    assert run_cli(capsys, "variants", "study-heldout", "--kinds", "mirror-tb", "--out", str(out))[0] == 0
    assert (out / "LICENSE.txt").read_text() == (Path(env.__file__).parent / "mazes" / "study-heldout"
                                                 / "LICENSE.txt").read_text()
    twin = load_maze(out / "validation_10_v01_empty_room.mirror-tb.json")
    assert twin.meta.model_extra["provenance"] and "study" not in twin.meta.model_extra
