"""Statistics: maze-cluster bootstrap intervals, exact binomial intervals, paired tests,
one-property regressions with maze-clustered standard errors.

Episodes on the same maze are not independent (every model meets the same walls), so intervals
resample **mazes**: a replicate draws mazes with replacement and keeps all of each maze's
episodes. For a mean over episodes that is ``sum(values) / sum(counts)`` over the drawn mazes,
which ``scipy.stats.bootstrap`` computes exactly when given the per-maze sums and counts as
paired samples. Intervals are percentile intervals at 95% from 9,999 replicates with a fixed
seed, so a report is reproducible to the digit.

Each interval says what it rests on: a bootstrap over fewer than ``MIN_MAZES`` mazes is flagged
(``note``), and one over data with no variation between mazes is not given at all (a resampling
cannot show an uncertainty it has nothing to draw from; ``[x, x]`` would claim certainty).
Solve rates take exact binomial (Clopper-Pearson) intervals where their trials are independent.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from statsmodels.regression.linear_model import OLS

CONFIDENCE = 0.95
RESAMPLES = 9_999
SEED = 20260
# a percentile bootstrap over fewer mazes than this covers poorly: its interval is flagged
MIN_MAZES = 10
# paired tests enumerate every sign pattern of up to this many non-zero differences (2^16 = 65,536)
EXACT_FLIPS = 16
# resamples per vectorized call of scipy's bootstrap and permutation test: all 9,999 at once over a
# few hundred mazes held ~100 MB of resampled arrays at a time; the draws, and so every interval
# and p-value, are the same in batches (the generator is consumed in the same order)
BATCH = 1_000

FEW_MAZES = f"fewer than {MIN_MAZES} mazes"
NO_VARIATION = "no variation between mazes"
ONE_MAZE = "fewer than 2 mazes"
CLOPPER_PEARSON = "exact binomial (Clopper-Pearson) over episodes"
CLOPPER_PEARSON_MAZES = "exact binomial (Clopper-Pearson) over mazes"
MAZE_BOOTSTRAP = "maze bootstrap"


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float
    n: int  # episodes behind the value
    clusters: int  # mazes behind the interval
    note: str = ""  # why the interval is missing or weak (``FEW_MAZES``, ``NO_VARIATION``, ...); "" when sound

    def as_dict(self, prefix: str) -> dict[str, float | int | str]:
        return {prefix: self.value, f"{prefix}_ci_low": self.low, f"{prefix}_ci_high": self.high,
                f"{prefix}_ci_note": self.note}


def _bootstrapped(value: float, n: int, clusters: int, low: float, high: float) -> Estimate:
    """A bootstrap interval with its flag: none when every replicate gave the same number, flagged
    when it rests on fewer than ``MIN_MAZES`` mazes."""
    if not high > low:
        return Estimate(value, float("nan"), float("nan"), n, clusters, NO_VARIATION)
    return Estimate(value, low, high, n, clusters, FEW_MAZES if clusters < MIN_MAZES else "")


def cluster_ratio_ci(values, clusters, seed: int = SEED, resamples: int = RESAMPLES) -> Estimate:
    """Mean of ``values`` with a 95% interval that resamples whole clusters (mazes)."""
    frame = pd.DataFrame({"v": np.asarray(values, dtype=float), "c": np.asarray(clusters)}).dropna()
    n = len(frame)
    if n == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0, 0)
    per = frame.groupby("c", sort=True)["v"].agg(["sum", "count"])
    value = float(per["sum"].sum() / per["count"].sum())
    if len(per) < 2:
        return Estimate(value, float("nan"), float("nan"), n, len(per), ONE_MAZE)
    if np.allclose(per["sum"] / per["count"], value):  # every maze's mean the same: nothing to resample
        return Estimate(value, float("nan"), float("nan"), n, len(per), NO_VARIATION)
    res = stats.bootstrap(
        (per["sum"].to_numpy(), per["count"].to_numpy(dtype=float)),
        lambda s, c, axis=-1: s.sum(axis=axis) / c.sum(axis=axis),
        paired=True, vectorized=True, n_resamples=resamples, batch=BATCH, confidence_level=CONFIDENCE,
        method="percentile", rng=np.random.default_rng(seed),
    )
    ci = res.confidence_interval
    return _bootstrapped(value, n, len(per), float(ci.low), float(ci.high))


def mean_ci(values, seed: int = SEED, resamples: int = RESAMPLES) -> Estimate:
    """Mean of independent values (for example per-maze paired differences) with a 95% interval."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0, 0)
    value = float(v.mean())
    if len(v) < 2:
        return Estimate(value, float("nan"), float("nan"), 1, 1, ONE_MAZE)
    if np.allclose(v, v[0]):
        return Estimate(value, float("nan"), float("nan"), len(v), len(v), NO_VARIATION)
    res = stats.bootstrap(
        (v,), np.mean, vectorized=True, n_resamples=resamples, batch=BATCH, confidence_level=CONFIDENCE,
        method="percentile", rng=np.random.default_rng(seed),
    )
    return _bootstrapped(value, len(v), len(v), float(res.confidence_interval.low),
                         float(res.confidence_interval.high))


