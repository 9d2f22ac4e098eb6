"""Figures of the report: matplotlib (Agg), one function per figure, each returning a Figure.

Conventions: every axis is labelled with its unit; every bar or point says how many episodes
(or steps, or turns) stand behind it; arms keep one color throughout the report. Every arm stays
visible: a bar of length zero gets a marker at 0 (``_zero_marks``). A panel whose values do not
vary is said in words (``_no_variation``), never drawn on an axis stretched around one value.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from analysis.load import ALL, BANDS, grid_order  # noqa: E402

DPI = 110
WIDTH = 8.0
OUTCOME_COLORS = {"progress": "#2a9d8f", "neutral": "#b0b0b0", "wasted": "#e76f51"}
TERM_COLORS = {"solved": "#2a9d8f", "died": "#264653", "step_cap": "#e9c46a", "stall": "#e76f51", "parse_failed": "#9d4edd",
               "exhausted": "#457b9d", "error": "#6c757d"}

plt.rcParams.update({
    "font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10, "legend.fontsize": 9,
    "axes.spines.top": False, "axes.spines.right": False, "figure.dpi": DPI,
})


def arm_colors(arms: list[str]) -> dict[str, str]:
    cmap = plt.get_cmap("tab10")
    colors = {a: matplotlib.colors.to_hex(cmap(i % 10)) for i, a in enumerate(a for a in arms if a != ALL)}
    colors[ALL] = "#222222"
    return colors


def _fig(h: float = 4.0, ncols: int = 1, w: float = WIDTH) -> tuple[Figure, np.ndarray]:
    fig, axes = plt.subplots(1, ncols, figsize=(w, h), squeeze=False, layout="constrained")
    return fig, axes[0]


def _only_arms(t: pd.DataFrame) -> pd.DataFrame:
    return t[t["arm"] != ALL] if (t["arm"] != ALL).any() else t


ZERO_MARK = "zero-mark"  # the gid of the marks that stand for a bar of length zero


def _zero_marks(ax, centers, values, colors, horizontal: bool) -> None:
    """A marker at 0 for each value that is exactly 0: a bar of no length draws nothing, and an
    arm at zero must stay visible. A missing value (NaN) gets none."""
    for c, v, color in zip(centers, values, colors, strict=True):
        if pd.notna(v) and float(v) == 0:
            x, y = (0, c) if horizontal else (c, 0)
            ax.plot([x], [y], marker="D", ms=6, color=color, markeredgecolor="black", markeredgewidth=0.6,
                    linestyle="none", clip_on=False, zorder=4, gid=ZERO_MARK)


def _constant(values) -> bool:
    """Whether a panel's values carry no variation: none is known, or every known one is the same."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return len(v) == 0 or bool((v == v[0]).all())


def _no_variation(ax, what: str) -> None:
    """Say in words that a panel has nothing to compare, instead of drawing its one value on an
    axis scaled around it (matplotlib would span -0.05..0.05 around an all-zero panel)."""
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)
    # out of the layout: a long sentence must not squeeze the panel to nothing
    ax.text(0.5, 0.5, f"no variation:\n{what}", ha="center", va="center", transform=ax.transAxes, color="#555555",
            wrap=True).set_in_layout(False)


def solves_per_arm(t: pd.DataFrame, colors: dict[str, str]) -> Figure:
    t = _only_arms(t)
    fig, (ax,) = _fig(h=max(2.2, 0.5 * len(t) + 1.2))
    y = np.arange(len(t))
    ax.barh(y, t["solve_rate"], color=[colors[a] for a in t["arm"]])
    _zero_marks(ax, y, t["solve_rate"], [colors[a] for a in t["arm"]], horizontal=True)
    for i, r in enumerate(t.itertuples()):
        ax.text(r.solve_rate + 0.01, i, f"{r.solves}/{r.episodes}", va="center")
    ax.set_yticks(y, t["arm"])
    ax.invert_yaxis()
    ax.set_xlim(0, 1.1)
    ax.set_xlabel("solve rate (solved episodes / episodes)")
    ax.set_title("Solves per model (label: solves / episodes)")
    return fig


def _group_order(col: str, groups) -> list[str]:
    """The groups of a panel in the tables' order: grids by ``grid_order`` (numerically), others
    as named."""
    unique = list(dict.fromkeys(str(g) for g in groups))
    return sorted(unique, key=grid_order) if col == "grid" else sorted(unique)


