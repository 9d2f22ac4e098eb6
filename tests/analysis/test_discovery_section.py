"""The discovery section on steps played through the dynamics: an agent that never toggles, the
oracle, and one that walks away."""

from __future__ import annotations

import json

import pytest
from tracefab import play, write_run

from analysis import discovery
from analysis.load import load_runs
from env import initial_state, resolve_maze, step
from env.discovery import Move, timelines
from env.oracle import solve
from env.state import ACTIONS, TOGGLE


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    maze = resolve_maze("example")
    plan = solve(maze).plan
    agents = {"oracle": plan, "never-toggle": [a for a in plan if a != TOGGLE],
              "spinner": [ACTIONS.index("left")] * 8}
    rows, steps = [], []
    for name, actions in agents.items():
        for r in range(2):
            row, st = play(maze, [ACTIONS[a] for a in actions], model_name=name, repeat=r)
            rows.append(row)
            steps += st
    folder = write_run(tmp_path_factory.mktemp("r") / "disc", rows, steps)
    (folder / "manifest.json").write_text(json.dumps({"format": "gridbench.run/1", "run": "disc",
                                                       "mazes": {maze.checksum: maze.to_dict()}}))
    return folder, maze, agents


def _expected(maze, actions) -> dict[str, dict[str, int | None]]:
    state, moves = initial_state(maze), []
    for n, a in enumerate(actions, start=1):
        after, _ = step(maze, state, a)
        moves.append(Move(n, a, state, after))
        state = after
    return {t.kind: {s: getattr(t, s) for s in discovery.STAGES} for t in timelines(maze, initial_state(maze), moves)}


def test_shares_and_median_steps_are_those_of_the_timelines(run):
    folder, maze, agents = run
    t = discovery.discovery(load_runs([folder])).set_index(["arm", "kind"])
    assert set(t.index.get_level_values("kind")) == {"key", "door", "switch", "gate"}
    for name, actions in agents.items():
        want = _expected(maze, actions)  # one object of each kind in the design example
        for kind, stages in want.items():
            row = t.loc[(name, kind)]
            assert row["episodes"] == 2
            for s, at in stages.items():
                assert row[f"{s}_share"] == (0.0 if at is None else 1.0), (name, kind, s)
                assert (row[f"{s}_median_step"] == at) if at is not None else row[f"{s}_median_step"] != row[
                    f"{s}_median_step"]
    # the never-toggle agent takes the key, meets the locked door and never tries it, so it never
    # gets to the switch behind it
    assert t.loc[("never-toggle", "key"), "success_share"] == 1.0
    assert t.loc[("never-toggle", "door"), "contact_share"] == 1.0
    assert t.loc[("never-toggle", "door"), "attempt_share"] == 0.0
    assert t.loc[("never-toggle", "switch"), "contact_share"] == 0.0
    assert t.loc[("oracle", "gate"), "use_share"] == 1.0 and t.loc[("oracle", "gate"), "attempt_share"] == 0.0
    pooled = t.loc[("all", "switch")]
    assert pooled["episodes"] == 6 and pooled["attempt_share"] == pytest.approx(2 / 6)


def test_the_report_shows_discovery_and_writes_it_to_metrics_json(run, tmp_path):
    from analysis.report import build_report

    folder, _, _ = run
    metrics = build_report([folder], tmp_path / "report")
    assert "discovery" in metrics["definitions"]
    got = metrics["discovery"]["never-toggle"]["door"]
    assert got["episodes"] == 2 and got["attempt"]["share"] == 0.0 and got["attempt"]["median_step"] is None
    assert got["contact"]["share"] == 1.0 and isinstance(got["contact"]["median_step"], float)
    assert "## Discovery timelines" in (tmp_path / "report" / "report.md").read_text()


def test_an_arm_beyond_the_sample_is_read_for_the_sample_only(run, monkeypatch):
    folder, _, _ = run
    monkeypatch.setattr(discovery, "SAMPLE", 1)
    t = discovery.discovery(load_runs([folder]))
    assert set(t.loc[t["arm"] != "all", "episodes"]) == {1}
