"""Every figure of a quickstart-like report, read back from its matplotlib objects (tick labels,
bar lengths, texts, titles) and checked against the tables it draws: no panel draws a constant
as data, grids are in numeric order, every arm is visible, labels say what the bars are."""

from __future__ import annotations

import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.container import BarContainer
from tracefab import demo_run, play, quickstart_run, write_run

from analysis import figures
from analysis.load import ALL, grid_order, load_runs
from analysis.metrics import difficulty_axes
from analysis.report import sections
from env import resolve_mazes
from env.oracle import optimal_actions

MODEL = "gemma-270m"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The quickstart's sections, built (their figures still open), and its tables by name."""
    traces = load_runs([quickstart_run(tmp_path_factory.mktemp("qs") / "quickstart")])
    shown, head = sections(traces)
    figs = {name: fig for _, b in shown for name, fig in b.figures.items()}
    tables = {name: t for _, b in shown for name, t in b.tables.items()}
    yield traces, figs, tables
    plt.close("all")


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def _said_no_variation(ax) -> bool:
    return any(t.startswith("no variation") for t in _texts(ax))


def _series(ax) -> list[tuple[str, np.ndarray]]:
    """What an axes draws as data: (value axis, values) for each bar set and plotted line; the marks
    of an arm at zero count as a 0."""
    out = []
    bars = [c for c in ax.containers if isinstance(c, BarContainer) and len(c.datavalues)]
    for c in bars:
        out.append(("x" if c.orientation == "horizontal" else "y", np.asarray(c.datavalues, dtype=float)))
    for line in ax.get_lines():
        x, y = np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)
        if line.get_gid() == figures.ZERO_MARK:  # on the axis the bars beside it measure
            out.append(("x" if bars and bars[0].orientation == "horizontal" else "y", np.zeros(1)))
        elif len(x) > 1 and not np.all(x == x[0]):  # a series over x (not a vertical rule)
            out.append(("y", y))
    return out


def test_no_panel_draws_a_constant_as_data(built):
    _, figs, _ = built
    assert {"solves", "solves_by_maze", "progress", "tokens", "verbs", "quarters", "regret"} <= set(figs)
    for name, fig in figs.items():
        for ax in fig.axes:
            series = _series(ax)
            if _said_no_variation(ax):
                assert not series, f"{name}: {ax.get_title()} says no variation but draws data"
                continue
            for axis in ("x", "y"):
                values = np.concatenate([v for a, v in series if a == axis] or [np.zeros(0)])
                values = values[np.isfinite(values)]
                if len(values) == 0 or not np.all(values == values[0]):
                    continue
                lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
                # one value on an axis scaled around it (matplotlib's -0.05..0.05 around 0) is not data
                assert lo <= values[0] <= hi and hi - lo >= max(1.0, abs(values[0])), \
                    f"{name}: {ax.get_title()!r} draws the constant {values[0]} on {axis} limits {lo}..{hi}"


def test_the_reasoning_panel_of_a_run_with_no_reasoning_says_so(built):
    _, figs, tables = built
    assert tables["tokens"]["tokens_reasoning"].sum() == 0
    output, reasoning = figs["tokens"].axes
    assert _said_no_variation(reasoning) and "0 for every arm" in " ".join(_texts(reasoning))
    assert "thinking_after" not in figs and "thinking_quarters" not in figs  # no reasoning token to draw


def _bar_rows(ax) -> dict[float, float]:
    """Horizontal bars: centre y -> length."""
    return {round(p.get_y() + p.get_height() / 2, 3): p.get_width()
            for c in ax.containers if isinstance(c, BarContainer) for p in c.patches}


def _zero_marks(ax) -> list[tuple[float, float, str]]:
    from matplotlib.colors import to_hex

    return [(float(line.get_xdata()[0]), float(line.get_ydata()[0]), to_hex(line.get_color()))
            for line in ax.get_lines() if line.get_gid() == figures.ZERO_MARK]


def _check_arm_rows(ax, table: pd.DataFrame, column: str, colors: dict[str, str], offset: float = 0.0) -> None:
    """Each arm of ``table`` has its tick label, and a bar of its value or, at 0, a mark."""
    arms = list(table["arm"])
    assert [t.get_text() for t in ax.get_yticklabels()] == arms
    bars, marks = _bar_rows(ax), _zero_marks(ax)
    for i, (arm, v) in enumerate(zip(arms, table[column], strict=True)):
        if v != 0:  # unclipped progress may be below 0: a bar to the left
            assert math.isclose(bars[round(i + offset, 3)], v), (arm, column)
        else:
            assert (0.0, i + offset, colors[arm]) in marks, (arm, column, marks)


def test_every_arm_is_visible_with_its_value(built):
    traces, figs, tables = built
    colors = figures.arm_colors(traces.arms)
    solves = tables["solves"]
    assert set(solves["arm"]) == set(traces.arms) and ALL not in set(solves["arm"])
    _check_arm_rows(figs["solves"].axes[0], solves, "solve_rate", colors)
    labels = {t.get_text() for t in figs["solves"].axes[0].texts}
    assert {f"{s}/{n}" for s, n in zip(solves["solves"], solves["episodes"], strict=True)} <= labels
    progress = tables["progress"]
    _check_arm_rows(figs["progress"].axes[0], progress, "mean_progress_action", colors, offset=-0.2)
    _check_arm_rows(figs["tokens"].axes[0], tables["tokens"], "mean_tokens_out_per_episode", colors)
    assert tables["tokens"].set_index("arm").loc["oracle", "mean_tokens_out_per_episode"] == 0  # a mark, not a bar
    verbs = tables["verbs"]
    pickup, toggle = figs["verbs"].axes
    assert [t.get_text() for t in pickup.get_yticklabels()] == list(verbs["arm"])
    assert {(0.0, float(i), colors[a]) for i, a in enumerate(verbs["arm"]) if verbs["toggle_actions"].iloc[i] == 0} \
        <= set(_zero_marks(toggle))
    assert verbs.set_index("arm").loc[MODEL, "toggle_actions"] == 0  # the model's no-ops issue no toggle


