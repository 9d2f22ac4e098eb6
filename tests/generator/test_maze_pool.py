import json
import subprocess
import sys
from collections import Counter

import pytest

from env.generator.maze_pool import (
    POOL_CELLS,
    build_pool,
    pool_recipe,
    read_set,
    select_sets,
    witness_ids,
    write_set,
)
from env.generator.strata import (
    STUDY_EVAL,
    achieved,
    constraints_for,
    find_solve_witness,
)
from env.sets import MAZES_DIR
from env.study_facts import ANALYSIS_BANDS, SELECTION_BANDS, STUDY_EVAL_SIZE, STUDY_MODEL_COUNT


def test_recipe_is_deterministic_and_follows_the_quotas():
    a, b = pool_recipe(214, 5), pool_recipe(214, 5)
    assert a == b and pool_recipe(214, 6) != a
    assert [s.maze_id for s in a] == [f"p{i:04d}" for i in range(1, 215)]
    # the cells' shares add up to the study's pool, so at 214 every cell gets exactly its share
    cells = Counter((s.params.width, s.params.band) for s in a)
    assert cells == {(side, (lo, hi)): n for side, lo, hi, n in POOL_CELLS}
    cats = Counter(s.params.category for s in a)
    assert cats["scale"] >= 8 and cats["distractor"] >= 30 and cats["mechanism"] >= 100
    # where the study's solves can fall, mazes with keys and doors only, some with two steps
    short_keys = Counter(s.params.chain for s in a if s.params.category == "mechanism"
                         and s.params.width <= 10 and 20 <= s.params.band[0] and s.params.band[1] <= 45)
    assert short_keys["key_door"] >= 12 and short_keys["key_sequence"] >= 6


def test_the_study_table_is_consistent_with_itself():
    study = constraints_for(STUDY_EVAL_SIZE)
    by = {c.what: c.target for c in study}
    for group in ("path band", "grid", "category"):
        assert sum(c.target for c in STUDY_EVAL if c.group == group) == STUDY_EVAL_SIZE
    assert sum(by[f"path {name}"] for name, _, _ in ANALYSIS_BANDS) == STUDY_EVAL_SIZE
    # the two band systems cut each other into non-empty pieces (26-30 and 31-39, 40-45 and 46-59)
    in_26_30 = by["path <=30"] - by["path 20-25"]
    assert in_26_30 > 0 and by["path 26-39"] - in_26_30 > 0
    assert by["path >=61"] == by["path 60-79"] + by["path 81+"]  # so nothing at 60 or 80
    assert [lo for _, lo, _ in SELECTION_BANDS][-1] == 81
    assert by["with a switch and a gate"] * STUDY_MODEL_COUNT == 105


def test_scaled_constraints_keep_the_strata_of_the_held_out_set():
    t15 = {c.what: (c.op, c.target) for c in constraints_for(15, heldout=True)}
    assert {k: v for k, v in t15.items() if k.startswith("grid")} == {
        "grid 8x8": ("==", 3), "grid 10x10": ("==", 6), "grid 14x14": ("==", 6)}
    assert sum(t for k, (_, t) in t15.items() if k.startswith("path")) == 15
    assert t15["with a switch and a gate"] == (">=", 10) and t15["with a key and a door"] == (">=", 6)
    assert not any(k.startswith("solve") for k in t15)
    assert {c.what for c in constraints_for(15, heldout=True)} == {c.what for c in constraints_for(30)}


def test_a_small_pool_is_distinct_and_the_same_on_one_or_two_workers():
    one = build_pool(6, seed=3, workers=1)
    two = build_pool(6, seed=3, workers=2)
    assert not one.errors and [m.checksum for m in one.mazes] == [m.checksum for m in two.mazes]
    assert len({m.checksum for m in one.mazes}) == 6
    assert one.stats.accepted == 6 and one.stats.candidates >= 6


