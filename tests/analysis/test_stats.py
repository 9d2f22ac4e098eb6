"""Statistics against independent computations: numpy least squares, scipy and a hand-written
cluster bootstrap."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis.stats import (
    FEW_MAZES,
    NO_VARIATION,
    RESAMPLES,
    SEED,
    cluster_ratio_ci,
    counted_median,
    mean_ci,
    property_r2,
)


def _r2_lstsq(y: np.ndarray, columns: list[np.ndarray]) -> float:
    X = np.column_stack([np.ones(len(y)), *columns])
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    return 1 - (resid @ resid) / ((y - y.mean()) @ (y - y.mean()))


def _dummies(labels: pd.Series) -> list[np.ndarray]:
    levels = sorted(labels.unique())
    return [(labels == lv).to_numpy(dtype=float) for lv in levels[1:]]


@pytest.fixture
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 240
    arm = rng.choice(["claude", "kimi", "qwen"], n)
    opt = rng.integers(15, 110, n)
    gates = rng.integers(0, 4, n)
    effect = pd.Series(arm).map({"claude": 0.05, "kimi": 0.15, "qwen": 0.0}).to_numpy()
    y = np.clip(0.6 - 0.005 * opt - 0.05 * gates + effect + rng.normal(0, 0.1, n), 0, 1)
    return pd.DataFrame({"progress_action": y, "optimal_actions": opt, "n_gates": gates, "arm": arm,
                         "constant": 3})


def test_r2_equals_least_squares_with_model_dummies(frame):
    for prop in ("optimal_actions", "n_gates"):
        got = property_r2(frame, prop)
        y = frame["progress_action"].to_numpy()
        full = _r2_lstsq(y, [frame[prop].to_numpy(dtype=float), *_dummies(frame["arm"])])
        base = _r2_lstsq(y, _dummies(frame["arm"]))
        assert got["n"] == len(frame)
        assert got["r2"] == pytest.approx(full, abs=1e-10)
        assert got["r2_model_only"] == pytest.approx(base, abs=1e-10)
        assert got["r2_increment"] == pytest.approx(full - base, abs=1e-10)
        assert got["slope"] < 0 and got["p_value_iid"] < 0.01
        assert np.isnan(got["p_value"])  # no maze column: nothing to cluster by


def test_r2_equals_statsmodels_formula_with_a_categorical_model_term(frame):
    import statsmodels.formula.api as smf

    for prop in ("optimal_actions", "n_gates"):
        fit = smf.ols(f"progress_action ~ {prop} + C(arm)", frame).fit()
        got = property_r2(frame, prop)
        assert got["r2"] == pytest.approx(fit.rsquared, abs=1e-10)
        assert got["slope"] == pytest.approx(fit.params[prop], rel=1e-9)
        assert got["p_value_iid"] == pytest.approx(fit.pvalues[prop], rel=1e-6)


def test_r2_of_a_constant_property_is_the_model_term_alone(frame):
    got = property_r2(frame, "constant")
    base = _r2_lstsq(frame["progress_action"].to_numpy(), _dummies(frame["arm"]))
    assert got["r2"] == pytest.approx(base, abs=1e-10)
    assert got["r2_increment"] == 0.0 and np.isnan(got["slope"])


def test_the_clustered_p_value_needs_more_mazes_than_coefficients(frame):
    """The clustered covariance has rank at most mazes - 1 (the per-maze scores sum to zero): with
    no more mazes than coefficients (here intercept, two arm effects, the property: 4) it is
    singular and no clustered p-value is given; with more, it is statsmodels' own."""
    from statsmodels.regression.linear_model import OLS

    for mazes, given in ((4, False), (5, True), (40, True)):
        d = frame.assign(maze_id=[f"m{i % mazes}" for i in range(len(frame))])
        got = property_r2(d, "n_gates")
        assert np.isnan(got["p_value"]) != given, mazes
        assert got["p_value_iid"] < 0.01  # the episode-level test is there either way
        if given:
            X = np.column_stack([np.ones(len(d)), *_dummies(d["arm"]), d["n_gates"].to_numpy(dtype=float)])
            fit = OLS(d["progress_action"].to_numpy(), X).fit(
                cov_type="cluster", cov_kwds={"groups": pd.factorize(d["maze_id"])[0]}, use_t=True)
            assert got["p_value"] == pytest.approx(fit.pvalues[-1], rel=1e-9)


