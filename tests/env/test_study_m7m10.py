"""The shipped set ``study-m7m10``: the study's 16 post-R1 mazes (ogbench M7-M10), 15 written and the
box maze refused by name. ``gridbench maze solve`` agrees on every maze with a search written in
the test from the issue's rules (tests/env/pr57_rulebook.py), under the harness's death rule and
under the maze files' own (a death fails the episode); the manifest says what the study stored."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pr57_rulebook import LaterRulebook

from env.checks import run_checks
from env.generator.maze_pool import manifest_entry, read_set
from env.maze import maze_from_dict
from env.oracle import solve
from env.sets import MAZES_DIR, folder_files, resolve_maze, resolve_mazes

SET = "study-m7m10"
FAMILY_SIZES = {"M7": 5, "M8": 6, "M9": 4, "M10": 1}  # the study's 16 files


@pytest.fixture(scope="module")
def manifest() -> dict:
    return json.loads((MAZES_DIR / SET / "manifest.json").read_text(encoding="utf-8"))


def test_the_sixteen_files_are_all_accounted_for(manifest):
    written = [e["study"]["family"] for e in manifest["mazes"]]
    (refused,) = manifest["not_written"]
    assert refused["file"] == "M7/18x18_dense_kr_sg_kb_box_0.json" and refused["field"] == "mechanisms.blocks[0].pushable"
    families = [*written, refused["file"].split("/")[0]]
    assert {f: families.count(f) for f in FAMILY_SIZES} == FAMILY_SIZES and len(families) == 16
    assert manifest["provenance"]["ruleset"] == "multinet-pr57" and (MAZES_DIR / SET / "LICENSE.txt").is_file()
    for e in manifest["mazes"]:
        prov = e["provenance"]
        assert prov["repository"] == "ManifoldRG/ogbench" and len(prov["commit"]) == 40
        assert prov["path"] == f"ogbench/procgen/maze_jsons/{e['study']['family']}/{e['id'].split('_', 1)[1]}.json"
        assert prov["licence"].startswith("MIT")
        assert e["study"]["stored"] is None and "no stored run manifest" in e["study"]["stored_note"]


def test_the_manifest_is_what_the_files_say(manifest):
    read, mazes = read_set(MAZES_DIR / SET)
    assert read == manifest and [m.id for m in mazes] == [e["id"] for e in manifest["mazes"]]
    for path, entry in zip(folder_files(MAZES_DIR / SET), sorted(manifest["mazes"], key=lambda e: e["file"]),
                           strict=True):
        m = resolve_maze(str(path))
        sol = solve(m)
        fresh = manifest_entry(m, sol.optimal_actions)
        assert {k: entry[k] for k in fresh} == fresh
        assert entry["study"]["states_explored"] == sol.states_explored


def test_maze_solve_agrees_with_a_search_written_from_the_rules(manifest):
    r = subprocess.run([sys.executable, "-m", "app.cli", "maze", "solve", SET, "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    solved = {d["id"]: d["optimal_actions"] for d in map(json.loads, r.stdout.splitlines())}
    by_id = {e["id"]: e for e in manifest["mazes"]}
    assert set(solved) == set(by_id) and len(solved) == 15
    for m in resolve_mazes(SET):
        independent = LaterRulebook(m).shortest()
        assert solved[m.id] == independent == by_id[m.id]["optimal_actions"], m.id
        # the maze files' own reading: a death ends the episode in failure
        fails = maze_from_dict({**m.to_dict(), "rules": {**m.to_dict()["rules"], "death": "fail"}}, m.id)
        assert solve(fails).optimal_actions == LaterRulebook(m, death_fails=True).shortest() \
            == by_id[m.id]["study"]["optimal_death_fails"], m.id
    # what the issue measured against the harness's rules
    assert solved["M8_18x18_dense_kr_sg_kb_portals_death_0"] == 77
    assert solved["M7_18x18_dense_kr_sg_kb_rotating_0"] == 133


@pytest.mark.parametrize("maze_id", ["M7_18x18_dense_kr_sg_kb_rotating_0",
                                     "M10_18x18_dense_kr_sg_kb_portals_death_rotating_frozen_0"])
def test_the_four_checks_pass(maze_id):
    results = run_checks(resolve_maze(f"{SET}/{maze_id}"))
    assert {r.check for r in results} == {"reachable", "mechanism_necessity", "chain_ordering", "distractor_safety"}
    assert all(r.passed for r in results), [r for r in results if not r.passed]