def binomial_ci(successes: int, trials: int) -> tuple[float, float]:
    """The exact (Clopper-Pearson) 95% interval of a proportion (scipy ``binomtest``); NaN with no
    trials. 5 of 5 gives [0.478, 1]."""
    if trials <= 0:
        return float("nan"), float("nan")
    ci = stats.binomtest(int(successes), int(trials)).proportion_ci(confidence_level=CONFIDENCE, method="exact")
    return float(ci.low), float(ci.high)


def solve_rate_ci(solved, clusters, seed: int = SEED) -> tuple[Estimate, str]:
    """The solve rate of some episodes with a 95% interval, and the interval's method.

    Trials must be independent for a binomial interval, and episodes on one maze are not. So:
    one episode per maze: Clopper-Pearson over the episodes; several, but every maze's episodes
    agreeing (all solved or none): Clopper-Pearson over the mazes (each maze is then one trial);
    otherwise the maze bootstrap (``cluster_ratio_ci``, flagged as it flags)."""
    frame = pd.DataFrame({"s": np.asarray(solved, dtype=bool), "c": np.asarray(clusters)})
    n = len(frame)
    if n == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0, 0), ""
    per = frame.groupby("c", sort=True)["s"].agg(["sum", "count"])
    value = float(per["sum"].sum() / n)
    if (per["count"] == 1).all():
        low, high = binomial_ci(int(per["sum"].sum()), n)
        return Estimate(value, low, high, n, len(per)), CLOPPER_PEARSON
    if ((per["sum"] == 0) | (per["sum"] == per["count"])).all():
        low, high = binomial_ci(int((per["sum"] > 0).sum()), len(per))
        return Estimate(value, low, high, n, len(per)), CLOPPER_PEARSON_MAZES
    return cluster_ratio_ci(frame["s"].astype(float), frame["c"], seed=seed), MAZE_BOOTSTRAP