def test_solves_by_maze_orders_grids_numerically_and_shows_every_arm(built):
    traces, figs, tables = built
    colors = figures.arm_colors(traces.arms)
    fig = figs["solves_by_maze"]
    assert [ax.get_title() for ax in fig.axes] == ["by grid", "by category", "by content"]
    ticks = [[t.get_text().replace("\n", " ") for t in ax.get_xticklabels()] for ax in fig.axes]
    assert ticks[0] == ["9x6", "8x7", "8x8", "10x10", "14x14"]  # cells: 54 < 56 < 64 < 100 < 196
    assert ticks[0] == sorted(tables["solves_by_grid"]["grid"].unique(), key=grid_order)
    assert ticks[1] == sorted(tables["solves_by_category"]["category"].unique())
    assert ticks[2] == sorted(tables["solves_by_content"]["content"].unique())
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == traces.arms
    for ax, (col, table) in zip(fig.axes, (("grid", tables["solves_by_grid"]), ("category", tables["solves_by_category"]),
                                          ("content", tables["solves_by_content"])), strict=True):
        groups = ticks[fig.axes.index(ax)]
        width = 0.8 / len(traces.arms)
        heights = {(round(p.get_x() + p.get_width() / 2, 3)): p.get_height()
                   for c in ax.containers for p in c.patches}
        marks = {(round(x, 3), c) for x, y, c in _zero_marks(ax) if y == 0}
        texts = {(round(t.get_position()[0], 3), t.get_text()) for t in ax.texts}
        for r in table.itertuples():
            j = traces.arms.index(r.arm)
            x = round(groups.index(str(getattr(r, col))) + (j - (len(traces.arms) - 1) / 2) * width, 3)
            assert (x, f"{r.solves}/{r.episodes}") in texts, (col, r.arm)
            if r.solves:
                assert math.isclose(heights[x], r.solve_rate), (col, r.arm)
            else:
                assert (x, colors[r.arm]) in marks, (col, r.arm)


def test_difficulty_draws_each_propertys_own_share_or_says_why_not(built, tmp_path):
    _, figs, tables = built
    axes = tables["difficulty_axes"]
    assert axes["n"].max() == 2 and axes["r2_increment"].isna().all()  # two model episodes: no regression
    for ax, subset in zip(figs["difficulty_axes"].axes, axes["subset"].unique(), strict=True):
        assert ax.get_title() == f"{subset} (n=2 episodes)" and _said_no_variation(ax)

    # models whose progress varies: a bar per property, its length the increment, R^2 written beside it
    mazes = resolve_mazes(["example", "h14-small-walk", "h03-long-winding-corridor", "h01-key-far-from-door"])
    run = demo_run(tmp_path / "varied", mazes, {"walker": (1, 1, 6, 1, 1, 0.1), "turner": (4, 4, 2, 1, 1, 0.1)},
                   repeats=2, seed=7)
    rows, steps = [], []
    for m in mazes:  # a reference: never in the regressions
        row, st = play(m, optimal_actions(m).plan_names, run="varied", model_name="oracle", model="builtin/oracle")
        rows.append(row)
        steps += st
    write_run(run, rows, steps)
    traces = load_runs([run])
    table = difficulty_axes(traces)
    assert table["n"].max() == len(traces.model_episodes) == 16
    fig = figures.difficulty(table)
    for ax, subset in zip(fig.axes, table["subset"].unique(), strict=True):
        g = table[table["subset"] == subset]
        if _said_no_variation(ax):
            assert g["r2_increment"].nunique(dropna=True) <= 1
            continue
        assert [t.get_text() for t in ax.get_yticklabels()] == list(g["label"])
        (bars,) = ax.containers
        assert np.allclose(bars.datavalues, g["r2_increment"].fillna(0))
        for text, r in zip(ax.texts, g.itertuples(), strict=True):
            assert text.get_text() == ("n/a" if pd.isna(r.r2_increment) else f"+{r.r2_increment:.3f} (R^2 {r.r2:.3f})")
    plt.close(fig)


def test_an_arm_that_ended_farther_than_it_started_shows_its_bar_left_of_zero():
    t = pd.DataFrame({"arm": ["a", "b"], "episodes": [3, 3], "mean_progress_action": [-0.4, 0.0],
                      "mean_progress_tile": [0.2, 0.0]})
    colors = figures.arm_colors(["a", "b"])
    fig = figures.progress(t, colors)
    (ax,) = fig.axes
    assert ax.get_xlim()[0] < -0.4 and ax.get_xlim()[1] >= 1.0
    _check_arm_rows(ax, t, "mean_progress_action", colors, offset=-0.2)
    _check_arm_rows(ax, t, "mean_progress_tile", colors, offset=0.2)
    plt.close(fig)


def test_the_terminations_legend_names_what_happened_and_clears_the_title(built):
    _, figs, tables = built
    fig = figs["terminations"]
    ax = fig.axes[0]
    legend = ax.get_legend()
    arms = tables["terminations"][tables["terminations"]["arm"] != ALL]
    happened = [k for k in figures.TERM_COLORS if k in arms and arms[k].sum() > 0]
    assert [t.get_text() for t in legend.get_texts()] == happened and "died" not in happened
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    title, box = ax.title.get_window_extent(renderer), legend.get_window_extent(renderer)
    assert title.y0 >= box.y1 - 1, (title, box)  # the title sits above the legend, not across it
