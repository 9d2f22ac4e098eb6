"""The shipped sets are re-derived from their files, so data can never drift from the code, and
every study constraint on the eval and held-out sets is recomputed from the maze files."""

import functools
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from env.checks import run_checks
from env.generator import regenerate
from env.generator.maze_pool import (
    EVAL_CATEGORIES,
    LONG_HORIZON_BANDS,
    LONG_HORIZON_COUNT,
    content_key,
    long_horizon_recipe,
    manifest_entry,
    read_set,
)
from env.generator.strata import (
    achieved,
    band_of,
    constraints_for,
    could_be_solved,
    find_solve_witness,
    has_key_door,
    has_switch_gate,
    largest_remainder,
)
from env.maze import load_maze, maze_from_dict
from env.oracle import solve
from env.sets import MAZES_DIR, folder_files, resolve_maze, resolve_mazes, set_entries
from env.study_facts import SELECTION_BANDS, STUDY_EVAL_SIZE, STUDY_SOLVES

SETS = ("pool", "eval", "heldout", "hand", "long-horizon")
STUDY_POOL_SIZE = 214
STUDY_POOL_RANGE = (9, 106)  # Task Pool and the Evaluation Set: shortest plans from 9 to 106 actions


@functools.cache
def rederived(name: str) -> tuple[list, list[dict]]:
    """A set's mazes read from their files, each with its manifest entry computed afresh: the
    oracle's optimal action count and the counts of the maze itself, nothing from a manifest."""
    mazes = [load_maze(p) for p in folder_files(MAZES_DIR / name)]
    entries = []
    for m in mazes:
        sol = solve(m)
        assert sol.status == "solved", m.id
        entries.append(manifest_entry(m, sol.optimal_actions))
    return mazes, entries


def _unmet(constraints, entries, witness) -> list[str]:
    return [f"{c.what}: {achieved(c, entries, witness)}, wanted {c.wanted}" for c in constraints
            if not c.holds(achieved(c, entries, witness))]


@pytest.mark.parametrize("name", SETS)
def test_every_manifest_entry_is_rederived_from_its_file(name):
    manifest, _ = read_set(MAZES_DIR / name)
    mazes, entries = rederived(name)
    assert manifest["set"] == name and manifest["count"] == len(manifest["mazes"]) == len(mazes)
    assert sorted(e["file"] for e in manifest["mazes"]) == sorted(f"{m.id}.json" for m in mazes)
    by_id = {e["id"]: e for e in manifest["mazes"]}
    for maze, entry in zip(mazes, entries, strict=True):
        assert by_id[maze.id] == entry, maze.id
        failed = [r for r in run_checks(maze) if not r.passed]
        assert failed == [], (maze.id, failed)


def test_generated_mazes_regenerate_from_their_meta():
    mazes, _ = rederived("pool")
    for maze in mazes:
        assert regenerate(maze.meta).checksum == maze.checksum, maze.id


def test_pool_is_pairwise_distinct_and_spans_exactly_the_study_range():
    mazes, entries = rederived("pool")
    assert len(mazes) == STUDY_POOL_SIZE
    assert len({content_key(m) for m in mazes}) == STUDY_POOL_SIZE
    opts = [e["optimal_actions"] for e in entries]
    assert (min(opts), max(opts)) == STUDY_POOL_RANGE
    assert {e["grid"] for e in entries} == {"8x8", "10x10", "14x14"}
    assert {e["category"] for e in entries} == {"scale", "mechanism", "distractor"}
    assert len({e["chain_pattern"] for e in entries}) >= 8
    assert {e["topology"] for e in entries} == {"perfect", "rooms", "open", "winding"}


def test_eval_holds_every_study_constraint_recomputed_from_the_maze_files():
    _, entries = rederived("eval")
    assert len(entries) == STUDY_EVAL_SIZE
    constraints = constraints_for(STUDY_EVAL_SIZE)
    witness = find_solve_witness(entries, constraints)
    assert witness is not None, "no six eval mazes fit the study's solves"
    assert _unmet(constraints, entries, witness) == []
    for reading, solves in witness.items():
        assert all(could_be_solved(e) for e, _ in solves), reading
        assert sum(times for _, times in solves) == STUDY_SOLVES
    # both readings of the study's solved-maze count: six mazes once each, five with one twice
    assert sorted(times for _, times in witness["6 mazes"]) == [1] * 6
    assert sorted(times for _, times in witness["5 mazes"]) == [1, 1, 1, 1, 2]


def test_heldout_holds_its_scaled_constraints_and_is_disjoint_from_eval():
    _, ev = rederived("eval")
    _, ho = rederived("heldout")
    assert len(ho) == 15
    assert _unmet(constraints_for(15, heldout=True), ho, None) == []
    assert not {e["id"] for e in ev} & {e["id"] for e in ho}
    assert all(band_of(e["optimal_actions"]) in {b[0] for b in SELECTION_BANDS} for e in ho)
    # the ablation needs both mechanisms and a spread of path lengths
    assert any(e["counts"]["switch"] and e["counts"]["gate"] for e in ho)
    assert any(e["counts"]["key"] and e["counts"]["door"] for e in ho)
    assert len({band_of(e["optimal_actions"]) for e in ho}) == len(SELECTION_BANDS)


