"""Outcome tables on fabricated episode rows whose answers are known by construction."""

from __future__ import annotations

import numpy as np
import pytest
from tracefab import episode_row, write_run

from analysis.load import load_runs, mechanism_content, path_band
from analysis.metrics import (
    bands,
    difficulty_axes,
    headline,
    near_goal,
    overview,
    progress,
    solves,
    terminations,
)

# (model, maze, grid side, optimal, keys, doors, switches, gates, solved, progress, closest, termination)
ROWS = [
    ("A", "m1", 8, 20, 1, 1, 0, 0, True, 1.0, 0, "solved"),
    ("A", "m2", 10, 40, 0, 0, 1, 1, False, 0.5, 12, "stall"),
    ("A", "m3", 14, 55, 1, 1, 1, 1, False, 0.2, 30, "step_cap"),
    ("A", "m4", 14, 80, 0, 0, 0, 0, False, 0.0, 2, "stall"),
    ("B", "m1", 8, 20, 1, 1, 0, 0, False, 0.4, 8, "stall"),
    ("B", "m2", 10, 40, 0, 0, 1, 1, False, 0.3, 20, "stall"),
    ("B", "m3", 14, 55, 1, 1, 1, 1, False, 0.1, 40, "stall"),
    ("B", "m4", 14, 80, 0, 0, 0, 0, True, 1.0, 0, "solved"),
]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    rows = []
    for model, maze, side, opt, k, d, s, g, solved, prog, closest, term in ROWS:
        rows.append(episode_row(model_name=model, maze_id=maze, grid_width=side, grid_height=side,
                                grid=f"{side}x{side}", optimal_actions=opt, n_keys=k, n_doors=d, n_switches=s,
                                n_gates=g, solved=solved, progress_action=prog, progress_tile=min(1.0, prog + 0.1),
                                closest_action=closest, termination=term,
                                category="scale" if k + s == 0 else "mechanism"))
    rows.append(episode_row(model_name="B", maze_id="m2", repeat=1, termination="error", solved=False,
                            error_class="RateLimitError", progress_action=None))
    run = write_run(tmp_path_factory.mktemp("runs") / "run-a", rows, [])
    return load_runs([run])


def _row(t, **where):
    m = np.ones(len(t), dtype=bool)
    for k, v in where.items():
        m &= (t[k] == v).to_numpy()
    assert m.sum() == 1, where
    return t[m].iloc[0]


def test_error_episodes_are_excluded_but_counted(traces):
    assert len(traces.episodes) == 8 and len(traces.errors) == 1
    t = terminations(traces)
    b = _row(t, arm="B")
    assert (b["solved"], b["stall"], b["step_cap"], b["error"], b["episodes"]) == (1, 3, 0, 1, 5)
    a = _row(t, arm="A")
    assert (a["solved"], a["stall"], a["step_cap"], a["error"]) == (1, 2, 1, 0)
    assert _row(t, arm="all")["episodes"] == 9


def test_solves_per_model_and_pooled(traces):
    t = solves(traces)
    assert _row(t, arm="A")[["episodes", "solves"]].tolist() == [4, 1]
    assert _row(t, arm="all")[["episodes", "solves"]].tolist() == [8, 2]
    assert _row(t, arm="B")["mean_progress_action"] == pytest.approx((0.4 + 0.3 + 0.1 + 1.0) / 4)


def test_solves_by_grid_category_and_content(traces):
    g = solves(traces, "grid")
    assert list(g[g["arm"] == "all"]["grid"]) == ["8x8", "10x10", "14x14"]
    assert _row(g, arm="all", grid="14x14")[["episodes", "solves"]].tolist() == [4, 1]
    assert _row(g, arm="all", grid="8x8")[["episodes", "solves"]].tolist() == [2, 1]
    c = solves(traces, "content")
    assert _row(c, arm="all", content="key-door only")[["episodes", "solves"]].tolist() == [2, 1]
    assert _row(c, arm="all", content="switch-gate only")[["episodes", "solves"]].tolist() == [2, 0]
    assert _row(c, arm="all", content="both")[["episodes", "solves"]].tolist() == [2, 0]
    assert _row(c, arm="all", content="none")[["episodes", "solves"]].tolist() == [2, 1]
    cat = solves(traces, "category")
    assert _row(cat, arm="all", category="scale")["episodes"] == 2