def counted_median(values, counts) -> float:
    """The median of a sample given as values and how often each occurs (values may repeat), as
    pandas and numpy compute it: the middle value, or the mean of the two middle values."""
    v = np.asarray(values, dtype=float)
    c = np.asarray(counts, dtype=np.int64)
    order = np.argsort(v, kind="stable")
    v, ends = v[order], np.cumsum(c[order])
    n = int(ends[-1]) if len(ends) else 0
    if n == 0:
        return float("nan")
    # the value at 0-based place i is the first whose cumulative count exceeds i
    low, high = v[np.searchsorted(ends, (n - 1) // 2, side="right")], v[np.searchsorted(ends, n // 2, side="right")]
    return float((low + high) / 2)


def property_r2(frame: pd.DataFrame, prop: str, outcome: str = "progress_action",
                group: str = "arm", cluster: str = "maze_id") -> dict[str, str | float]:
    """One regression ``outcome ~ prop + C(group)`` and what the property adds to it.

    Returns the full model's R^2 (``r2``: the share of the outcome's variance that the property
    and the model fixed effect explain together, the study's definition), the fixed effect's
    R^2 alone (``r2_model_only``), the property's increment (``r2_increment = r2 - r2_model_only``),
    and the slope with two p-values: ``p_value`` with standard errors clustered by maze (the same
    maze run by several arms or repeats is one cluster; statsmodels ``cov_type="cluster"``, t with
    mazes - 1 degrees of freedom) and ``p_value_iid`` treating every episode as independent. With a
    single added term the slope is zero exactly when the increment is, so ``p_value`` is the test of
    the increment. With one model the fixed effect is dropped, and ``r2`` is then the property's
    own R^2. Without a ``cluster`` column, or with no more clusters than the fit has coefficients
    (the clustered covariance is then singular), ``p_value`` is NaN.
    """
    keep = [outcome, prop, group] + ([cluster] if cluster in frame else [])
    d = frame[keep].dropna()
    out: dict[str, str | float] = {"property": prop, "n": len(d)}
    nothing = {"r2": float("nan"), "r2_model_only": float("nan"), "r2_increment": float("nan"),
               "slope": float("nan"), "p_value": float("nan"), "p_value_iid": float("nan")}
    if len(d) < 3 or d[outcome].nunique() < 2:
        return {**out, **nothing}
    y = d[outcome].to_numpy(dtype=float)
    x = d[prop].to_numpy(dtype=float)
    # the design matrices of the formula ``y ~ x + C(g)`` (treatment coding), built directly:
    # patsy's formula parsing costs more than the fits themselves
    fixed = pd.get_dummies(d[group].astype(str), drop_first=True, dtype=float).to_numpy()
    base_X = np.column_stack([np.ones(len(d)), fixed])
    full_X = np.column_stack([base_X, x])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = OLS(y, full_X).fit()
        base = OLS(y, base_X).fit()
    # a property constant in the subset, or one the arms' fixed effects already fix (every arm
    # on a maze set of its own), adds no column: its slope is then any split the pseudo-inverse
    # happens to pick
    if np.linalg.matrix_rank(full_X) == np.linalg.matrix_rank(base_X):
        return {**out, "r2": float(base.rsquared), "r2_model_only": float(base.rsquared), "r2_increment": 0.0,
                "slope": float("nan"), "p_value": float("nan"), "p_value_iid": float("nan")}
    clustered = float("nan")
    # the clustered covariance sums one score per cluster, and the scores sum to zero (the normal
    # equations): it has rank at most clusters - 1, so with no more clusters than coefficients it
    # is singular, and a p-value read off it is rounding noise (one such moved with the numpy build)
    if cluster in d and d[cluster].nunique() - 1 >= np.linalg.matrix_rank(full_X):
        groups = pd.factorize(d[cluster])[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            robust = OLS(y, np.column_stack([base_X, x])).fit(cov_type="cluster", cov_kwds={"groups": groups},
                                                              use_t=True)
        clustered = float(robust.pvalues[-1])
    return {
        **out,
        "r2": float(full.rsquared),
        "r2_model_only": float(base.rsquared),
        "r2_increment": float(full.rsquared - base.rsquared),
        "slope": float(full.params[-1]),
        "p_value": clustered,
        "p_value_iid": float(full.pvalues[-1]),
    }


ALPHA = 1 - CONFIDENCE  # the level of every test of the report


@dataclass(frozen=True)
class PairedTest:
    p: float
    method: str  # how ``p`` was computed, with its resolution when sampled


def sign_flip_test(differences) -> PairedTest:
    """Two-sided test of a zero mean of independent paired differences (one per maze): the sign-flip
    permutation test (``scipy.stats.permutation_test``). A zero difference is the same under either
    sign, so only the ``k`` non-zero ones are flipped: with ``k <= EXACT_FLIPS`` all 2^k patterns are
    enumerated (exact; 3 differences of one sign give p = 2/8 = 0.25), beyond that 9,999 random
    patterns with the report's seed, whose smallest possible p-value (2 / 10,000) the method names.
    NaN with fewer than two differences; 1 when none is non-zero."""
    d = np.asarray(differences, dtype=float)
    d = d[~np.isnan(d)]
    if len(d) < 2:
        return PairedTest(float("nan"), "")
    nonzero = d[~np.isclose(d, 0, rtol=0, atol=1e-12)]
    k = len(nonzero)
    if k == 0:
        return PairedTest(1.0, "no non-zero difference")
    if k == 1:  # its two sign patterns are equally extreme (scipy wants two observations)
        return PairedTest(1.0, "exact: all 2 sign patterns of 1 non-zero difference")
    exact = k <= EXACT_FLIPS
    res = stats.permutation_test((nonzero,), np.mean, permutation_type="samples", vectorized=True,
                                 n_resamples=2**k if exact else RESAMPLES, batch=BATCH, alternative="two-sided",
                                 rng=np.random.default_rng(SEED))
    if exact:
        return PairedTest(float(res.pvalue), f"exact: all {2 ** k:,} sign patterns of {k} non-zero differences")
    floor = 2 / (RESAMPLES + 1)
    return PairedTest(float(res.pvalue), f"sampled: {RESAMPLES:,} random sign patterns of {k} non-zero "
                                         f"differences; p-values below {floor:.4f} cannot be told apart")


def mcnemar_p(a_only: int, b_only: int) -> float:
    """Exact McNemar p-value (statsmodels, binomial on the discordant pairs) of paired solves: ``a_only``
    pairs solved by the first side only, ``b_only`` by the second only. 1 with no discordant pair."""
    from statsmodels.stats.contingency_tables import mcnemar

    if a_only + b_only == 0:
        return 1.0
    return float(mcnemar([[0, a_only], [b_only, 0]], exact=True).pvalue)


def paired_solves_test(pairs: pd.DataFrame) -> PairedTest:
    """Two-sided test that two arms solve equally often, from episodes paired by maze and repeat
    (columns ``maze_id``, ``solved_a``, ``solved_b``).

    With at most one pair per maze the pairs are independent: the exact McNemar test on the
    discordant pairs. With repeats, pairs on one maze are not: the per-maze difference in solves
    (``solved_a - solved_b`` summed over its pairs, divided by them) is the unit, tested with the
    sign-flip test (``sign_flip_test``), which reduces to McNemar's exact test when every maze
    has one pair."""
    if pairs.empty:
        return PairedTest(1.0, "no paired episodes")
    if not pairs["maze_id"].duplicated().any():
        a_only = int((pairs["solved_a"] & ~pairs["solved_b"]).sum())
        b_only = int((pairs["solved_b"] & ~pairs["solved_a"]).sum())
        return PairedTest(mcnemar_p(a_only, b_only), "exact McNemar (one pair per maze)")
    diff = (pairs["solved_a"].astype(float) - pairs["solved_b"].astype(float)).groupby(pairs["maze_id"]).mean()
    if len(diff) < 2:
        return PairedTest(float("nan"), "clustered by maze: fewer than 2 mazes")
    test = sign_flip_test(diff)
    return PairedTest(test.p, f"clustered by maze (repeats): sign-flip test of per-maze differences, {test.method}")


def holm(pvalues) -> np.ndarray:
    """Holm-adjusted p-values (statsmodels ``multipletests``); NaN stays NaN and is not counted."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, dtype=float)
    out = np.full(len(p), np.nan)
    known = ~np.isnan(p)
    if known.any():
        out[known] = multipletests(p[known], alpha=ALPHA, method="holm")[1]
    return out