def solves_by(tables: dict[str, pd.DataFrame], colors: dict[str, str]) -> Figure:
    """One panel per maze grouping (grid, category, mechanism content), bars per arm; an arm at
    zero gets a marker on the axis, an arm with no episode in a group gets nothing."""
    groups_per_panel = [max(2, _only_arms(t)[col].nunique()) for col, t in tables.items()]
    fig, axes = plt.subplots(1, len(tables), figsize=(max(12.0, 1.2 * sum(groups_per_panel)), 4.6), squeeze=False,
                             layout="constrained", width_ratios=groups_per_panel)
    axes = axes[0]
    for ax, (col, t) in zip(axes, tables.items(), strict=True):
        t = _only_arms(t)
        groups = _group_order(col, t[col])
        arms = list(dict.fromkeys(t["arm"]))
        width = 0.8 / max(len(arms), 1)
        for j, arm in enumerate(arms):
            mine = t[t["arm"] == arm]
            sub = mine.set_index(mine[col].astype(str)).reindex(groups)
            x = np.arange(len(groups)) + (j - (len(arms) - 1) / 2) * width
            ax.bar(x, sub["solve_rate"].fillna(0), width, color=colors[arm], label=arm)
            _zero_marks(ax, x, sub["solve_rate"], [colors[arm]] * len(x), horizontal=False)
            for xi, (s, n) in zip(x, zip(sub["solves"], sub["episodes"], strict=True), strict=True):
                if pd.notna(n):
                    ax.text(xi, (s / n if n else 0) + 0.04, f"{int(s)}/{int(n)}", ha="center", fontsize=7,
                            rotation=90 if len(arms) > 2 else 0, va="bottom")
        # long names break at their first space rather than slanting into the next panel
        ax.set_xticks(np.arange(len(groups)), [g.replace(" ", "\n", 1) for g in groups])
        ax.set_ylim(0, 1.4 if len(arms) > 2 else 1.2)
        ax.set_yticks([0, 0.25, 0.5, 0.75, 1.0])
        ax.set_xlabel(col.replace("_", " "))
        ax.set_ylabel("solve rate (solves / episodes)")
        ax.set_title(f"by {col.replace('_', ' ')}")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(len(labels), 6), frameon=False)
    fig.suptitle("Solves by maze property (labels: solves / episodes; a diamond marks an arm at zero)")
    return fig


def _stacked_shares(shares: dict[str, tuple[np.ndarray, list[str], str]], ylabels: list[str],
                    xlabel: str, title: str) -> Figure:
    """Horizontal 100% bars; ``shares`` maps a legend label to (shares, cell labels, color)."""
    fig, (ax,) = _fig(h=max(2.2, 0.5 * len(ylabels) + 1.4))
    y = np.arange(len(ylabels))
    left = np.zeros(len(ylabels))
    for label, (v, cell, color) in shares.items():
        ax.barh(y, v, left=left, color=color, label=label)
        for i in range(len(y)):
            if v[i] > 0.06:
                ax.text(left[i] + v[i] / 2, i, cell[i], ha="center", va="center", color="white", fontsize=8)
        left += v
    ax.set_yticks(y, ylabels)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel(xlabel)
    # the legend sits between the axes and the title: the title clears as many rows as it takes
    ncol = len(shares) if len(shares) <= 7 else 4
    ax.set_title(title, pad=10 + 14 * math.ceil(len(shares) / ncol))
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=ncol, frameon=False)
    return fig


def terminations(t: pd.DataFrame) -> Figure:
    t = _only_arms(t)
    # the endings that happened (the table lists every one, zeros included)
    kinds = [k for k in TERM_COLORS if k in t and t[k].sum() > 0]
    shares = {k: ((t[k] / t["episodes"]).to_numpy(dtype=float), [str(int(n)) for n in t[k]], TERM_COLORS[k])
              for k in kinds}
    return _stacked_shares(shares, [f"{a} (n={n})" for a, n in zip(t["arm"], t["episodes"], strict=True)],
                           "share of episodes (label: episodes)", "How episodes ended")


def progress(t: pd.DataFrame, colors: dict[str, str]) -> Figure:
    t = _only_arms(t)
    fig, (ax,) = _fig(h=max(2.4, 0.6 * len(t) + 1.4))
    y = np.arange(len(t))
    ax.barh(y - 0.2, t["mean_progress_action"], 0.4, color=[colors[a] for a in t["arm"]], label="action")
    ax.barh(y + 0.2, t["mean_progress_tile"], 0.4, color=[colors[a] for a in t["arm"]], alpha=0.4,
            hatch="//", label="tile")
    _zero_marks(ax, y - 0.2, t["mean_progress_action"], [colors[a] for a in t["arm"]], horizontal=True)
    _zero_marks(ax, y + 0.2, t["mean_progress_tile"], [colors[a] for a in t["arm"]], horizontal=True)
    for i, r in enumerate(t.itertuples()):
        ax.text(max(r.mean_progress_action, r.mean_progress_tile) + 0.01, i, f"n={r.episodes}", va="center")
    ax.set_yticks(y, t["arm"])
    ax.invert_yaxis()
    # unclipped progress is below 0 for an arm that ended farther than it started: its bar must show
    lowest = float(np.nanmin(t[["mean_progress_action", "mean_progress_tile"]].to_numpy(dtype=float), initial=0.0))
    ax.set_xlim(lowest - 0.1 if lowest < 0 else 0, 1.1)
    ax.axvline(0, color="black", lw=0.8)
    ax.set_xlabel("mean progress (1 - d_end / d_start; 1 = solved, below 0 = ended farther)")
    ax.set_title("Mean progress per model: action distance (solid) and tile distance (hatched)")
    ax.legend(frameon=False, loc="lower right")
    return fig


