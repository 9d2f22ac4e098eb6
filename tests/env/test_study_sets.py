"""The study's own mazes, shipped as ``study`` (its 50 R1 eval mazes) and ``study-heldout`` (its 15
ablation mazes): every maze is re-solved by gridbench's oracle and by a BFS over the rulebook
written in ``r1_rulebook.py``, and both must give the optimal count the study stored, maze by maze
(where it stored none, the rulebook's count); random walks on every maze agree step by step."""

from __future__ import annotations

import functools
import json
import random
import re
from pathlib import Path

import pytest
from maze_strategies import random_r1_maze
from r1_rulebook import Rulebook, project

from env.generator.maze_pool import content_key, manifest_entry, read_set
from env.oracle import solve
from env.sets import MAZES_DIR, NAMED_SETS, resolve_mazes
from env.state import initial_state, step

STUDY_SETS = ("study", "study-heldout")
# ranks whose published file reproduces the stored optimum but not the stored explored-state count
# (the study's RULES.md §9: most likely small file differences)
STATES_DIFFER = {29, 45, 49, 50}
UNREPRODUCED = "r1_M6_8x8_corridor_kr_sg_kb_0"  # no published version reproduces its stored 30


@functools.cache
def shipped(name: str):
    manifest, mazes = read_set(MAZES_DIR / name)
    return manifest, mazes, [solve(m) for m in mazes], [Rulebook(m).shortest() for m in mazes]


@pytest.mark.parametrize("name", STUDY_SETS)
def test_every_study_maze_gets_the_count_the_study_stored(name):
    manifest, mazes, sols, theirs = shipped(name)
    assert name in NAMED_SETS and len(mazes) == {"study": 50, "study-heldout": 15}[name]
    for maze, entry, sol, (optimal, generated) in zip(mazes, manifest["mazes"], sols, theirs, strict=True):
        study = maze.meta.study
        assert maze.ruleset == "multinet-r1" and sol.status == "solved", maze.id
        # the oracle is the rulebook: the same optimum and the study's count of generated states
        assert (sol.optimal_actions, sol.states_explored) == (optimal, generated), maze.id
        assert (study["optimal"], study["states_explored"]) == (optimal, generated), maze.id
        stored = study.get("stored_optimal")
        if maze.id == UNREPRODUCED:
            assert stored == 30 and optimal == 27 and study["reproduced"] is False and "note" in study
        elif stored is not None:
            assert optimal == stored and study["reproduced"] is True, maze.id
        assert entry["study"] == study and entry["optimal_actions"] == optimal


def test_the_stored_explored_state_counts_are_reproduced_where_the_files_allow():
    _, mazes, sols, _ = shipped("study")
    matched = {m.meta.study["rank"] for m, s in zip(mazes, sols, strict=True)
               if s.states_explored == m.meta.study["stored_states"]}
    reproduced = {m.meta.study["rank"] for m in mazes if m.meta.study["reproduced"]}
    assert len(reproduced) == 49 and len(matched) == 45 and matched == reproduced - STATES_DIFFER
    _, held, held_sols, _ = shipped("study-heldout")
    stored = [(m.meta.study["stored_states"], s.states_explored) for m, s in zip(held, held_sols, strict=True)
              if "stored_states" in m.meta.study]
    assert len(stored) == 7 and all(a == b for a, b in stored)


@pytest.mark.parametrize("name", STUDY_SETS)
def test_random_walks_agree_with_the_rulebook_step_by_step(name):
    _, mazes, _, _ = shipped(name)
    rng = random.Random(21)
    for maze in mazes:
        book = Rulebook(maze)
        ours, theirs = initial_state(maze), book.start()
        assert project(maze, ours) == theirs, maze.id
        for i in range(250):
            a = rng.choice((0, 1, 2, 2, 2, 3, 4, 5))  # forward more often, so walks get somewhere
            ours, _ = step(maze, ours, a)
            theirs = book.apply(theirs, {4: 5, 5: 6}.get(a, a))  # gridbench's toggle/done are 4/5
            assert project(maze, ours) == theirs, (maze.id, i)


