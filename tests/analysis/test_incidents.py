"""The report's *Incidents* section (``analysis.incidents``) on a fabricated run whose failures are
known: two arms, retried failures of two classes at known times in the steps' ``failures`` column,
and one episode that ended in error."""

from __future__ import annotations

import json
from datetime import timedelta

import pandas as pd
import pytest
from tracefab import T0, episode_row, play, room_maze, write_run

from analysis import incidents
from analysis.load import load_runs
from analysis.sections import Context


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat()


def fail(cls: str, minutes: float, waited_s: float) -> dict:
    return {"class": cls, "at": at(minutes), "waited_s": waited_s}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    maze = room_maze(5)
    end = T0 + timedelta(minutes=40)
    a, a_steps = play(maze, ["forward", "forward"], model_name="A", started_at=T0, finished_at=end)
    b, b_steps = play(maze, ["forward"], model_name="B", started_at=T0, finished_at=end)
    # A: two rate limits in the first 10 minutes (one step retried twice), a 500 in the second
    a_steps[0]["failures"] = json.dumps([fail("RateLimitError", 2, 30.0), fail("RateLimitError", 5, 60.0)])
    a_steps[1]["failures"] = json.dumps([fail("InternalServerError", 12, 4.0)])
    # B: a rate limit in the third bin, and an episode that timed out in the fourth
    b_steps[0]["failures"] = json.dumps([fail("RateLimitError", 25, 120.0)])
    lost = episode_row(model_name="B", maze_id=maze.id, repeat=1, termination="error", error_class="Timeout",
                       steps=0, started_at=T0 + timedelta(minutes=20), finished_at=T0 + timedelta(minutes=31))
    return write_run(tmp_path_factory.mktemp("incidents") / "run-a", [a, b, lost], a_steps + b_steps)


def test_failures_are_counted_per_bin_and_class_with_the_hours_waited(run):
    traces = load_runs([run], resolve_mazes=False)
    fails = incidents.failures(traces)
    assert len(fails) == 4 and set(fails["episode_id"]) == {"A-room5-baseline-0", "B-room5-baseline-0"}

    bins = incidents.timeline(traces, fails)
    got = {(r.arm, int((r.bin_start - T0).total_seconds() // 60), r.error_class):
           (r.failures, round(r.waited_h * 3600, 6), r.error_episodes) for r in bins.itertuples()}
    assert got == {("A", 0, "RateLimitError"): (2, 90.0, 0), ("A", 10, "InternalServerError"): (1, 4.0, 0),
                   ("B", 20, "RateLimitError"): (1, 120.0, 0), ("B", 30, "Timeout"): (0, 0.0, 1)}
    assert set(bins["bin_minutes"]) == {10}  # a 40-minute run: 10-minute bins

    summary = incidents.incidents(traces, fails).set_index(["arm", "error_class"])
    assert summary.loc[("A", "RateLimitError"), "failures"] == 2
    assert summary.loc[("A", "RateLimitError"), "waited_h"] == pytest.approx(90 / 3600)
    assert summary.loc[("A", "RateLimitError"), "first_at"] == pd.Timestamp(at(2))
    assert summary.loc[("A", "RateLimitError"), "last_at"] == pd.Timestamp(at(5))
    assert summary.loc[("B", "Timeout"), ["failures", "error_episodes"]].tolist() == [0, 1]
    assert summary["waited_h"].sum() == pytest.approx((30 + 60 + 4 + 120) / 3600)


def test_the_section_draws_a_timeline_and_a_run_without_failures_gets_none(run, tmp_path):
    traces = load_runs([run], resolve_mazes=False)
    built = incidents.INCIDENTS_SECTION.build(Context(traces, None, {}))  # type: ignore[arg-type]
    assert built is not None and list(built.tables) == ["incidents", "incident_timeline"]
    fig = built.figures["incident_timeline"]
    assert len(fig.axes) == 2  # one panel per arm
    maze = room_maze(5)
    calm, calm_steps = play(maze, ["forward"], model_name="A")
    quiet = load_runs([write_run(tmp_path / "calm", [calm], calm_steps)], resolve_mazes=False)
    assert incidents.INCIDENTS_SECTION.build(Context(quiet, None, {})) is None  # type: ignore[arg-type]


def test_long_runs_are_binned_by_the_hour(run):
    traces = load_runs([run], resolve_mazes=False)
    traces.episodes["finished_at"] = pd.Timestamp(T0 + timedelta(hours=7))
    assert incidents.run_spans(traces)["bin_minutes"].tolist() == [60]
    bins = incidents.timeline(traces, incidents.failures(traces))
    assert set(bins["bin_start"]) == {pd.Timestamp(T0)}  # every failure in the run's first hour
    assert bins.groupby("arm")["failures"].sum().to_dict() == {"A": 3, "B": 1}