def test_content_and_bands_definitions():
    import pandas as pd

    eps = pd.DataFrame({"n_keys": [1, 0, 1, 0, 2], "n_doors": [1, 0, 1, 0, 0],
                        "n_switches": [0, 1, 1, 1, 0], "n_gates": [0, 1, 1, 0, 0]})
    # a decoy switch with no gate is no switch-gate mechanism, nor is a key without a door
    assert list(mechanism_content(eps)) == ["key-door only", "switch-gate only", "both", "none", "none"]
    assert list(path_band(pd.Series([9, 30, 31, 45, 46, 60, 61, 106]))) == \
        ["<=30", "<=30", "31-45", "31-45", "46-60", "46-60", ">=61", ">=61"]


def test_progress_and_closest_approach(traces):
    t = progress(traces)
    a = _row(t, arm="A")
    assert a["mean_progress_action"] == pytest.approx(1.7 / 4)
    assert a["median_closest_action"] == pytest.approx(7.0)  # closest 0, 2, 12, 30
    # A's m4 came within 2 actions and did not solve; the solves (closest 0) do not count
    assert a["near_unsolved"] == 1 and _row(t, arm="B")["near_unsolved"] == 0
    h = headline(traces)
    assert h["solves"] == 2 and h["near_unsolved"] == 1 and h["mazes"] == 4 and h["mazes_solved_by_none"] == 2
    assert h["episodes_with_switch_gate"] == 4 and h["solves_with_switch_gate"] == 0
    assert (h["solves_max_optimal_actions"], h["solves_with_switches"], h["solves_with_distractors"]) == (80, 0, 0)


def test_near_goal_tells_coming_close_from_ending_close(tmp_path):
    # (solved, closest approach, final distance): came near and left; came near and stayed; never near;
    # a solve; came near, then made the goal unreachable (no final distance)
    cases = [(False, 2, 9), (False, 3, 3), (False, 10, 12), (True, 0, 0), (False, 1, None)]
    rows = [episode_row(maze_id=f"m{i}", solved=s, closest_action=c, d_end_action=d,
                        termination="solved" if s else "stall") for i, (s, c, d) in enumerate(cases)]
    traces = load_runs([write_run(tmp_path / "near", rows, [])])
    r = near_goal(traces).iloc[0]
    assert (r["episodes"], r["unsolved"], r["came_within_3"], r["ended_within_3"]) == (5, 4, 3, 1)
    assert r["median_end_unsolved"] == 9 and r["median_closest_unsolved"] == 2.5
    h = headline(traces)
    assert (h["near_unsolved"], h["ended_near_unsolved"]) == (3, 1)


def test_overview_per_arm(traces):
    t = overview(traces)
    a = _row(t, arm="A")
    assert (a["episodes"], a["mazes"], a["solves"], a["tokens_out"]) == (4, 4, 1, 40)
    assert a["mean_progress_action"] == pytest.approx(1.7 / 4)
    assert a["mean_progress_action_ci_low"] < a["mean_progress_action"] < a["mean_progress_action_ci_high"]
    assert _row(t, arm="all")[["episodes", "solves"]].tolist() == [8, 2]