def test_select_on_the_shipped_pool_meets_the_constraints_and_depends_on_the_seed():
    manifest, _ = read_set(MAZES_DIR / "pool")
    a = select_sets(manifest["mazes"], 50, 15, seed=1)
    b = select_sets(manifest["mazes"], 50, 15, seed=2)
    assert a.met and b.met and a.eval_ids != b.eval_ids
    assert len(a.eval_ids) == 50 and len(a.heldout_ids) == 15 and not set(a.eval_ids) & set(a.heldout_ids)
    # the witness lies inside eval and passes the independent search's rows
    for reading, ids in witness_ids(a.witness).items():
        assert set(ids) <= set(a.eval_ids) and len(ids) == 6, reading
    ev = [e for e in manifest["mazes"] if e["id"] in a.eval_ids]
    assert all(c.holds(achieved(c, ev, a.witness)) for c in constraints_for(50))
    assert find_solve_witness(ev, constraints_for(50)) is not None


def test_select_reports_unmet_strata_when_the_pool_lacks_them():
    manifest, _ = read_set(MAZES_DIR / "pool")
    no_large = [e for e in manifest["mazes"] if e["grid"] != "14x14"]
    sel = select_sets(no_large, 50, 15, seed=1)
    assert not sel.met
    assert dict((c.what, got) for c, got in sel.eval_rows)["grid 14x14"] == 0


def test_without_two_key_mazes_no_eval_set_fits_the_study_solves():
    manifest, _ = read_set(MAZES_DIR / "pool")
    one_door = [e for e in manifest["mazes"] if not (e["counts"]["door"] >= 2 and e["optimal_actions"] <= 45)]
    sel = select_sets(one_door, 50, 15, seed=1)
    unmet = {c.what for c, got in sel.eval_rows if not c.holds(got)}
    # only rows about the solves can fail (which of them is the solver's choice)
    assert not sel.met and unmet and all(c.reading for c, got in sel.eval_rows if c.what in unmet)


def test_the_solve_search_fails_when_the_eval_set_lacks_what_the_solves_need():
    ev, _ = read_set(MAZES_DIR / "eval")
    entries = ev["mazes"]
    assert find_solve_witness(entries, constraints_for(50)) is not None
    no_short_scale = [e for e in entries if not (e["category"] == "scale" and e["optimal_actions"] <= 45)]
    assert find_solve_witness(no_short_scale, constraints_for(50)) is None


def _gridbench(*args):
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True)


def test_cli_select_exits_1_and_writes_nothing_when_the_pool_falls_short(tmp_path):
    manifest, mazes = read_set(MAZES_DIR / "pool")
    keep = [i for i, e in enumerate(manifest["mazes"]) if e["grid"] != "14x14"][:80]
    write_set(tmp_path / "small", "pool", [mazes[i] for i in keep], [manifest["mazes"][i] for i in keep], {})
    r = _gridbench("pool", "select", str(tmp_path / "small"), "--seed", "1", "--out", str(tmp_path / "sets"))
    assert r.returncode == 1 and "14x14" in r.stdout and "cannot meet" in r.stderr
    assert not (tmp_path / "sets").exists()


def test_a_pool_smaller_than_the_two_sets_is_refused():
    manifest, _ = read_set(MAZES_DIR / "pool")
    with pytest.raises(ValueError, match="cannot hold"):
        select_sets(manifest["mazes"][:60], 50, 15, seed=1)


def test_cli_select_writes_both_sets_with_manifests(tmp_path):
    r = _gridbench("pool", "select", "pool", "--eval", "50", "--heldout", "15", "--seed", "9", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    ev = json.loads((tmp_path / "eval" / "manifest.json").read_text())
    assert ev["count"] == 50 and (tmp_path / "eval" / "contact_sheet.png").stat().st_size > 10_000
    assert len(list((tmp_path / "heldout").glob("p*.json"))) == 15


@pytest.mark.parametrize("args", [["pool", "select", "no-such-folder", "--seed", "1", "--out", "x"],
                                  ["pool", "build", "--count", "0", "--seed", "1", "--out", "x"]])
def test_cli_bad_input_is_one_line_exit_2(args, tmp_path):
    r = subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_cli_build_writes_a_pool_with_a_manifest(tmp_path):
    r = _gridbench("pool", "build", "--count", "4", "--seed", "2", "--out", str(tmp_path / "p"), "--workers", "2")
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "p" / "manifest.json").read_text())
    assert manifest["count"] == 4 and manifest["provenance"]["command"] == "gridbench pool build --count 4 --seed 2"
    assert "acceptance" in r.stdout