def closest(ep: pd.DataFrame, colors: dict[str, str], near: int) -> Figure:
    arms = list(dict.fromkeys(ep["arm"]))
    fig, (ax,) = _fig(h=max(2.6, 0.6 * len(arms) + 1.5))
    rng = np.random.default_rng(0)
    for i, arm in enumerate(arms):
        g = ep[ep["arm"] == arm]
        jitter = rng.uniform(-0.18, 0.18, len(g))
        solved = g["solved"].to_numpy()
        ax.scatter(g["closest_action"][~solved], (i + jitter)[~solved], s=14, alpha=0.7, color=colors[arm],
                   edgecolors="none")
        ax.scatter(g["closest_action"][solved], (i + jitter)[solved], s=40, marker="*", color="black")
        med = g["closest_action"].median()
        ax.plot([med, med], [i - 0.3, i + 0.3], color="black", lw=2)
    ax.axvline(near, color="grey", ls="--", lw=1)
    ax.text(near, -0.6, f" {near} actions", color="grey", fontsize=8, va="bottom")
    labels = [f"{a}\nmedian {ep.loc[ep['arm'] == a, 'closest_action'].median():g}, n={int((ep['arm'] == a).sum())}"
              for a in arms]
    ax.set_yticks(np.arange(len(arms)), labels)
    ax.set_ylim(len(arms) - 0.5, -0.8)
    ax.set_xlabel("closest approach: least action distance to the goal reached (actions)")
    ax.set_title("Closest approach per episode (dot: unsolved episode; star: solved; bar: median)")
    ax.margins(x=0.15)
    ax.set_xlim(left=-1)
    return fig


def bands(t: pd.DataFrame, colors: dict[str, str], names: tuple[str, ...] = BANDS) -> Figure:
    fig, axes = _fig(h=4.2, ncols=2, w=WIDTH + 3)
    arms = list(dict.fromkeys(t["arm"]))
    offsets = np.linspace(-0.15, 0.15, len(arms)) if len(arms) > 1 else [0.0]
    for ax, (col, label) in zip(axes, (("mean_progress_action", "mean action progress (0..1)"),
                                       ("solve_rate", "solve rate (solves / episodes)")), strict=True):
        for off, arm in zip(offsets, arms, strict=True):
            g = t[t["arm"] == arm].set_index("band").reindex(list(names))
            x = np.arange(len(names)) + off
            lo = (g[col] - g[f"{col}_ci_low"]).clip(lower=0)
            hi = (g[f"{col}_ci_high"] - g[col]).clip(lower=0)
            counts = "/".join(str(int(n)) if pd.notna(n) else "0" for n in g["episodes"])
            ax.errorbar(x, g[col], yerr=[lo.fillna(0), hi.fillna(0)], marker="o", capsize=3,
                        color=colors.get(arm, "black"), label=f"{arm} (n per band {counts})",
                        lw=2.2 if arm == ALL else 1.2,
                        ls="-" if arm == ALL else "--")
            if arm == ALL or len(arms) == 1:
                for xi, v, n, s in zip(x, g[col], g["episodes"], g["solves"], strict=True):
                    if pd.notna(v):
                        txt = f"n={int(n)}" if col != "solve_rate" else f"{int(s)}/{int(n)}"
                        ax.annotate(txt, (xi, v), textcoords="offset points", xytext=(6, 6), fontsize=8)
        ax.set_xticks(np.arange(len(names)), names)
        ax.set_xlabel("optimal path length band (actions)")
        ax.set_ylabel(label)
        # both are shares: a fixed 0..1 scale, never one stretched around a constant
        ax.set_ylim(min(0.0, float(np.nanmin(t[col].to_numpy(dtype=float), initial=0.0))) - 0.02, 1.08)
    axes[0].set_title("Action progress by optimal path (95% CI, mazes resampled)")
    axes[1].set_title("Solve rate by optimal path (95% CI)")
    axes[1].legend(frameon=False, fontsize=8)
    return fig


