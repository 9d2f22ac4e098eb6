"""The shipped sets are re-derived from their files, so data can never drift from the code."""

import json
from pathlib import Path

import pytest

from env.checks import run_checks
from env.generator.pool import (
    BANDS,
    STUDY_EVAL,
    band_of,
    content_key,
    manifest_entry,
    read_set,
    tally,
)
from env.oracle import solve
from env.sets import MAZES_DIR, resolve_maze, resolve_mazes

SETS = ("pool", "eval", "heldout", "hand")


@pytest.mark.parametrize("name", SETS)
def test_every_manifest_entry_is_rederived_from_its_file(name):
    manifest, mazes = read_set(MAZES_DIR / name)
    assert manifest["set"] == name and manifest["count"] == len(manifest["mazes"]) == len(mazes)
    files = sorted(p.name for p in (MAZES_DIR / name).glob("*.json") if p.name != "manifest.json")
    assert files == sorted(e["file"] for e in manifest["mazes"])
    for entry, maze in zip(manifest["mazes"], mazes, strict=True):
        sol = solve(maze)
        assert sol.status == "solved", maze.id
        assert manifest_entry(maze, sol.optimal_actions) == entry, maze.id
        failed = [r for r in run_checks(maze) if not r.passed]
        assert failed == [], (maze.id, failed)


def test_generated_mazes_regenerate_from_their_meta():
    from env.generator import regenerate

    _, mazes = read_set(MAZES_DIR / "pool")
    for maze in mazes:
        assert regenerate(maze.meta).checksum == maze.checksum, maze.id


def test_pool_is_pairwise_distinct_and_spans_the_study_range():
    manifest, mazes = read_set(MAZES_DIR / "pool")
    assert len(mazes) == 214
    assert len({content_key(m) for m in mazes}) == 214
    opts = [e["optimal_actions"] for e in manifest["mazes"]]
    assert min(opts) < 20 and max(opts) > 100
    assert {e["grid"] for e in manifest["mazes"]} == {"8x8", "10x10", "14x14"}
    assert {e["category"] for e in manifest["mazes"]} == {"scale", "mechanism", "distractor"}
    assert len({e["chain_pattern"] for e in manifest["mazes"]}) >= 8
    assert {e["topology"] for e in manifest["mazes"]} == {"perfect", "rooms", "open", "winding"}


def test_eval_meets_the_study_strata_and_heldout_is_disjoint_from_it():
    ev, _ = read_set(MAZES_DIR / "eval")
    ho, _ = read_set(MAZES_DIR / "heldout")
    got = tally(ev["mazes"])
    for axis in ("band", "grid", "category"):
        assert got[axis] == STUDY_EVAL[axis]
    assert got["at_least"]["switch+gate"] >= 35 and got["at_least"]["key+door"] >= 20
    assert len(ho["mazes"]) == 15
    assert not {e["id"] for e in ev["mazes"]} & {e["id"] for e in ho["mazes"]}
    assert all(band_of(e["optimal_actions"]) in {b[0] for b in BANDS} for e in ho["mazes"])
    pool = {e["id"]: e for e in json.loads((MAZES_DIR / "pool" / "manifest.json").read_text())["mazes"]}
    for e in ev["mazes"] + ho["mazes"]:
        assert pool[e["id"]] == e  # the same file content as in the pool


def test_named_sets_resolve():
    assert len(resolve_mazes("eval")) == 50
    assert len(resolve_mazes("heldout")) == 15
    assert len(resolve_mazes("pool")) == 214
    first = json.loads((MAZES_DIR / "eval" / "manifest.json").read_text())["mazes"][0]["id"]
    assert resolve_maze(f"eval/{first}").id == first
    assert resolve_maze(f"pool/{first}").checksum == resolve_maze(f"eval/{first}").checksum


def test_eval_and_heldout_carry_a_contact_sheet():
    from PIL import Image

    for name in ("eval", "heldout"):
        img = Image.open(Path(MAZES_DIR / name / "contact_sheet.png"))
        assert img.width > 500 and img.height > 150
