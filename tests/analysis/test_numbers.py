"""Small synthetic runs with known answers, holding each table to what its data can say: the
study's unclipped progress, intervals that are exact or flagged (never a bare [x, x]), exact paired
tests, maze-clustered regressions and a headline that names no axis from an increment that cannot
be told from zero, and the definitions the study leaves open (docs/report.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tracefab import episode_row, play, room_maze, write_run

from analysis import metrics, ranking
from analysis.load import load_runs
from analysis.report import _axis_line
from analysis.stats import (
    CLOPPER_PEARSON,
    CLOPPER_PEARSON_MAZES,
    EXACT_FLIPS,
    FEW_MAZES,
    MAZE_BOOTSTRAP,
    MIN_MAZES,
    NO_VARIATION,
    binomial_ci,
    cluster_ratio_ci,
    paired_solves_test,
    property_r2,
    sign_flip_test,
    solve_rate_ci,
)


def _load(tmp_path, rows, steps=()):
    return load_runs([write_run(tmp_path / "run-a", rows, list(steps))])


def _row(t: pd.DataFrame, **where) -> pd.Series:
    m = np.ones(len(t), dtype=bool)
    for k, v in where.items():
        m &= (t[k].astype(str) == str(v)).to_numpy()
    assert m.sum() == 1, where
    return t[m].iloc[0]


def _intervals_say_what_they_rest_on(t: pd.DataFrame) -> None:
    """Every interval of a table is either of positive width or missing with a note saying why."""
    for low in [c for c in t.columns if c.endswith("_ci_low")]:
        stem = low[: -len("_ci_low")]
        for _, r in t.iterrows():
            lo, hi, note = r[low], r[f"{stem}_ci_high"], r[f"{stem}_ci_note"]
            if pd.isna(lo) or pd.isna(hi):
                assert note, (stem, r.to_dict())
            else:
                assert hi > lo, (stem, r.to_dict())


# ---- 1. progress as the study computes it ------------------------------------------------------

def test_progress_is_the_studys_unclipped_formula_and_the_clipped_reading_is_kept(tmp_path):
    rows = [episode_row(maze_id="m1", d_start_action=20, d_end_action=30, progress_action=0.0),  # farther: -0.5
            episode_row(maze_id="m2", d_start_action=20, d_end_action=5, progress_action=0.75),
            episode_row(maze_id="m3", d_start_action=20, d_end_action=None, progress_action=0.0),  # unreachable
            episode_row(maze_id="m4", d_start_action=20, d_end_action=0, solved=True, termination="solved",
                        progress_action=1.0)]
    traces = _load(tmp_path, rows)
    eps = traces.episodes.set_index("maze_id")
    assert eps["progress_action"].to_dict() == {"m1": -0.5, "m2": 0.75, "m3": 0.0, "m4": 1.0}
    assert eps["progress_action_clipped"].to_dict() == {"m1": 0.0, "m2": 0.75, "m3": 0.0, "m4": 1.0}
    p = metrics.progress(traces).iloc[0]
    assert p["mean_progress_action"] == pytest.approx(1.25 / 4)
    assert p["mean_progress_action_clipped"] == pytest.approx(1.75 / 4)
    assert p["ended_farther"] == 1
    head = metrics.headline(traces)
    assert (head["episodes_ended_farther"], head["episodes_goal_unreachable"]) == (1, 1)
    assert head["mean_progress_action"] == pytest.approx(1.25 / 4)
    o = metrics.overview(traces).iloc[0]
    assert o["mean_progress_action"] == pytest.approx(1.25 / 4) and o["mean_progress_action_clipped"] > o[
        "mean_progress_action"]


def test_a_played_episode_that_walks_away_scores_below_zero(tmp_path):
    maze = room_maze(7)
    row, steps = play(maze, ["left", "left", "forward", "forward"])  # turn around, bump the wall, stay
    away, away_steps = play(maze, ["forward", "forward", "left", "left", "forward", "forward", "forward"],
                            episode_id="away")
    traces = _load(tmp_path, [row, away], [*steps, *away_steps])
    e = traces.episodes.set_index("episode_id").loc["away"]
    assert e["d_end_action"] > e["d_start_action"]
    assert e["progress_action"] == pytest.approx(1 - e["d_end_action"] / e["d_start_action"]) and e[
        "progress_action"] < 0
    assert e["progress_action_clipped"] == 0.0


# ---- 2. intervals ------------------------------------------------------------------------------

def test_five_of_five_solves_take_the_exact_interval():
    low, high = binomial_ci(5, 5)
    assert low == pytest.approx(0.4782, abs=1e-4) and high == 1.0
    rate, method = solve_rate_ci([True] * 5, ["a", "b", "c", "d", "e"])
    assert (rate.value, rate.low, rate.high, method) == (1.0, low, high, CLOPPER_PEARSON)
    # two arms on the same five mazes, both always solving: each maze one trial, the same interval
    rate, method = solve_rate_ci([True] * 10, list("abcde") * 2)
    assert (rate.low, rate.high, method) == (low, high, CLOPPER_PEARSON_MAZES)
    # repeats that disagree within a maze: the maze bootstrap, flagged for its few mazes
    rate, method = solve_rate_ci([True, False, True, True, False, False], list("aabbcc"))
    assert method == MAZE_BOOTSTRAP and rate.note == FEW_MAZES and rate.high > rate.low


def test_a_constant_progress_arm_has_no_interval_and_says_why(tmp_path):
    rows = [episode_row(model_name="flat", maze_id=f"m{i}", progress_action=0.25) for i in range(12)]
    rows += [episode_row(model_name="few", maze_id=f"m{i}", progress_action=0.1 * i) for i in range(3)]
    rows += [episode_row(model_name="lone", maze_id="m0", repeat=r, progress_action=0.2 * r) for r in range(2)]
    traces = _load(tmp_path, rows)
    o = metrics.overview(traces)
    flat = _row(o, arm="flat")
    assert flat["mean_progress_action"] == pytest.approx(0.25)
    assert np.isnan(flat["mean_progress_action_ci_low"]) and flat["mean_progress_action_ci_note"] == NO_VARIATION
    few = _row(o, arm="few")
    assert few["mean_progress_action_ci_high"] > few["mean_progress_action_ci_low"]
    assert few["mean_progress_action_ci_note"] == FEW_MAZES
    lone = _row(o, arm="lone")
    assert np.isnan(lone["mean_progress_action_ci_low"]) and lone["mean_progress_action_ci_note"]
    for table in (o, metrics.bands(traces), metrics.solves(traces), metrics.solves(traces, "grid")):
        _intervals_say_what_they_rest_on(table)
    # no solve anywhere: the exact interval is [0, 0.26] for 12 mazes, never [0, 0]
    s = _row(metrics.solves(traces), arm="flat")
    assert (s["solve_rate_ci_low"], s["solve_rate_ci_method"]) == (0.0, CLOPPER_PEARSON)
    assert s["solve_rate_ci_high"] == pytest.approx(binomial_ci(0, 12)[1])


def test_an_interval_over_enough_varied_mazes_carries_no_note():
    v = np.random.default_rng(1).uniform(0, 1, MIN_MAZES)
    got = cluster_ratio_ci(v, [f"m{i}" for i in range(MIN_MAZES)])
    assert got.note == "" and got.high > got.low
    assert cluster_ratio_ci(v[:-1], [f"m{i}" for i in range(MIN_MAZES - 1)]).note == FEW_MAZES


# ---- 3. paired tests ---------------------------------------------------------------------------

def test_a_pair_differing_on_three_mazes_gets_the_exact_p_value():
    d = np.zeros(40)
    d[:3] = 0.2
    test = sign_flip_test(d)
    assert test.p == pytest.approx(0.25, abs=1e-12) and test.method.startswith("exact")
    assert "3 non-zero" in test.method
    # opposite signs balance: p = 1; no difference at all: p = 1
    assert sign_flip_test([0.2, -0.2, 0, 0]).p == pytest.approx(1.0)
    assert sign_flip_test(np.zeros(5)).p == 1.0


def test_many_non_zero_differences_are_sampled_and_say_their_resolution():
    d = np.full(EXACT_FLIPS + 4, 0.3)
    test = sign_flip_test(d)
    assert test.method.startswith("sampled") and "0.0002" in test.method
    assert test.p == pytest.approx(0.0002)  # the sampler's floor, and the method says so
    exact = sign_flip_test(d[:EXACT_FLIPS])
    assert exact.p == pytest.approx(2 / 2**EXACT_FLIPS) and exact.method.startswith("exact")


def test_ranking_of_a_pair_differing_on_three_mazes(tmp_path):
    rows = []
    for m in range(20):
        for arm in ("a", "b"):
            better = arm == "a" and m < 3
            rows.append(episode_row(model_name=arm, maze_id=f"m{m}", progress_action=0.4 if better else 0.2,
                                    solved=better, termination="solved" if better else "stall"))
    t = ranking.ranking(_load(tmp_path, rows)).iloc[0]
    assert t["progress_p"] == pytest.approx(0.25) and t["progress_test"].startswith("exact")
    assert (t["a_only_solves"], t["b_only_solves"]) == (3, 0)
    assert t["solves_p"] == pytest.approx(0.25) and "McNemar" in t["solves_test"]


def test_solves_with_repeats_are_tested_clustered_by_maze():
    # one maze where a solved all four repeats and b none: four discordant pairs, but one maze
    pairs = pd.DataFrame({"maze_id": ["m1"] * 4 + ["m2"] * 4 + ["m3"] * 4,
                          "solved_a": [True] * 4 + [False] * 8, "solved_b": [False] * 12})
    test = paired_solves_test(pairs)
    assert "clustered by maze" in test.method
    assert test.p == pytest.approx(1.0)  # one non-zero maze difference: 2 of 2 sign patterns
    # McNemar would call the four pairs independent: p = 0.125
    single = paired_solves_test(pairs.drop_duplicates("maze_id"))
    assert "McNemar" in single.method and single.p == pytest.approx(1.0)


# ---- 4. regressions ----------------------------------------------------------------------------

def _arm_dominated(seed: int, effect: float) -> pd.DataFrame:
    """Three arms far apart, 30 mazes each run by every arm, a property with ``effect`` per unit."""
    rng = np.random.default_rng(seed)
    rows = []
    prop = rng.integers(0, 5, 30)
    for arm, level in (("a", 0.1), ("b", 0.5), ("c", 0.9)):
        for m in range(30):
            rows.append({"arm": arm, "maze_id": f"m{m}", "noise_prop": prop[m],
                         "progress_action": level + effect * prop[m] + rng.normal(0, 0.02)})
    return pd.DataFrame(rows)


def test_regression_p_values_are_clustered_by_maze():
    import statsmodels.formula.api as smf

    frame = _arm_dominated(3, 0.0)
    got = property_r2(frame, "noise_prop")
    fit = smf.ols("progress_action ~ noise_prop + C(arm)", frame).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(frame["maze_id"])[0]}, use_t=True)
    assert got["p_value"] == pytest.approx(fit.pvalues["noise_prop"], rel=1e-9)
    assert got["p_value_iid"] == pytest.approx(smf.ols("progress_action ~ noise_prop + C(arm)", frame).fit()
                                               .pvalues["noise_prop"], rel=1e-9)
    assert got["r2"] > 0.9 and got["r2_increment"] < 0.01  # the arm explains nearly everything


def test_a_property_with_no_effect_names_no_strongest_axis(tmp_path):
    frame = _arm_dominated(4, 0.0)
    rows = [episode_row(model_name=r.arm, maze_id=r.maze_id, progress_action=r.progress_action,
                        n_gates=int(r.noise_prop), n_switches=int(r.noise_prop))
            for r in frame.itertuples()]
    axes = metrics.difficulty_axes(_load(tmp_path / "none", rows))
    top, named = metrics.strongest_axis(axes)
    assert top is not None and named is None and not axes["distinguishable"].any()
    line = _axis_line(axes, "all")
    assert line.startswith("No single difficulty axis stands out") and "cannot be told from zero" in line
    # the same run with a real effect of the gates names them
    frame = _arm_dominated(4, -0.05)
    rows = [episode_row(model_name=r.arm, maze_id=r.maze_id, progress_action=r.progress_action,
                        n_gates=int(r.noise_prop)) for r in frame.itertuples()]
    axes = metrics.difficulty_axes(_load(tmp_path / "gates", rows))
    top, named = metrics.strongest_axis(axes)
    assert named is not None and named["label"] == "gates"
    assert _axis_line(axes, "all").startswith("Strongest single difficulty axis: gates")
    # the restricted subset gets its own sentence (every maze here has an optimal path of 20)
    assert _axis_line(axes, f"optimal<={metrics.SHORT_PATH}").startswith(
        "Strongest single difficulty axis (episodes with optimal path <=45 actions): gates")


# ---- 5. the open definitions -------------------------------------------------------------------

def test_failure_onset_ignores_a_turn_that_only_changes_the_facing(tmp_path):
    from analysis import failure
    from analysis.steps import annotate

    maze = room_maze(6)  # start (1,1) facing east, goal (4,4)
    # three forwards east (new minima), then a turn south: the action distance falls by one without
    # the agent going anywhere, then it turns away again
    row, steps = play(maze, ["forward", "forward", "forward", "right", "left", "left", "right"])
    traces = _load(tmp_path, [row], steps)
    assert steps[3]["action_distance"] < steps[2]["action_distance"]  # the turn set a lower distance
    st = annotate(traces)
    try:
        per, _ = failure.onset(traces, st)
    finally:
        st.close()
    assert int(per["onset_step"].iloc[0]) == 3


def test_discovery_contact_is_the_four_orthogonal_neighbours_and_a_gate_attempt_can_open_it():
    from env import initial_state, step
    from env.discovery import Move, timelines
    from env.state import FORWARD, LEFT, TOGGLE

    # start (1,1) facing east; a switch at (2,1) controls the gate at (3,1) in front of it; a key
    # at (4,3) is never beside a cell the agent stands on
    maze = room_maze(7, objects=[{"id": "s1", "kind": "switch", "color": "blue", "pos": [2, 1], "controls": ["g1"]},
                                 {"id": "g1", "kind": "gate", "color": "blue", "pos": [3, 1]},
                                 {"id": "k1", "kind": "key", "color": "red", "pos": [4, 3]}])
    state, moves = initial_state(maze), []
    for n, a in enumerate([FORWARD, TOGGLE, LEFT, TOGGLE], start=1):  # onto the switch, toggle facing the gate
        after, _ = step(maze, state, a)
        moves.append(Move(n, a, state, after))
        state = after
    found = {t.object_id: t for t in timelines(maze, initial_state(maze), moves)}
    gate = found["g1"]
    # the toggle made on the switch while facing the gate is the gate's attempt and its success
    assert gate.attempt == gate.success == 2 and gate.contact == 1
    assert found["k1"].contact is None
    diagonal = room_maze(7, objects=[{"id": "k1", "kind": "key", "color": "red", "pos": [2, 2]}])
    assert timelines(diagonal, initial_state(diagonal), [])[0].contact is None  # (1,1) is diagonal to (2,2)
    beside = room_maze(7, objects=[{"id": "k1", "kind": "key", "color": "red", "pos": [1, 2]}])
    assert timelines(beside, initial_state(beside), [])[0].contact == 0


def test_a_toggle_facing_a_gate_away_from_its_switch_is_an_attempt_that_does_nothing():
    from env import initial_state, step
    from env.discovery import Move, timelines
    from env.state import TOGGLE

    maze = room_maze(7, objects=[{"id": "s1", "kind": "switch", "color": "blue", "pos": [4, 4], "controls": ["g1"]},
                                 {"id": "g1", "kind": "gate", "color": "blue", "pos": [2, 1]}])
    state = initial_state(maze)
    after, event = step(maze, state, TOGGLE)
    assert event == "noop"
    gate = {t.object_id: t for t in timelines(maze, state, [Move(1, TOGGLE, state, after)])}["g1"]
    assert gate.attempt == 1 and gate.success is None
