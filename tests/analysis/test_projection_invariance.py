"""Projection invariance (docs/report.md#projections): each projection twin against its arm's own
view, paired by source maze with the twins' interval, and the reading, on fabricated runs whose
truth is built in."""

from __future__ import annotations

import pandas as pd
import pytest
from tracefab import episode_row, write_run

from agents.protocol import Protocol, projected
from analysis import twins
from analysis.load import load_runs
from analysis.stats import mean_ci
from env import resolve_maze
from env.variants import projection

MAZES = 6
VIEWS = ("first_person", "text")


def _protocol_json(view: str) -> str:
    twin = projection(resolve_maze("example"), view)
    return projected(Protocol(), twin.maze).to_json()  # type: ignore[union-attr]


def _progress(agent: str, view: str | None, maze: int) -> float:
    if agent == "steady":  # reads the task: the same score whatever it is shown
        return 0.3 + 0.1 * (maze % 4)
    if agent == "text-blind":  # lost without a frame; what it does with one varies by maze
        return 0.0 if view == "text" else 0.5 + 0.1 * (maze % 5)
    # frame-bound: better in 3D than in 2D, by an amount that varies by maze
    return min(1.0, 0.4 + (0.1 + 0.05 * (maze % 3) if view == "first_person" else 0.0))


def _rows(agents=("steady", "text-blind", "frame-bound"), mazes: int = MAZES) -> list[dict]:
    rows = []
    for agent in agents:
        for m in range(mazes):
            source = f"m{m}"
            rows.append(episode_row(model_name=agent, maze_id=source, maze_checksum=f"c-{source}",
                                    protocol=Protocol().to_json(), progress_action=_progress(agent, None, m)))
            for view in VIEWS:
                name = f"projection-{view}"
                p = _progress(agent, view, m)
                rows.append(episode_row(
                    model_name=agent, maze_id=f"{source}.{name}", maze_checksum=f"c-{source}.{name}",
                    protocol=_protocol_json(view), variant=name, variant_kind="projection",
                    variant_family="projection", twin_of=source, twin_of_checksum=f"c-{source}",
                    progress_action=p, solved=p == 1.0))
    return rows


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    return load_runs([write_run(tmp_path_factory.mktemp("runs") / "proj", _rows(), [])], resolve_mazes=False)


def test_each_projection_is_a_row_of_its_own_paired_by_source_maze(traces):
    effects = twins.paired_effects(traces)
    proj = effects[effects["kind"] == "projection"].set_index(["arm", "variants"])
    assert len(proj) == 3 * len(VIEWS)  # never pooled over the projections
    row = proj.loc[("text-blind", "projection-text")]
    diffs = [0.0 - (0.5 + 0.1 * (m % 5)) for m in range(MAZES)]
    expected = mean_ci(diffs)
    assert row["mazes"] == MAZES and row["progress_diff"] == pytest.approx(expected.value)
    assert (row["progress_diff_ci_low"], row["progress_diff_ci_high"]) == pytest.approx((expected.low, expected.high))
    assert row["progress_diff_ci_high"] < 0  # the right sign: worse under the text map
    assert proj.loc[("text-blind", "projection-first_person"), "progress_diff"] == 0.0
    assert proj.loc[("frame-bound", "projection-first_person"), "progress_diff_ci_low"] > 0


def test_the_reading_says_which_models_read_the_interface(traces):
    table, summary = twins.projection_invariance(twins.paired_effects(traces), traces)
    moves = {(r.arm, r.projection): r.moves for r in table.itertuples()}
    assert moves == {("steady", "first_person"): False, ("steady", "text"): False,
                     ("text-blind", "first_person"): False, ("text-blind", "text"): True,
                     ("frame-bound", "first_person"): True, ("frame-bound", "text"): False}
    assert set(table["against"]) == {"2d"}
    reading = dict(zip(summary["arm"], summary["reading"], strict=True))
    assert reading["steady"].startswith(twins.INVARIANT) and "first_person, text against 2d" in reading["steady"]
    lost = -sum(_progress("text-blind", None, m) for m in range(MAZES)) / MAZES
    gained = sum(_progress("frame-bound", "first_person", m) - 0.4 for m in range(MAZES)) / MAZES
    assert reading["text-blind"].startswith(twins.INTERFACE) and f"text: progress {lost:+.2f}," in reading["text-blind"]
    assert reading["frame-bound"].startswith(twins.INTERFACE)
    assert f"first_person: progress {gained:+.2f}," in reading["frame-bound"]
    assert dict(zip(summary["arm"], summary["moves_with"], strict=True)) == {
        "steady": "", "text-blind": "text", "frame-bound": "first_person"}
    # the isomorphic check is not where projections are read
    assert twins.invariance(twins.paired_effects(traces)).empty


def test_one_maze_gives_no_reading(tmp_path):
    traces = load_runs([write_run(tmp_path / "one", _rows(agents=("text-blind",), mazes=1), [])], resolve_mazes=False)
    table, summary = twins.projection_invariance(twins.paired_effects(traces), traces)
    assert set(table["reading"]) == {twins.NO_READING}
    assert summary["reading"].iloc[0].startswith("no reading")


def test_the_report_has_the_section_and_its_reading(tmp_path):
    from analysis.report import build_report

    metrics = build_report([write_run(tmp_path / "proj", _rows(), [])], tmp_path / "report")
    assert "projections" in metrics["definitions"]
    md = (tmp_path / "report" / "report.md").read_text()
    assert "## Projection invariance" in md
    assert "reading the interface, not the task" in md  # the reading's rule, in the section's words
    reading = pd.DataFrame(metrics["tables"]["projection_reading"]).set_index("arm")["reading"]
    assert reading["text-blind"].startswith(twins.INTERFACE) and reading["steady"].startswith(twins.INVARIANT)
    html = (tmp_path / "report" / "report.html").read_text()
    assert "<h2 id='projections'>" in html