def difficulty(t: pd.DataFrame) -> Figure:
    """Per subset, each property's own share of the variance (``r2_increment``, the R^2 the
    property adds to the model term): the full R^2 is the same for every property when the model
    term dominates, so it is written beside each bar, not drawn. A subset whose increments do not
    vary (none computed: progress constant, or every one equal) says so in words."""
    fig, axes = _fig(h=4.0, ncols=2, w=WIDTH + 3)
    top = float(t["r2_increment"].max(skipna=True)) if t["r2_increment"].notna().any() else 0.0
    for ax, subset in zip(axes, list(dict.fromkeys(t["subset"])), strict=False):
        g = t[t["subset"] == subset]
        n = int(g["n"].max()) if len(g) else 0
        ax.set_title(f"{subset} (n={n} episodes)")
        if _constant(g["r2_increment"]):
            known = g["r2_increment"].dropna()
            _no_variation(ax, "no regression could be fitted (too few episodes, or action progress\nthe same in "
                              "every one)" if known.empty else f"every property adds R^2 {known.iloc[0]:.3f}")
            continue
        y = np.arange(len(g))
        ax.barh(y, g["r2_increment"].fillna(0), color="#023047")
        for i, r in enumerate(g.itertuples()):
            text = "n/a" if pd.isna(r.r2_increment) else f"+{r.r2_increment:.3f} (R^2 {r.r2:.3f})"
            ax.text((0 if pd.isna(r.r2_increment) else r.r2_increment) + top * 0.02, i, text, va="center",
                    fontsize=8)
        ax.set_yticks(y, g["label"])
        ax.invert_yaxis()
        ax.set_xlim(0, max(top, 1e-3) * 1.6)
        ax.set_xlabel("R^2 increment: share of the variance in action progress the property adds")
    fig.suptitle("Difficulty axes: progress_action ~ property + C(model), one regression per property\n"
                 "(bar: the property's own share; in brackets: R^2 with the model term)")
    return fig


def _count_panel(ax, t: pd.DataFrame, parts, totals: pd.Series, labels: list[str], xlabel: str, title: str,
                 colors: dict[str, str]) -> None:
    """Stacked counts per arm; ``parts`` is (column, color, legend label), stacked left to right.
    An arm with none gets a marker at 0; a panel where no arm has any says so."""
    ax.set_title(title, pad=28)
    if not (totals.fillna(0) > 0).any():
        _no_variation(ax, f"{xlabel.split(' (')[0]}: 0 for every arm")
        return
    y = np.arange(len(t))
    left = np.zeros(len(t))
    for col, color, label in parts:
        ax.barh(y, t[col], left=left, color=color, label=label)
        left += t[col].to_numpy()
    for i, (tot, lab) in enumerate(zip(totals, labels, strict=True)):
        ax.text(tot, i, f" {lab}", va="center", fontsize=8)
    _zero_marks(ax, y, totals, [colors[a] for a in t["arm"]], horizontal=True)
    ax.set_yticks(y, t["arm"])
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    ax.legend(frameon=False, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=4)
    ax.margins(x=0.2)


def verbs(t: pd.DataFrame, colors: dict[str, str]) -> Figure:
    t = _only_arms(t).assign(pickups_nothing=lambda d: d["pickup_actions"] - d["keys_picked_up"])
    fig, axes = _fig(h=max(2.6, 0.55 * len(t) + 1.6), ncols=2, w=WIDTH + 3)
    _count_panel(axes[0], t, (("keys_picked_up", "#2a9d8f", "key taken"), ("pickups_nothing", "#dddddd", "nothing")),
                 t["pickup_actions"], [f"{k}/{n}" for k, n in zip(t["keys_picked_up"], t["pickup_actions"], strict=True)],
                 "pickup actions (count)", "pickup: issued vs keys taken", colors)
    _count_panel(axes[1], t, (("doors_opened", "#2a9d8f", "door opened"), ("switches_flipped", "#264653", "switch flipped"),
                              ("doors_closed", "#e9c46a", "door closed"), ("toggles_nothing", "#dddddd", "nothing")),
                 t["toggle_actions"], [f"n={n}" for n in t["toggle_actions"]],
                 "toggle actions (count)", "toggle: what each one did", colors)
    return fig


def _arm_handles(arms, colors: dict[str, str], labels: list[str]):
    """Legend entries for the arms, whether or not a panel drew them."""
    from matplotlib.lines import Line2D

    return [Line2D([], [], color=colors[a], marker="o", label=lab) for a, lab in zip(arms, labels, strict=True)]


def quarters(t: pd.DataFrame, colors: dict[str, str]) -> Figure:
    t = _only_arms(t)
    bumps = ("wall_bump_share", "wall bumps") if t["wall_bump_share"].notna().any() else ("bump_share", "bumps")
    panels = (("revisit_share", "revisits"), ("turn_share", "turns"), ("unseen_share", "steps onto an unseen cell"),
              bumps)
    fig, axes = _fig(h=3.6, ncols=len(panels), w=13)
    arms = list(dict.fromkeys(t["arm"]))
    for ax, (col, title) in zip(axes, panels, strict=True):
        ax.set_title(title)
        if _constant(t[col]):
            known = t[col].dropna()
            _no_variation(ax, "no step counted" if known.empty else
                          f"{100 * known.iloc[0]:.0f}% in every quarter, every arm")
            continue
        for arm in arms:
            g = t[t["arm"] == arm].sort_values("quarter")
            # unclipped: an arm at 0% stays visible over the axis line
            ax.plot(g["quarter"], 100 * g[col], marker="o", color=colors[arm], label=arm, clip_on=False)
        ax.set_xticks([1, 2, 3, 4], ["Q1", "Q2", "Q3", "Q4"])
        ax.set_xlabel("quarter of the episode's steps")
        ax.set_ylabel("% of steps in the quarter")
        ax.set_ylim(bottom=0)
    n = t.groupby("arm")["steps"].sum()
    fig.legend(handles=_arm_handles(arms, colors, [f"{a} ({int(n[a])} steps)" for a in arms]),
               loc="outside lower center", ncol=min(4, len(arms)), frameon=False)
    fig.suptitle("How behaviour drifts over an episode (pooled steps per quarter)")
    return fig


