"""The shipped sets are re-derived from their files, so data can never drift from the code, and
every study constraint on the eval and held-out sets is recomputed from the maze files."""

import functools
import json
from pathlib import Path

import pytest

from env.checks import run_checks
from env.generator.maze_pool import content_key, manifest_entry, read_set
from env.generator.strata import (
    achieved,
    band_of,
    constraints_for,
    could_be_solved,
    find_solve_witness,
)
from env.maze import load_maze
from env.oracle import solve
from env.sets import MAZES_DIR, folder_files, resolve_maze, resolve_mazes
from env.study_facts import SELECTION_BANDS, STUDY_EVAL_SIZE, STUDY_SOLVES

SETS = ("pool", "eval", "heldout", "hand")
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
    from env.generator import regenerate

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


def test_eval_and_heldout_carry_a_contact_sheet():
    from PIL import Image

    for name in ("eval", "heldout"):
        img = Image.open(Path(MAZES_DIR / name / "contact_sheet.png"))
        assert img.width > 500 and img.height > 150
