"""Ranking pairs of arms and planning a run: against statsmodels, scipy and simulations."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from tracefab import episode_row, write_run

from analysis import ranking
from analysis.load import load_runs
from analysis.stats import mean_ci
from env.errors import BadInput


def _run(tmp_path, levels: dict[str, float], mazes=16, repeats=3, between=0.15, within=0.1, seed=1,
         drop=()):
    """Arms whose progress on a maze is the maze's level + the arm's shift + repeat noise."""
    rng = np.random.default_rng(seed)
    maze_level = rng.normal(0.5, between, mazes)
    rows = []
    for arm, shift in levels.items():
        arm_effect = rng.normal(0, between / 2, mazes)  # how much the arm's level moves between mazes
        for m in range(mazes):
            for r in range(repeats):
                if (arm, m, r) in drop:
                    continue
                p = float(maze_level[m] + shift + arm_effect[m] + rng.normal(0, within))
                solved = bool(rng.random() < np.clip(p, 0, 1))
                rows.append(episode_row(model_name=arm, maze_id=f"m{m}", repeat=r, progress_action=p, solved=solved))
    return load_runs([write_run(tmp_path / "run", rows, [])], resolve_mazes=False)


@pytest.fixture(scope="module")
def three(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("r"), {"a": 0.0, "b": 0.15, "c": 0.02}, drop={("c", 3, 2), ("a", 5, 0)})


def test_each_pair_is_tested_as_the_libraries_test_it(three):
    t = ranking.ranking(three)
    assert list(zip(t["arm_a"], t["arm_b"], strict=True)) == [("a", "b"), ("a", "c"), ("b", "c")]
    eps = three.episodes
    for row in t.itertuples():
        a = eps[eps["arm"] == row.arm_a].set_index(["maze_id", "repeat"])["solved"]
        b = eps[eps["arm"] == row.arm_b].set_index(["maze_id", "repeat"])["solved"]
        both = pd.concat([a, b], axis=1, join="inner", keys=["a", "b"])
        # three repeats per maze: the solves are tested clustered by maze, on the per-maze differences,
        # with every sign pattern of the non-zero ones (here enumerated by hand)
        per_maze = (both["a"].astype(float) - both["b"].astype(float)).groupby(level="maze_id").mean()
        nonzero = per_maze[per_maze != 0].to_numpy()
        flips = np.array(list(itertools.product((1, -1), repeat=len(nonzero))))
        exact = np.mean(np.abs(flips @ nonzero) >= abs(nonzero.sum()) - 1e-12) if len(nonzero) else 1.0
        assert row.solves_p == pytest.approx(exact) and row.solves_test.startswith("clustered by maze")
        assert row.paired_episodes == len(both) and row.unmatched_episodes == len(a) + len(b) - 2 * len(both)
        # the progress difference: per-maze means first, every repeat kept
        d = eps[eps["arm"] == row.arm_a].groupby("maze_id")["progress_action"].mean() - \
            eps[eps["arm"] == row.arm_b].groupby("maze_id")["progress_action"].mean()
        assert row.progress_diff == pytest.approx(d.mean())
        ref = stats.ttest_1samp(d, 0).pvalue  # the t-test and the permutation test agree closely here
        assert row.progress_p == pytest.approx(ref, abs=0.03 + 0.3 * ref)
    assert t["unmatched_episodes"].tolist() == [1, 2, 1]
    for test in ("progress", "solves"):
        assert t[f"{test}_p_holm"].to_numpy() == pytest.approx(multipletests(t[f"{test}_p"], method="holm")[1])
    # b is 0.15 ahead of both: separated after the correction; a and c (0.02 apart) are not
    assert t["ahead"].tolist() == ["b", "not separated", "b"]


def test_solves_with_one_repeat_are_mcnemars_exact_test(tmp_path):
    traces = _run(tmp_path, {"a": 0.0, "b": 0.3}, mazes=30, repeats=1, seed=5)
    row = ranking.ranking(traces).iloc[0]
    eps = traces.episodes
    a = eps[eps["arm"] == "a"].set_index("maze_id")["solved"]
    b = eps[eps["arm"] == "b"].set_index("maze_id")["solved"]
    table = pd.crosstab(a, b).reindex(index=[False, True], columns=[False, True], fill_value=0)
    assert row["solves_p"] == pytest.approx(mcnemar(table.to_numpy(), exact=True).pvalue)
    assert "McNemar" in row["solves_test"]


def test_the_paired_bootstrap_covers_a_known_mean_about_95_times_in_100():
    rng = np.random.default_rng(11)
    true = 0.1
    hits = [(e := mean_ci(true + rng.normal(0, 0.2, 30), resamples=999)).low <= true <= e.high for _ in range(300)]
    assert 0.90 <= np.mean(hits) <= 0.985


def test_the_planner_estimates_the_run_variances(tmp_path):
    traces = _run(tmp_path, {"a": 0.0, "b": 0.1}, mazes=60, repeats=4, between=0.12, within=0.1, seed=3)
    var = ranking.variance_components(traces)
    assert var["within"] == pytest.approx(0.1**2, rel=0.15)
    # per maze the paired difference moves with both arms' effects: 2 * (between / 2)^2
    assert var["between"] == pytest.approx(2 * (0.12 / 2) ** 2, rel=0.5)
    assert var["pairs"] == 1 and var["repeats_seen"] == 4


@pytest.mark.parametrize("repeats", [1, 3])
def test_planned_mazes_reject_about_80_times_in_100_at_that_size(repeats):
    between, within, delta = 0.01, 0.02, 0.08
    n = ranking.mazes_needed(delta, between, within, repeats, power=0.8, alpha=0.05)
    assert n >= 2 and ranking.mazes_needed(delta, between, within, repeats + 1, 0.8, 0.05) <= n
    rng = np.random.default_rng(repeats)
    sims = 4000
    maze = rng.normal(delta, np.sqrt(between), (sims, n))
    noise = rng.normal(0, np.sqrt(within), (sims, n, repeats, 2)).mean(axis=2)
    d = maze + noise[..., 0] - noise[..., 1]
    rate = float((stats.ttest_1samp(d, 0, axis=1).pvalue < 0.05).mean())
    assert 0.77 <= rate <= 0.87, (n, rate)
    # one maze fewer would not do
    short = float((stats.ttest_1samp(d[:, :-1], 0, axis=1).pvalue < 0.05).mean())
    assert short < 0.8 + 0.02


def test_plan_refuses_bad_input_in_one_line(three, tmp_path):
    for kw, option in (({"delta": 0.0}, "--delta"), ({"delta": 1.5}, "--delta"), ({"delta": 0.1, "power": 1.0},
                                                                                     "--power"),
                       ({"delta": 0.1, "alpha": 0.0}, "--alpha")):
        with pytest.raises(BadInput) as e:
            ranking.plan(three, **kw)
        assert str(e.value).startswith(option) and "\n" not in str(e.value)
    one = load_runs([write_run(tmp_path / "one", [episode_row(maze_id=f"m{i}") for i in range(3)], [])],
                    resolve_mazes=False)
    with pytest.raises(BadInput, match="two arms"):
        ranking.plan(one, delta=0.1)
    table, var = ranking.plan(three, delta=0.1)
    assert table["repeats"].tolist() == list(ranking.PLAN_REPEATS)
    assert (table["mazes"].diff().dropna() <= 0).all() and (table["episodes_per_arm"] == table["mazes"] *
                                                             table["repeats"]).all()


def test_gridbench_plan_prints_the_plan_and_refuses_a_bad_delta_with_exit_2(three):
    import subprocess
    import sys

    run = str(three.run_dirs[0])
    ok = subprocess.run([sys.executable, "-m", "app.cli", "plan", run, "--delta", "0.1"],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    table, var = ranking.plan(three, delta=0.1)
    lines = ok.stdout.splitlines()
    assert f"pooled over {var['pairs']} pair(s)" in lines[0]
    for row in table.itertuples():
        assert f"{row.repeats:>7}  {row.mazes:>5}  {row.episodes_per_arm:>16}" in lines
    bad = subprocess.run([sys.executable, "-m", "app.cli", "plan", run, "--delta", "-1"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "--delta" in bad.stderr


def test_a_reference_is_never_paired_with_a_model(tmp_path):
    """Two models and the oracle on the same mazes: the models are ranked against each other only
    (the Holm correction over that one pair), and a run with one model ranks its references."""
    rows = [episode_row(model_name=arm, model=model, maze_id=f"m{m}", progress_action=p, solved=p >= 1)
            for arm, model, p in (("a", "openai/a", 0.2), ("b", "openai/b", 0.6), ("oracle", "builtin/oracle", 1.0),
                                  ("random", "builtin/random", 0.1))
            for m in range(6)]
    both = load_runs([write_run(tmp_path / "two", rows, [])], resolve_mazes=False)
    t = ranking.ranking(both)
    assert list(zip(t["arm_a"], t["arm_b"], strict=True)) == [("a", "b")]
    assert t["progress_p_holm"].tolist() == t["progress_p"].tolist()  # one pair: nothing to correct
    one = load_runs([write_run(tmp_path / "one", [r for r in rows if r["model_name"] != "b"], [])],
                    resolve_mazes=False)
    assert list(zip(*(ranking.ranking(one)[c] for c in ("arm_a", "arm_b")), strict=True)) == [("oracle", "random")]
