"""The MultiNet study's published numbers, declared once: a leaf module that imports nothing, so
every package may read it (``env`` is the rightmost package of docs/design.md §1).

Only the numbers live here; what each user makes of them stays with the user: the generator's
composition constraints (``env.generator.strata``), the cost estimate's priors per provider family
(``agents.providers.STUDY_PRIORS``), the report's side-by-side tables (``analysis.study``).
docs/study.md lists where in the study each number comes from.
"""

# The study's three models, by the short names its ablation and usage tables (and its sweeps'
# model entries) give them, in that order.
STUDY_MODEL_NAMES = ("claude", "kimi", "qwen")
# How many models played each eval maze: every maze is one episode per model, so the study's
# episode counts are this many times its maze counts.
STUDY_MODEL_COUNT = len(STUDY_MODEL_NAMES)

STUDY_EVAL_SIZE = 50  # mazes in its eval set
STUDY_SOLVES = 6  # solved episodes of its final run, out of STUDY_MODEL_COUNT * STUDY_EVAL_SIZE

# The five path-length bands (name, lowest, highest optimal action count; None: open) the eval set
# was drawn in (Task Pool and the Evaluation Set); "more than 80" leaves 80 itself out of every band.
SELECTION_BANDS: tuple[tuple[str, int, int | None], ...] = (
    ("20-25", 20, 25), ("26-39", 26, 39), ("40-59", 40, 59), ("60-79", 60, 79), ("81+", 81, None),
)
# The four bands its results are reported in (Difficulty Axes, Figure 6).
ANALYSIS_BANDS: tuple[tuple[str, int | None, int | None], ...] = (
    ("<=30", None, 30), ("31-45", 31, 45), ("46-60", 46, 60), (">=61", 61, None),
)

# What each model of its final run spent (docs/providers.md, *Realised usage*): the model as the
# study names it, its queries, its episodes, and its output tokens per query (mean, median).
STUDY_USAGE: dict[str, tuple[str, int, int, int, int]] = {
    "claude": ("Claude Opus 4.8", 1876, 50, 1097, 289),
    "kimi": ("Kimi K2.6", 3207, 50, 20714, 20112),
    "qwen": ("Qwen 3.6 27B", 3045, 50, 15769, 16444),
}
# Its Qwen run: 48.0M output tokens on ~165 A100-hours, all counted against its final phase.
STUDY_OUTPUT_TOKENS_PER_GPU_HOUR = 48.0e6 / 165

# Its ablation's solve rates (%), per condition and model (in STUDY_MODEL_NAMES' order), 15 mazes
# each (its findings' table A1, as gathered in the study's protocol fact sheet, §7).
STUDY_ABLATION: dict[str, tuple[int, int, int]] = {
    "baseline_thinking": (60, 80, 64), "cond_prompt.minimal": (67, 60, 53), "cond_prompt.standard": (73, 47, 60),
    "cond_prompt.verbose": (67, 33, 67), "qry_subgoal": (93, 20, 20), "icl_zero_shot": (80, 20, 67),
    "ctx_text_summary": (60, 40, 13), "ctx_current": (53, 40, 0), "hist_multiturn": (53, 33, 13),
    "act_cardinal": (40, 40, 0), "qry_full_trajectory": (47, 20, 7), "obs_image_only": (13, 13, 7),
}
