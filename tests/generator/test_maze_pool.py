import json
import subprocess
import sys
from collections import Counter

import pytest

from env.generator.pool import (
    STUDY_EVAL,
    build_pool,
    pool_recipe,
    read_set,
    select_sets,
    targets_for,
    write_set,
)
from env.sets import MAZES_DIR


def test_recipe_is_deterministic_and_follows_the_quotas():
    a, b = pool_recipe(214, 5), pool_recipe(214, 5)
    assert a == b and pool_recipe(214, 6) != a
    assert [s.maze_id for s in a] == [f"p{i:04d}" for i in range(1, 215)]
    grids = Counter(s.params.width for s in a)
    assert grids == {8: 64, 10: 70, 14: 80}
    cats = Counter(s.params.category for s in a)
    assert cats["scale"] >= 6 and cats["distractor"] >= 30 and cats["mechanism"] >= 100


def test_targets_scale_from_the_study():
    assert targets_for(50) == STUDY_EVAL
    t15 = targets_for(15)
    assert sum(t15["band"].values()) == sum(t15["grid"].values()) == sum(t15["category"].values()) == 15
    assert t15["grid"] == {"8x8": 3, "10x10": 6, "14x14": 6}


def test_a_small_pool_is_distinct_and_the_same_on_one_or_two_workers():
    one = build_pool(6, seed=3, workers=1)
    two = build_pool(6, seed=3, workers=2)
    assert not one.errors and [m.checksum for m in one.mazes] == [m.checksum for m in two.mazes]
    assert len({m.checksum for m in one.mazes}) == 6
    assert one.stats.accepted == 6 and one.stats.candidates >= 6


def test_select_on_the_shipped_pool_meets_the_strata_and_depends_on_the_seed():
    manifest, _ = read_set(MAZES_DIR / "pool")
    a = select_sets(manifest["mazes"], 50, 15, seed=1)
    b = select_sets(manifest["mazes"], 50, 15, seed=2)
    assert a.met and b.met and a.eval_ids != b.eval_ids
    assert len(a.eval_ids) == 50 and len(a.heldout_ids) == 15 and not set(a.eval_ids) & set(a.heldout_ids)


def test_select_reports_unmet_strata_when_the_pool_lacks_them():
    manifest, _ = read_set(MAZES_DIR / "pool")
    no_large = [e for e in manifest["mazes"] if e["grid"] != "14x14"]
    sel = select_sets(no_large, 50, 15, seed=1)
    assert not sel.met
    assert sel.achieved_eval["grid"]["14x14"] == 0


def _gridbench(*args):
    return subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True)


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
    r = subprocess.run([sys.executable, "-m", "orchestrator.cli", *args], capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1


def test_cli_build_writes_a_pool_with_a_manifest(tmp_path):
    r = _gridbench("pool", "build", "--count", "4", "--seed", "2", "--out", str(tmp_path / "p"), "--workers", "2")
    assert r.returncode == 0, r.stderr
    manifest = json.loads((tmp_path / "p" / "manifest.json").read_text())
    assert manifest["count"] == 4 and manifest["provenance"]["command"] == "gridbench pool build --count 4 --seed 2"
    assert "acceptance" in r.stdout
