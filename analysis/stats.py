"""Statistics: maze-cluster bootstrap intervals, paired differences, one-property regressions.

Episodes on the same maze are not independent (every model meets the same walls), so intervals
resample **mazes**: a replicate draws mazes with replacement and keeps all of each maze's
episodes. For a mean over episodes that is ``sum(values) / sum(counts)`` over the drawn mazes,
which ``scipy.stats.bootstrap`` computes exactly when given the per-maze sums and counts as
paired samples. Intervals are percentile intervals at 95% from 9,999 replicates with a fixed
seed, so a report is reproducible to the digit.
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


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float
    n: int  # episodes behind the value
    clusters: int  # mazes behind the interval

    def as_dict(self, prefix: str) -> dict[str, float | int]:
        return {prefix: self.value, f"{prefix}_ci_low": self.low, f"{prefix}_ci_high": self.high}


def cluster_ratio_ci(values, clusters, seed: int = SEED, resamples: int = RESAMPLES) -> Estimate:
    """Mean of ``values`` with a 95% interval that resamples whole clusters (mazes)."""
    frame = pd.DataFrame({"v": np.asarray(values, dtype=float), "c": np.asarray(clusters)}).dropna()
    n = len(frame)
    if n == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0, 0)
    per = frame.groupby("c", sort=True)["v"].agg(["sum", "count"])
    value = float(per["sum"].sum() / per["count"].sum())
    if len(per) < 2:
        return Estimate(value, float("nan"), float("nan"), n, len(per))
    if np.allclose(frame["v"], frame["v"].iloc[0]):
        return Estimate(value, value, value, n, len(per))
    res = stats.bootstrap(
        (per["sum"].to_numpy(), per["count"].to_numpy(dtype=float)),
        lambda s, c, axis=-1: s.sum(axis=axis) / c.sum(axis=axis),
        paired=True, vectorized=True, n_resamples=resamples, confidence_level=CONFIDENCE,
        method="percentile", rng=np.random.default_rng(seed),
    )
    ci = res.confidence_interval
    return Estimate(value, float(ci.low), float(ci.high), n, len(per))


def mean_ci(values, seed: int = SEED, resamples: int = RESAMPLES) -> Estimate:
    """Mean of independent values (for example per-maze paired differences) with a 95% interval."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if len(v) == 0:
        return Estimate(float("nan"), float("nan"), float("nan"), 0, 0)
    value = float(v.mean())
    if len(v) < 2:
        return Estimate(value, float("nan"), float("nan"), 1, 1)
    if np.allclose(v, v[0]):
        return Estimate(value, value, value, len(v), len(v))
    res = stats.bootstrap(
        (v,), np.mean, vectorized=True, n_resamples=resamples, confidence_level=CONFIDENCE,
        method="percentile", rng=np.random.default_rng(seed),
    )
    return Estimate(value, float(res.confidence_interval.low), float(res.confidence_interval.high),
                    len(v), len(v))


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
                group: str = "arm") -> dict[str, str | float]:
    """One regression ``outcome ~ prop + C(group)`` and what the property adds to it.

    Returns the full model's R^2 (``r2``: the share of the outcome's variance that the property
    and the model fixed effect explain together, the study's definition), the fixed effect's
    R^2 alone (``r2_model_only``), the property's increment (``r2_increment = r2 - r2_model_only``),
    and the slope with its p-value. With one model the fixed effect is dropped, and ``r2`` is
    then the property's own R^2.
    """
    d = frame[[outcome, prop, group]].dropna()
    out: dict[str, str | float] = {"property": prop, "n": len(d)}
    if len(d) < 3 or d[outcome].nunique() < 2:
        return {**out, "r2": float("nan"), "r2_model_only": float("nan"), "r2_increment": float("nan"),
                "slope": float("nan"), "p_value": float("nan")}
    y = d[outcome].to_numpy(dtype=float)
    x = d[prop].to_numpy(dtype=float)
    # the design matrices of the formula ``y ~ x + C(g)`` (treatment coding), built directly:
    # patsy's formula parsing costs more than the fits themselves
    fixed = pd.get_dummies(d[group].astype(str), drop_first=True, dtype=float).to_numpy()
    base_X = np.column_stack([np.ones(len(d)), fixed])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = OLS(y, np.column_stack([base_X, x])).fit()
        base = OLS(y, base_X).fit()
    constant = len(np.unique(x)) < 2
    return {
        **out,
        "r2": float(base.rsquared if constant else full.rsquared),
        "r2_model_only": float(base.rsquared),
        "r2_increment": 0.0 if constant else float(full.rsquared - base.rsquared),
        "slope": float("nan") if constant else float(full.params[-1]),
        "p_value": float("nan") if constant else float(full.pvalues[-1]),
    }


ALPHA = 1 - CONFIDENCE  # the level of every test of the report


def paired_p(differences) -> float:
    """Two-sided p-value of a zero mean of independent paired differences (one per maze): the
    sign-flip permutation test (``scipy.stats.permutation_test``, exact up to 2^13 mazes' worth of
    flips, else 9,999 random flips with the report's seed). NaN with fewer than two."""
    d = np.asarray(differences, dtype=float)
    d = d[~np.isnan(d)]
    if len(d) < 2:
        return float("nan")
    if np.allclose(d, 0):
        return 1.0
    res = stats.permutation_test((d,), np.mean, permutation_type="samples", vectorized=True,
                                 n_resamples=RESAMPLES, alternative="two-sided", rng=np.random.default_rng(SEED))
    return float(res.pvalue)


def mcnemar_p(a_only: int, b_only: int) -> float:
    """Exact McNemar p-value (statsmodels, binomial on the discordant pairs) of paired solves: ``a_only``
    pairs solved by the first side only, ``b_only`` by the second only. 1 with no discordant pair."""
    from statsmodels.stats.contingency_tables import mcnemar

    if a_only + b_only == 0:
        return 1.0
    return float(mcnemar([[0, a_only], [b_only, 0]], exact=True).pvalue)


def holm(pvalues) -> np.ndarray:
    """Holm-adjusted p-values (statsmodels ``multipletests``); NaN stays NaN and is not counted."""
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, dtype=float)
    out = np.full(len(p), np.nan)
    known = ~np.isnan(p)
    if known.any():
        out[known] = multipletests(p[known], alpha=ALPHA, method="holm")[1]
    return out