def test_eval_and_heldout_are_pool_mazes_file_for_file():
    pool = {m.id: m.checksum for m in rederived("pool")[0]}
    for name in ("eval", "heldout"):
        for m in rederived(name)[0]:
            assert pool[m.id] == m.checksum, (name, m.id)


@pytest.mark.parametrize("name", ["eval", "heldout"])
def test_the_manifest_provenance_reports_what_the_files_achieve(name):
    manifest, _ = read_set(MAZES_DIR / name)
    _, entries = rederived(name)
    by_id = {e["id"]: e for e in entries}
    recorded_witness = manifest["provenance"].get("solve_witness", {})
    witness = {r: [(by_id[i], ids.count(i)) for i in dict.fromkeys(ids)]
               for r, ids in recorded_witness.items()}
    constraints = constraints_for(len(entries), heldout=name == "heldout")
    recorded = {r["what"]: (r["target"], r["achieved"]) for r in manifest["provenance"]["constraints"]}
    assert recorded == {c.what: (c.wanted, achieved(c, entries, witness)) for c in constraints}
    assert _unmet(constraints, entries, witness) == []


def test_named_sets_resolve():
    assert len(resolve_mazes("eval")) == STUDY_EVAL_SIZE
    assert len(resolve_mazes("heldout")) == 15
    assert len(resolve_mazes("pool")) == STUDY_POOL_SIZE
    first = json.loads((MAZES_DIR / "eval" / "manifest.json").read_text())["mazes"][0]["id"]
    assert resolve_maze(f"eval/{first}").id == first
    assert resolve_maze(f"pool/{first}").checksum == resolve_maze(f"eval/{first}").checksum


def test_eval_heldout_and_long_horizon_carry_a_contact_sheet():
    from PIL import Image

    for name in ("eval", "heldout", "long-horizon"):
        img = Image.open(Path(MAZES_DIR / name / "contact_sheet.png"))
        assert img.width > 500 and img.height > 150


def test_long_horizon_carries_the_eval_categories_into_three_longer_bands():
    manifest, _ = read_set(MAZES_DIR / "long-horizon")
    _, entries = rederived("long-horizon")
    per_band = len(entries) // len(LONG_HORIZON_BANDS)
    assert len(entries) == LONG_HORIZON_COUNT == per_band * len(LONG_HORIZON_BANDS)
    assert manifest["provenance"]["bands"] == {band: {"grid": f"{side}x{side}", "optimal": [lo, hi]}
                                               for band, (side, lo, hi) in LONG_HORIZON_BANDS.items()}
    for band, (side, lo, hi) in LONG_HORIZON_BANDS.items():
        inside = [e for e in entries if e["long_horizon"] == {"band": band}]
        assert [e["grid"] for e in inside] == [f"{side}x{side}"] * per_band, band
        assert all(lo <= e["optimal_actions"] <= hi for e in inside), band
        assert Counter(e["category"] for e in inside) == largest_remainder(EVAL_CATEGORIES, per_band), band
    mechanism = [e for e in entries if e["category"] != "scale"]
    assert any(has_switch_gate(e) for e in mechanism) and any(has_key_door(e) for e in mechanism)
    # it takes the horizon on where the study's 50 and the eval set end
    longest = max(e["optimal_actions"] for name in ("study", "eval") for e in set_entries(name))
    assert min(e["optimal_actions"] for e in entries) > longest


def test_long_horizon_mazes_are_their_recipe_regenerated_byte_for_byte():
    manifest, _ = read_set(MAZES_DIR / "long-horizon")
    count, seed = (int(re.search(rf"--{opt} (\d+)", manifest["provenance"]["command"])[1]) for opt in ("count", "seed"))
    specs = long_horizon_recipe(count, seed)
    files = folder_files(MAZES_DIR / "long-horizon")
    assert [f"{s.maze_id}.json" for s in specs] == [p.name for p in files]
    for spec, path in zip(specs, files, strict=True):
        maze = load_maze(path)
        assert maze.meta is not None and maze.meta.generator["seed"] == spec.seed, maze.id
        again = regenerate(maze.meta).to_dict()
        again["meta"].update(spec.labels())
        assert maze_from_dict(again, maze.id).to_json() == path.read_text(encoding="utf-8"), maze.id


def test_the_long_horizon_recipe_is_deterministic_and_refuses_what_it_cannot_build(tmp_path, capsys):
    from app.cli import main

    assert long_horizon_recipe(9, 4) == long_horizon_recipe(9, 4) != long_horizon_recipe(9, 5)
    for args, field in ((["--count", "10"], "multiple of 3"), (["--ruleset", "multinet-r1"], "--ruleset")):
        with pytest.raises(SystemExit) as e:
            main(["pool", "build", "--recipe", "long-horizon", "--seed", "1", "--out", str(tmp_path / "lh"), *args])
        err = capsys.readouterr().err
        assert e.value.code == 2 and field in err and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / "lh").exists()