def last_bumps(per: pd.DataFrame, summary: pd.DataFrame, colors: dict[str, str], last: int) -> Figure:
    summary = _only_arms(summary)
    fig, (ax,) = _fig(h=max(2.6, 0.6 * len(summary) + 1.6))
    arms = list(summary["arm"])
    rng = np.random.default_rng(1)
    col = "wall_bump_share" if per["wall_bump_share"].notna().any() else "bump_share"
    for i, arm in enumerate(arms):
        g = per[per["arm"] == arm]
        ax.scatter(100 * g[col], i + rng.uniform(-0.15, 0.15, len(g)), s=14, alpha=0.6, color=colors[arm])
        s = summary[summary["arm"] == arm].iloc[0]
        pooled = s[col]
        ax.plot([100 * pooled] * 2, [i - 0.3, i + 0.3], color="black", lw=2)
        maj = s["episodes_wall_bump_majority"] if col == "wall_bump_share" else s["episodes_bump_majority"]
        ax.text(101, i, f" {int(maj)}/{int(s['failed_episodes'])} > half", va="center", fontsize=8)
    ax.axvline(50, color="grey", ls="--", lw=1)
    ax.set_yticks(np.arange(len(arms)), arms)
    ax.set_ylim(len(arms) - 0.5, -0.5)
    ax.set_xlim(-2, 125)
    ax.set_xticks([0, 25, 50, 75, 100])
    what = "wall bumps" if col == "wall_bump_share" else "bumps"
    ax.set_xlabel(f"{what} among the last {last} steps of a failed episode (%)")
    ax.set_title(f"{what.capitalize()} at the end of failed episodes (dot: episode; bar: pooled share)")
    return fig


def _k(v, _pos=None) -> str:
    return f"{v / 1e6:g}M" if abs(v) >= 1e6 else f"{v / 1e3:g}k" if abs(v) >= 1e3 else f"{v:g}"


def tokens(t: pd.DataFrame, colors: dict[str, str]) -> Figure:
    t = _only_arms(t)
    fig, axes = _fig(h=max(2.6, 0.55 * len(t) + 1.6), ncols=2, w=WIDTH + 3)
    y = np.arange(len(t))
    for ax, col, title in ((axes[0], "mean_tokens_out_per_episode", "output tokens per episode (mean)"),
                           (axes[1], "mean_tokens_reasoning_per_episode", "reasoning tokens per episode (mean)")):
        ax.set_title(title)
        vals = t[col].fillna(0)
        if not (vals > 0).any():
            _no_variation(ax, "0 for every arm")
            continue
        ax.barh(y, vals, color=[colors[a] for a in t["arm"]])
        _zero_marks(ax, y, vals, [colors[a] for a in t["arm"]], horizontal=True)
        for i, (v, n) in enumerate(zip(vals, t["episodes"], strict=True)):
            ax.text(v, i, f" {v:,.0f} (n={n})", va="center", fontsize=8)
        ax.set_yticks(y, t["arm"])
        ax.invert_yaxis()
        if (vals > 0).all() and vals.max() / max(vals.min(), 1) > 50:
            ax.set_xscale("log")
        ax.set_xlabel("tokens")
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_k))
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(4))
        ax.margins(x=0.35)
        if ax.get_xscale() == "linear":
            ax.set_xlim(left=0)  # the margin would otherwise put the zero marks inside the plot
    fig.suptitle("Test-time compute")
    return fig


def thinking_after(t: pd.DataFrame, colors: dict[str, str]) -> Figure:
    """Two panels, one per definition of a step that worked: median next-turn reasoning per arm."""
    t = _only_arms(t)
    arms = list(dict.fromkeys(t["arm"]))
    panels = (("state", (("worked", "#2a9d8f", "it changed position, key or a mechanism"),
                         ("achieved nothing", "#e76f51", "it changed nothing of those"))),
              ("distance", (("progress", "#2a9d8f", "the oracle distance fell"),
                            ("no progress", "#e76f51", "it did not fall"))))
    fig, axes = _fig(h=max(2.8, 0.7 * len(arms) + 1.9), ncols=2, w=WIDTH + 4)
    y = np.arange(len(arms))
    for ax, (definition, groups) in zip(axes, panels, strict=True):
        d = t[t["definition"] == definition]
        ax.set_title(f"{definition} definition", pad=34)
        shown = d[d["after"].isin([after for after, _, _ in groups])]["median_reasoning_tokens"]
        if _constant(shown):
            _no_variation(ax, "no reasoning count" if shown.dropna().empty else
                          f"a median of {shown.dropna().iloc[0]:,.0f} tokens after every kind of step")
            continue
        for j, (after, color, meaning) in enumerate(groups):
            g = d[d["after"] == after].set_index("arm").reindex(arms)
            ys = y + (j - 0.5) * 0.38
            vals = g["median_reasoning_tokens"].fillna(0)
            ax.barh(ys, vals, 0.38, color=color, label=f"{after}: {meaning}")
            _zero_marks(ax, ys, g["median_reasoning_tokens"], [color] * len(ys), horizontal=True)
            for yi, v, n in zip(ys, vals, g["turns"].fillna(0), strict=True):
                ax.text(v, yi, f" {v:,.0f} ({int(n)} turns)", va="center", fontsize=8)
        ax.set_yticks(y, arms)
        ax.invert_yaxis()
        ax.set_xlabel("median reasoning tokens on the next turn (tokens)")
        ax.legend(frameon=False, fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=1)
        ax.margins(x=0.35)
    fig.suptitle("Thinking after a step that worked vs one that did not")
    return fig


