"""Ranking with a confidence: every pair of arms over the mazes both ran, and a planner of how many
mazes and repeats would separate two arms.

Only original mazes count (twins are compared with their originals under *Paired effects*).
**Action progress**: per maze each arm's mean over its repeats, the difference first minus second,
the mean over the mazes both arms ran with a 95% bootstrap interval resampling mazes
(``analysis.stats.mean_ci``), and a two-sided sign-flip permutation test of a zero mean
(``analysis.stats.sign_flip_test``: exact over the non-zero differences when they are few, its
method named in ``progress_test``). **Solves**: episodes paired by maze and repeat, the exact
McNemar test on the discordant pairs (statsmodels) when each maze gives one pair, the sign-flip
test of per-maze differences when repeats put several pairs on a maze (``solves_test``); a
repeat that only one arm ran on a maze is left out of that test (``unmatched_episodes`` counts
them) and kept in the progress means. Each test's
p-values are Holm-corrected across the pairs (statsmodels ``multipletests``) at the report's
alpha (0.05).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from analysis import figures
from analysis.load import Traces
from analysis.sections import Built, Context, Section
from analysis.stats import ALPHA, holm, mean_ci, paired_solves_test, sign_flip_test
from analysis.twins import originals
from env.errors import BadInput

PLAN_REPEATS = (1, 2, 3, 5, 10)


def _per_maze(eps: pd.DataFrame) -> pd.DataFrame:
    """Per arm and maze: mean progress, repeats, and the sample variance over repeats."""
    return eps.groupby(["arm", "maze_id"], sort=True)["progress_action"].agg(["mean", "count", "var"])


def ranked_arms(traces: Traces) -> list[str]:
    """The arms ranked against each other: the models, never a model against a built-in reference
    (docs/report.md); a run with fewer than two model arms ranks its references among themselves."""
    return traces.models if len(traces.models) >= 2 else traces.references


def _pairs(traces: Traces, eps: pd.DataFrame):
    """(first arm, second arm, the mazes both ran with each arm's per-maze figures) in arm order,
    over the ranked arms (``ranked_arms``)."""
    per = _per_maze(eps)
    arms = [a for a in ranked_arms(traces) if a in per.index.get_level_values("arm")]
    for a, b in itertools.combinations(arms, 2):
        both = per.loc[a].merge(per.loc[b], left_index=True, right_index=True, suffixes=("_a", "_b"))
        if len(both):
            yield a, b, both


def ranking(traces: Traces) -> pd.DataFrame:
    eps = originals(traces.episodes)
    rows = []
    for a, b, both in _pairs(traces, eps):
        d = both["mean_a"] - both["mean_b"]
        sides = [eps.loc[(eps["arm"] == arm) & eps["maze_id"].isin(both.index), ["maze_id", "repeat", "solved"]]
                 for arm in (a, b)]
        paired = sides[0].merge(sides[1], on=["maze_id", "repeat"], suffixes=("_a", "_b"))
        a_only = int((paired["solved_a"] & ~paired["solved_b"]).sum())
        b_only = int((paired["solved_b"] & ~paired["solved_a"]).sum())
        progress_test, solves_test = sign_flip_test(d), paired_solves_test(paired)
        rows.append({"arm_a": a, "arm_b": b, "mazes": len(both), "progress_a": both["mean_a"].mean(),
                     "progress_b": both["mean_b"].mean(), **mean_ci(d).as_dict("progress_diff"),
                     "progress_p": progress_test.p, "progress_test": progress_test.method,
                     "paired_episodes": len(paired),
                     "unmatched_episodes": len(sides[0]) + len(sides[1]) - 2 * len(paired),
                     "solves_a": int(paired["solved_a"].sum()), "solves_b": int(paired["solved_b"].sum()),
                     "a_only_solves": a_only, "b_only_solves": b_only, "solves_p": solves_test.p,
                     "solves_test": solves_test.method})
    t = pd.DataFrame(rows)
    if t.empty:
        return t
    for test in ("progress", "solves"):
        t.insert(t.columns.get_loc(f"{test}_p") + 1, f"{test}_p_holm", holm(t[f"{test}_p"]))
        t.insert(t.columns.get_loc(f"{test}_p_holm") + 1, f"{test}_significant", t[f"{test}_p_holm"] < ALPHA)
    ahead = np.where(t["progress_diff"] > 0, t["arm_a"], t["arm_b"])
    t["ahead"] = np.where(t["progress_significant"], ahead, "not separated")
    return t


# ---- the planner -------------------------------------------------------------------------------

def variance_components(traces: Traces) -> dict[str, float | int]:
    """The run's variance of action progress, pooled over every pair of ranked arms on the mazes both ran.

    ``within``: the repeat variance within a maze, pooled over every arm's mazes with at least two
    repeats (sample variances weighted by their degrees of freedom); 0 when no maze has repeats.
    ``between``: per pair, the variance over mazes of the paired difference of maze means, less the
    share the repeats put there (``within * mean(1/r_a + 1/r_b)``, floored at 0), pooled over the
    pairs weighted by their mazes - 1. Without repeats ``between`` holds the within part too."""
    eps = originals(traces.episodes)
    per = _per_maze(eps)
    df = per["count"] - 1
    within = float((per["var"].fillna(0) * df).sum() / df.sum()) if (df > 0).any() else 0.0
    weights, betweens = [], []
    for _, _, both in _pairs(traces, eps):
        if len(both) < 2:
            continue
        observed = float((both["mean_a"] - both["mean_b"]).var(ddof=1))
        repeats = float((1 / both["count_a"] + 1 / both["count_b"]).mean())
        betweens.append(max(0.0, observed - within * repeats))
        weights.append(len(both) - 1)
    if not weights:
        raise BadInput(", ".join(str(d) for d in traces.run_dirs), "episodes",
                       "planning needs two arms that ran at least two of the same original mazes")
    return {"between": float(np.average(betweens, weights=weights)), "within": within, "pairs": len(weights),
            "repeats_seen": int(per["count"].max()), "mazes_seen": int(per.index.get_level_values("maze_id").nunique())}


def mazes_needed(delta: float, between: float, within: float, repeats: int, power: float, alpha: float) -> int:
    """Mazes for a two-sided paired test of two arms that differ by ``delta`` in action progress,
    each running every maze ``repeats`` times: the one-sample t-test on the per-maze differences,
    whose variance is ``between + 2 * within / repeats`` (statsmodels ``TTestPower``); at least 2."""
    from statsmodels.stats.power import TTestPower

    sd = math.sqrt(between + 2 * within / repeats)
    if sd == 0:
        return 2
    n = TTestPower().solve_power(effect_size=delta / sd, nobs=None, alpha=alpha, power=power,
                                 alternative="two-sided")
    return max(2, math.ceil(float(np.asarray(n).item())))


def _fraction(value: float, option: str, upper_closed: bool = False) -> float:
    if not (0 < value < 1 or (upper_closed and value == 1)):
        raise BadInput(option, "", f"must lie in (0, 1{']' if upper_closed else ')'}; got {value:g}")
    return value


def plan(traces: Traces, delta: float, power: float = 0.8, alpha: float = ALPHA) -> tuple[pd.DataFrame, dict]:
    """Mazes (and episodes per arm) needed per number of repeats, and the variance used."""
    _fraction(delta, "--delta", upper_closed=True)
    _fraction(power, "--power")
    _fraction(alpha, "--alpha")
    var = variance_components(traces)
    rows = [{"repeats": r, "mazes": (n := mazes_needed(delta, var["between"], var["within"], r, power, alpha)),
             "episodes_per_arm": n * r} for r in PLAN_REPEATS]
    return pd.DataFrame(rows), var


# ---- sections ------------------------------------------------------------------------------------

def _ranking(ctx: Context) -> Built | None:
    table = ranking(ctx.traces)
    if table.empty:
        return None  # fewer than two arms on shared mazes
    return Built({"ranking": table}, {"ranking": figures.ranking(table)})


RANKING_SECTION = Section(
    "ranking", "Ranking with a confidence",
    "Every pair of model arms over the original mazes both ran (`mazes`); a built-in reference is never paired "
    "with a model (a run with fewer than two model arms pairs its references instead). **Action progress**: "
    "per maze each "
    "arm's mean over its repeats, the difference first arm minus second (`progress_diff`), its mean over the "
    "mazes with a 95% bootstrap interval resampling mazes (9,999 replicates, fixed seed) and the p-value of "
    "a two-sided sign-flip permutation test of a zero mean (`progress_p`, scipy): exact, over every sign "
    "pattern of the non-zero differences, when there are at most 16 of them, else 9,999 random patterns "
    "whose resolution (the smallest p-value they can give) `progress_test` states. **Solves**: episodes paired "
    "by maze and repeat (`paired_episodes`; a repeat only one arm ran is left out of this test and counted in "
    "`unmatched_episodes`), the pairs solved by one arm only (`a_only_solves`, `b_only_solves`) and "
    "`solves_p`: the exact McNemar test (statsmodels) when each maze gives one pair, and with repeats, whose "
    "pairs on one maze are not independent, the sign-flip test of the per-maze differences in solves "
    "(`solves_test` names which). Each test's p-values are Holm-corrected across the pairs "
    "(`_p_holm`, statsmodels `multipletests`); `_significant` is an adjusted p below 0.05; `ahead` names the "
    "arm ahead in progress when that difference is significant. `gridbench plan RUN --delta D` says how many "
    "mazes and repeats would separate two arms that differ by D.",
    _ranking,
)