def test_r2_with_one_model_is_the_simple_regression(frame):
    one = frame[frame["arm"] == "kimi"]
    got = property_r2(one, "optimal_actions")
    r = np.corrcoef(one["optimal_actions"], one["progress_action"])[0, 1]
    assert got["r2"] == pytest.approx(r**2, abs=1e-10)
    assert got["r2_model_only"] == pytest.approx(0.0, abs=1e-12)


def test_mean_interval_is_scipys_percentile_bootstrap():
    v = np.random.default_rng(3).beta(2, 5, 40)
    got = mean_ci(v)
    ref = stats.bootstrap((v,), np.mean, n_resamples=RESAMPLES, method="percentile", confidence_level=0.95,
                          rng=np.random.default_rng(SEED)).confidence_interval
    assert got.value == pytest.approx(v.mean())
    assert (got.low, got.high) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_cluster_interval_with_one_episode_per_maze_matches_scipy_on_the_episodes():
    v = np.random.default_rng(4).uniform(0, 1, 30)
    got = cluster_ratio_ci(v, [f"m{i}" for i in range(30)])
    ref = stats.bootstrap((v,), np.mean, n_resamples=RESAMPLES, method="percentile",
                          rng=np.random.default_rng(SEED)).confidence_interval
    assert got.value == pytest.approx(v.mean())
    # same estimator, different random draws: the intervals agree to Monte Carlo error
    assert got.low == pytest.approx(ref.low, abs=0.02) and got.high == pytest.approx(ref.high, abs=0.02)


def test_cluster_interval_matches_a_hand_written_maze_bootstrap():
    rng = np.random.default_rng(5)
    mazes = [f"m{i}" for i in range(12)]
    level = dict(zip(mazes, rng.uniform(0, 0.6, 12), strict=True))
    rows = [(m, level[m] + rng.normal(0, 0.05)) for m in mazes for _ in range(rng.integers(1, 6))]
    frame = pd.DataFrame(rows, columns=["maze", "v"])
    got = cluster_ratio_ci(frame["v"], frame["maze"])
    assert got.value == pytest.approx(frame["v"].mean())
    assert got.n == len(frame) and got.clusters == 12

    groups = [g.to_numpy() for _, g in frame.groupby("maze")["v"]]
    draws = np.random.default_rng(99).integers(0, 12, (20000, 12))
    means = [np.concatenate([groups[i] for i in d]).mean() for d in draws]
    low, high = np.percentile(means, [2.5, 97.5])
    assert got.low == pytest.approx(low, abs=0.015) and got.high == pytest.approx(high, abs=0.015)
    # resampling mazes is wider than pretending the episodes were independent
    naive = mean_ci(frame["v"])
    assert got.high - got.low > naive.high - naive.low


def test_degenerate_intervals():
    one = cluster_ratio_ci([0.2, 0.4], ["m", "m"])
    assert one.value == pytest.approx(0.3) and np.isnan(one.low) and one.clusters == 1
    flat = cluster_ratio_ci([0.0, 0.0, 0.0], ["a", "b", "c"])
    # no variation: no interval of zero width, a note instead
    assert flat.value == 0.0 and np.isnan(flat.low) and np.isnan(flat.high) and flat.note == NO_VARIATION
    assert one.note and cluster_ratio_ci([0.1, 0.5, 0.2], ["a", "b", "c"]).note == FEW_MAZES
    assert cluster_ratio_ci([], []).n == 0


def test_counted_median_is_the_median_of_the_expanded_sample():
    rng = np.random.default_rng(5)
    for size in (1, 2, 3, 10, 101):
        values = rng.integers(0, 8, size)
        counts = rng.integers(0, 4, size)
        counts[0] = max(counts[0], 1)
        expanded = np.repeat(values, counts)
        assert counted_median(values, counts) == np.median(expanded)
    assert np.isnan(counted_median([3], [0]))


def test_resampling_in_batches_gives_what_all_at_once_gives(monkeypatch):
    """``BATCH`` bounds the memory of the resampling tests; every interval and p-value is the one
    that resampling all 9,999 at once gives (the generator is consumed in the same order)."""
    import analysis.stats as st

    rng = np.random.default_rng(7)
    values, clusters = rng.normal(size=600), rng.integers(0, 214, size=600)
    differences = rng.normal(0.1, 1, size=40)

    def everything():
        return (st.mean_ci(values[:214]), st.cluster_ratio_ci(values, clusters), st.sign_flip_test(differences))

    batched = everything()
    monkeypatch.setattr(st, "BATCH", None)
    assert everything() == batched
    assert batched[0].low < batched[0].high and 0 < batched[2].p < 1  # real intervals and a sampled p-value