def thinking_quarters(t: pd.DataFrame, colors: dict[str, str]) -> Figure:
    t = _only_arms(t)
    fig, axes = _fig(h=3.6, ncols=2, w=WIDTH + 3)
    arms = list(dict.fromkeys(t["arm"]))
    for ax, (col, title) in zip(axes, (("median_reasoning_tokens", "median per turn"),
                                       ("mean_reasoning_tokens", "mean per turn")), strict=True):
        ax.set_title(title)
        vals = t[col].dropna()
        if _constant(vals):
            _no_variation(ax, "no reasoning count" if vals.empty else
                          f"{vals.iloc[0]:,.0f} tokens in every quarter, every arm")
            continue
        for arm in arms:
            g = t[t["arm"] == arm].sort_values("quarter")
            ax.plot(g["quarter"], g[col], marker="o", color=colors[arm])
        ax.set_xticks([1, 2, 3, 4], ["Q1", "Q2", "Q3", "Q4"])
        ax.set_xlabel("quarter of the episode's steps")
        if (vals > 0).all() and len(vals) and vals.max() / vals.min() > 50:
            ax.set_yscale("log")  # arms that think 100x more would flatten the others to a line
            ax.set_ylabel("reasoning tokens (log scale)")
        else:
            ax.set_ylim(bottom=0)
            ax.set_ylabel("reasoning tokens")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(_k))
    labels = [f"{a} ({int(t.loc[t['arm'] == a, 'turns'].sum())} turns)" for a in arms]
    fig.legend(handles=_arm_handles(arms, colors, labels), loc="outside lower center", ncol=min(4, len(arms)),
               frameon=False)
    fig.suptitle("Thinking over an episode: reasoning tokens per turn, by quarter")
    return fig


def onset(per: pd.DataFrame, colors: dict[str, str]) -> Figure:
    """ECDF of the onset share of unsolved episodes, per arm, under both definitions."""
    per = per[~per["solved"]]
    fig, axes = _fig(h=3.8, ncols=2, w=WIDTH + 3)
    for ax, (col, title) in zip(axes, (("onset_share", "last new minimum of the oracle distance"),
                                       ("novel_onset_share", "last never-seen state (novel)")), strict=True):
        for arm in [a for a in colors if a in set(per["arm"])]:
            v = np.sort(per.loc[per["arm"] == arm, col].dropna().to_numpy(dtype=float))
            if len(v):
                ax.step(np.concatenate([[0], v, [1]]), np.concatenate([[0], np.arange(1, len(v) + 1) / len(v), [1]]),
                        where="post", color=colors[arm], label=f"{arm} (n={len(v)})")
        ax.axvline(0.5, color="grey", ls="--", lw=1)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("failure onset (share of the episode's steps)")
        ax.set_ylabel("share of unsolved episodes with onset <= x")
        ax.set_title(title)
    axes[0].legend(frameon=False, fontsize=8, loc="lower right")
    fig.suptitle("Failure onset: when unsolved episodes stopped making progress")
    return fig