def test_bands_counts_means_and_intervals(traces):
    t = bands(traces)
    allb = t[t["arm"] == "all"]
    assert list(allb["band"].astype(str)) == ["<=30", "31-45", "46-60", ">=61"]
    low = _row(allb, band="<=30")
    assert (low["episodes"], low["solves"], low["mazes"]) == (2, 1, 1)
    assert low["mean_progress_action"] == pytest.approx(0.7)
    assert np.isnan(low["mean_progress_action_ci_low"])  # one maze: no interval
    assert _row(allb, band=">=61")["mean_progress_action"] == pytest.approx(0.5)


def test_difficulty_axes_subsets(traces):
    t = difficulty_axes(traces)
    assert set(t["subset"]) == {"all", "optimal<=45"}
    assert set(t[t["subset"] == "all"]["n"]) == {8}
    assert set(t[t["subset"] == "optimal<=45"]["n"]) == {4}
    opt = _row(t, subset="all", property="optimal_actions")
    assert 0 <= opt["r2_model_only"] <= opt["r2"] <= 1


def test_ablation_pairs_by_maze_and_matches_scipy(tmp_path):
    from scipy import stats as sps

    from analysis.ablation import ablation
    from analysis.stats import RESAMPLES, SEED

    base = {"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.5}
    cond = {"a": [0.2, 0.4], "b": [0.4, 0.4], "c": [0.3, 0.3]}  # two repeats each; "d" never ran
    rows = [episode_row(model_name="m", maze_id=k, condition="baseline", progress_action=v) for k, v in base.items()]
    rows += [episode_row(model_name="m", maze_id=k, condition="more-history", repeat=r, progress_action=v,
                         solved=v >= 0.4, termination="solved" if v >= 0.4 else "stall")
             for k, vs in cond.items() for r, v in enumerate(vs)]
    t = ablation(load_runs([write_run(tmp_path / "abl", rows, [])]))
    row = t.iloc[0]
    assert (row["model_name"], row["condition"], row["mazes"]) == ("m", "more-history", 3)
    diffs = np.array([0.3 - 0.1, 0.4 - 0.2, 0.3 - 0.3])  # repeats averaged first, then paired
    assert row["progress_diff"] == pytest.approx(diffs.mean())
    ci = sps.bootstrap((diffs,), np.mean, n_resamples=RESAMPLES, method="percentile",
                       rng=np.random.default_rng(SEED)).confidence_interval
    assert (row["progress_diff_ci_low"], row["progress_diff_ci_high"]) == pytest.approx((ci.low, ci.high))
    assert row["solve_rate_diff"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert row["baseline_progress"] == pytest.approx(0.2)  # the unpaired maze "d" is left out


def test_the_horizon_section_goes_on_past_the_studys_bands(tmp_path, traces):
    """Mazes of 150 actions and more get bands of their own in a section of their own; the study's
    bands (and their >=61) stay as they are, and without such mazes the section is not there."""
    from analysis.metrics import _horizon
    from analysis.sections import Context

    rows = [episode_row(model_name="A", maze_id=f"lh{opt}", optimal_actions=opt, solved=opt < 200,
                        progress_action=0.9 if opt < 200 else 0.2, termination="solved" if opt < 200 else "step_cap")
            for opt in (40, 120, 180, 320, 560)]
    long = load_runs([write_run(tmp_path / "run-long", rows, [])])
    study = bands(long)
    assert list(study[study["arm"] == "A"]["band"].astype(str)) == ["31-45", ">=61"]
    t = bands(long, "horizon_band")
    got = t[t["arm"] == "A"].set_index(t[t["arm"] == "A"]["band"].astype(str))
    assert list(got.index) == ["31-45", "61-149", "150-249", "250-399", ">=400"]
    assert got.loc["150-249", "solves"] == 1 and got.loc[">=400", "solves"] == 0
    assert got.loc[">=400", "mean_progress_action"] == pytest.approx(0.2)
    built = _horizon(Context(long, None, {}))  # type: ignore[arg-type]
    assert built is not None and "horizon_bands" in built.figures
    assert _horizon(Context(traces, None, {})) is None  # type: ignore[arg-type]