def test_every_mechanism_of_the_rulebook_agrees_on_random_mazes():
    """Hold and one-shot switches, open gates, teleporters, hazards, blocks, kill cells and frozen
    tiles are in no study maze: random mazes with all of them, walked and solved both ways."""
    rng = random.Random(2026)
    for _ in range(80):
        maze = random_r1_maze(rng)
        book = Rulebook(maze)
        sol = solve(maze)
        assert (sol.optimal_actions, sol.states_explored) == book.shortest()
        ours, theirs = initial_state(maze), book.start()
        for i in range(150):
            a = rng.randrange(6)
            ours, _ = step(maze, ours, a)
            theirs = book.apply(theirs, {4: 5, 5: 6}.get(a, a))
            assert project(maze, ours) == theirs, (i, maze.to_json())


@pytest.mark.parametrize("name", STUDY_SETS)
def test_the_manifest_is_rederived_from_the_files_with_provenance(name):
    manifest, mazes, sols, _ = shipped(name)
    assert manifest["set"] == name and manifest["count"] == len(mazes)
    for maze, entry, sol in zip(mazes, manifest["mazes"], sols, strict=True):
        base = manifest_entry(maze, sol.optimal_actions)
        assert {k: entry[k] for k in base} == base
        prov = maze.meta.provenance
        assert entry["provenance"] == prov and prov["licence"].startswith("MIT")
        assert prov["repository"] in ("ManifoldRG/ogbench", "ManifoldRG/MultiNet-v2.0",
                                      "bluebunnyanon/agent-benchmark-2d-maze")
        assert re.fullmatch(r"[0-9a-f]{40}", prov["commit"]) and prov["path"].endswith(".json")
        assert isinstance(prov["reconstructed"], bool) and (prov["reconstructed"] == ("note" in prov))
        assert maze.meta.source == f"imported:multinet:{prov['path']}"
    notice = (MAZES_DIR / name / "LICENSE.txt").read_text()
    assert "MIT License" in notice and "Copyright (c) 2026 Manifold Research Group" in notice


def test_the_two_sets_record_their_overlap():
    ev_manifest, ev, _, _ = shipped("study")
    ho_manifest, ho, _, _ = shipped("study-heldout")
    keys = {content_key(m): m.id for m in ev}
    overlap = [{"study-heldout": m.id, "study": keys[content_key(m)]} for m in ho if content_key(m) in keys]
    assert [o["study"] for o in overlap] == ["r1_S5_14x14_corridor_1", "r1_D3_10x10_dense_deadend_ky_dy_1"]
    assert ev_manifest["provenance"]["overlap"] == ho_manifest["provenance"]["overlap"] == overlap
    same = {e["id"]: e.get("same_maze_as") for e in ho_manifest["mazes"]}
    assert {k: v for k, v in same.items() if v} == {o["study-heldout"]: f"study/{o['study']}" for o in overlap}


def test_the_study_set_resolves_in_rank_order_with_the_studys_composition():
    mazes = resolve_mazes("study")
    assert [m.meta.study["rank"] for m in mazes] == list(range(1, 51))
    assert [m.category for m in mazes].count("scale") == 3 and [m.category for m in mazes].count("distractor") == 10
    assert {f"{m.width}x{m.height}" for m in mazes} == {"8x8", "10x10", "14x14"}


def test_the_composition_tables_of_the_docs_are_computed():
    from env.generator.strata import shipped_composition

    doc = (Path(__file__).resolve().parents[2] / "docs" / "generator.md").read_text()
    found = re.search(r"<!-- composition: .*?-->\n(.*?)<!-- /composition -->", doc, re.DOTALL)
    assert found, "docs/generator.md has no generated composition table"
    assert found.group(1) == shipped_composition(), "run python -m env.generator.strata"


def test_a_maze_that_no_file_reproduces_is_named_in_the_report(tmp_path):
    from types import SimpleNamespace

    from analysis.study import unreproduced_mazes

    mazes = {m.id: m for m in resolve_mazes(["study/r1_M6_8x8_corridor_kr_sg_kb_0", "study/r1_S4_10x10_dense_1"])}
    named = unreproduced_mazes(SimpleNamespace(mazes={**mazes, "gone": None}))
    assert named == [{"maze_id": UNREPRODUCED, "set": "study", "stored_optimal": 30, "optimal": 27}]
    assert json.loads(json.dumps(named)) == named  # it goes into metrics.json