def near_goal(ep: pd.DataFrame, colors: dict[str, str], near: int) -> Figure:
    """Each unsolved episode's closest approach against its final distance."""
    ep = ep[~ep["solved"]]
    fig, (ax,) = _fig(h=4.2, w=WIDTH)
    top = float(np.nanmax(ep[["closest_action", "d_end_action"]].to_numpy(dtype=float), initial=near + 1))
    ax.axvspan(-0.5, near + 0.5, color="#2a9d8f", alpha=0.10, lw=0)
    ax.axhspan(-0.5, near + 0.5, color="#e9c46a", alpha=0.15, lw=0)
    rng = np.random.default_rng(2)
    for arm in [a for a in colors if a in set(ep["arm"])]:
        g = ep[ep["arm"] == arm]
        jitter = rng.uniform(-0.3, 0.3, (2, len(g)))
        came = int((g["closest_action"] <= near).sum())
        ended = int((g["d_end_action"] <= near).sum())
        ax.scatter(g["closest_action"] + jitter[0], g["d_end_action"].astype(float) + jitter[1], s=14, alpha=0.7,
                   color=colors[arm], label=f"{arm}: came within {near}: {came}, ended within {near}: {ended} "
                                            f"(n={len(g)})")
    ax.plot([0, top], [0, top], color="grey", lw=1, ls=":")
    ax.text(near + 0.8, top * 0.5, f"came within {near}", rotation=90, va="center", fontsize=8, color="#2a9d8f")
    ax.text(top * 0.5, near + 0.8, f"ended within {near}", ha="center", fontsize=8, color="#b08a1e")
    ax.set_xlim(-1, top * 1.05 + 1)
    ax.set_ylim(-1, top * 1.05 + 1)
    ax.set_xlabel("closest approach (least action distance reached, actions)")
    ax.set_ylabel("action distance at the end (actions)")
    ax.set_title(f"Unsolved episodes near the goal (shaded: within {near} actions; "
                 "an unreachable end is not drawn)", fontsize=10)
    ax.legend(frameon=False, fontsize=8, loc="upper left")
    return fig


def regret(t: pd.DataFrame) -> Figure:
    t = _only_arms(t)
    shares = {}
    for k, color in OUTCOME_COLORS.items():
        v = t[f"{k}_share"].to_numpy(dtype=float)
        shares[k] = (v, [f"{100 * x:.0f}%" for x in v], color)
    return _stacked_shares(shares, [f"{a} ({n} steps)" for a, n in zip(t["arm"], t["steps"], strict=True)],
                           "share of steps, by change in oracle action distance",
                           "Per-step oracle regret: progress (distance down), neutral, wasted (distance up)")


def horizon(t: pd.DataFrame, colors: dict[str, str]) -> Figure:
    fig, axes = plt.subplots(2, 1, figsize=(WIDTH, 5.2), sharex=True, layout="constrained",
                             gridspec_kw={"height_ratios": [3, 1]})
    for arm in [a for a in colors if a in set(t["arm"])]:
        g = t[t["arm"] == arm]
        n = int(g["episodes"].iloc[0])
        axes[0].plot(g["step"], g["mean_remaining"], color=colors[arm], label=f"{arm} (n={n})")
        axes[1].plot(g["step"], g["running"], color=colors[arm])
    axes[0].set_ylabel("mean remaining action distance\n(share of start distance)")
    axes[0].set_ylim(bottom=0)
    axes[0].set_title("Horizon: distance to the goal over an episode (ended episodes keep their final value)")
    axes[0].legend(frameon=False, fontsize=8)
    axes[1].set_ylabel("episodes\nstill running")
    axes[1].set_xlabel("step (actions taken)")
    return fig


def ablation(t: pd.DataFrame) -> Figure:
    fig, axes = _fig(h=max(2.6, 0.45 * len(t) + 1.6), ncols=2, w=WIDTH + 3)
    labels = [f"{m}: {c} (n={n})" for m, c, n in zip(t["model_name"], t["condition"], t["mazes"], strict=True)]
    y = np.arange(len(t))
    for ax, col, title in ((axes[0], "progress_diff", "action progress"), (axes[1], "solve_rate_diff", "solve rate")):
        lo = (t[col] - t[f"{col}_ci_low"]).clip(lower=0).fillna(0)
        hi = (t[f"{col}_ci_high"] - t[col]).clip(lower=0).fillna(0)
        ax.errorbar(t[col], y, xerr=[lo, hi], fmt="o", capsize=3, color="#264653")
        ax.axvline(0, color="grey", lw=1)
        ax.set_yticks(y, labels if ax is axes[0] else [""] * len(t))
        ax.invert_yaxis()
        ax.set_xlabel(f"{title}: condition - baseline (paired by maze)")
        ax.set_title(f"Effect on {title} (95% CI)")
    fig.suptitle("Ablations against baseline (n = mazes run under both)")
    return fig


def _diff_panel(ax, t: pd.DataFrame, col: str, labels: list[str], xlabel: str, colors: list[str]) -> None:
    """Differences with their 95% intervals, one row each, and the zero line."""
    y = np.arange(len(t))
    lo = (t[col] - t[f"{col}_ci_low"]).clip(lower=0).fillna(0)
    hi = (t[f"{col}_ci_high"] - t[col]).clip(lower=0).fillna(0)
    for i in range(len(t)):
        ax.errorbar(t[col].iloc[i], y[i], xerr=[[lo.iloc[i]], [hi.iloc[i]]], fmt="o", capsize=3, color=colors[i])
    ax.axvline(0, color="grey", lw=1)
    ax.set_yticks(y, labels)
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)


def paired_effects(t: pd.DataFrame) -> Figure:
    """Twin minus original per arm and variant kind, action progress and solve rate."""
    fig, axes = _fig(h=max(2.6, 0.4 * len(t) + 1.6), ncols=2, w=WIDTH + 3)
    # a projection's row is one variant (docs/variants.md#projection-twins): named by it
    labels = [f"{a}: {v if k == 'projection' else k} (n={n})"
              for a, k, v, n in zip(t["arm"], t["kind"], t["variants"], t["mazes"], strict=True)]
    family = {"isomorphic": "#457b9d", "near-isomorphic": "#8ecae6", "reskin": "#9d4edd", "ablation": "#2a9d8f",
              "control": "#e76f51", "projection": "#f4a261"}
    colors = [family.get(f, "#264653") for f in t["family"]]
    _diff_panel(axes[0], t, "progress_diff", labels, "action progress: twin - original (paired by maze)", colors)
    _diff_panel(axes[1], t, "solve_rate_diff", [""] * len(t), "solve rate: twin - original (paired by maze)", colors)
    axes[0].set_title("Effect on action progress (95% CI)")
    axes[1].set_title("Effect on solve rate (95% CI)")
    from matplotlib.lines import Line2D

    shown = [f for f in family if f in set(t["family"])]
    axes[1].legend([Line2D([], [], color=family[f], marker="o", linestyle="") for f in shown], shown,
                   title="family", loc="best", fontsize="small")
    fig.suptitle("Twins against their originals (n = source mazes run both ways; colour: family)")
    return fig


def ranking(t: pd.DataFrame) -> Figure:
    """Each pair of arms: the paired difference in action progress with its interval, marked when
    it survives Holm's correction."""
    fig, (ax,) = _fig(h=max(2.4, 0.4 * len(t) + 1.4), w=WIDTH + 1)
    labels = [f"{a} - {b} (n={n}; solves {x}:{y})" for a, b, n, x, y in
              zip(t["arm_a"], t["arm_b"], t["mazes"], t["a_only_solves"], t["b_only_solves"], strict=True)]
    colors = ["#e76f51" if s else "#264653" for s in t["progress_significant"]]
    _diff_panel(ax, t, "progress_diff", labels, "action progress: first arm - second arm (paired by maze)", colors)
    # the labels take the left of the figure: the title is set over the whole figure to fit
    fig.suptitle("Pairs of arms: paired difference in action progress\n(95% CI; red: significant after Holm)",
                 fontsize="medium")
    return fig


def incident_timeline(t: pd.DataFrame) -> Figure:
    """One panel per arm: failed attempts per bin of the run's wall-clock time, stacked by class
    (one colour per class throughout); episodes that ended in error stacked on top, hatched."""
    import matplotlib.dates as mdates

    classes = sorted(t["error_class"].unique())
    cmap = plt.get_cmap("tab10")
    color = {c: matplotlib.colors.to_hex(cmap(i % 10)) for i, c in enumerate(classes)}
    arms = list(dict.fromkeys(t["arm"]))
    fig, axes = plt.subplots(len(arms), 1, figsize=(WIDTH, 1.9 * len(arms) + 1.2), squeeze=False,
                             layout="constrained")
    for ax, arm in zip(axes[:, 0], arms, strict=True):
        a = t[t["arm"] == arm]
        step = pd.Timedelta(minutes=int(a["bin_minutes"].iloc[0]))
        width = step * 0.9
        # the arms of one run share its time axis: where each arm's incidents fell, side by side
        same_run = t[t["run"] == a["run"].iloc[0]]["bin_start"]
        ax.set_xlim(pd.Timestamp(same_run.min()).to_pydatetime(), (pd.Timestamp(same_run.max()) + step).to_pydatetime())
        bins = sorted(a["bin_start"].unique())
        bottom = pd.Series(0.0, index=bins)
        for kind, hatch in (("failures", None), ("error_episodes", "//")):
            for c in classes:
                v = a[a["error_class"] == c].groupby("bin_start")[kind].sum().reindex(bins, fill_value=0)
                if not (v > 0).any():
                    continue
                ax.bar([pd.Timestamp(b).to_pydatetime() for b in bins], v.to_numpy(), width=width, align="edge",
                       bottom=bottom.to_numpy(), color=color[c], hatch=hatch, edgecolor="white" if hatch else None,
                       linewidth=0)
                bottom = bottom + v.to_numpy()
        failed, ended = int(a["failures"].sum()), int(a["error_episodes"].sum())
        ax.set_title(f"{arm}: {failed} failed attempt{'' if failed == 1 else 's'}, {a['waited_h'].sum():.2f} h waited, "
                     f"{ended} episode{'' if ended == 1 else 's'} ended in error", fontsize=9)
        ax.set_ylabel(f"per {int(a['bin_minutes'].iloc[0])} min")
        locator = mdates.AutoDateLocator(maxticks=8)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    axes[-1, 0].set_xlabel("wall-clock time (UTC)")
    handles = [matplotlib.patches.Patch(color=color[c], label=c) for c in classes]
    handles.append(matplotlib.patches.Patch(facecolor="#bbbbbb", hatch="//", edgecolor="white",
                                            label="episode ended in error"))
    fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(handles)), fontsize=8)
    fig.suptitle("Incidents: failed attempts over the run's wall-clock time")
    return fig
