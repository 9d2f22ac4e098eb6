"""Read one or more runs and attach what every analysis needs.

A run is a folder written by ``gridbench run`` (docs/design.md §7), or its export
(``gridbench export``, docs/export.md), read the same way: an ``episodes`` and a
``steps`` table with the fixed schemas of the records (``traces``), however their Parquet files
are laid out. The episodes of several runs are read into one pandas table (one row per
episode: small); the ``run`` column tells them apart. The steps are not read here: each run's
steps table stays a lazy Arrow dataset that ``analysis.steps.annotate`` streams through DuckDB
once, so a run of millions of steps is never held in memory. Each episode gets an ``arm``
label: the model, prefixed by the run and suffixed by the condition only when those vary, so
tables and figures of a single run read as plain model names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from agents.model import is_builtin
from agents.usage import Budget
from env.errors import BadInput
from env.maze import Maze, maze_from_dict
from env.sets import LONG_HORIZON_BANDS, resolve_maze
from env.study_facts import ANALYSIS_BANDS
from traces import (
    EPISODES_DIR,
    ERROR,
    STEPS_DIR,
    is_export,
    is_uri,
    open_store,
    read_episodes,
    read_manifest,
    trace_dataset,
)

# Columns of the analysis tables that are not trace columns.
GROUP = ["run", "model_name", "condition"]
ALL = "all"  # the arm that pools the model arms, in every per-arm table with more than one

# the per-step budget columns (``agents.usage.Budget``): runs written before they were recorded
# read them as null
BUDGET_COLUMNS = tuple(f.name for f in fields(Budget))


@dataclass(frozen=True)
class RunSteps:
    """One run's steps table, not yet read."""

    folder: Path | str  # the run folder (or URI): named in errors
    dataset: ds.Dataset  # ``traces.trace_dataset(folder, "steps")``

    @property
    def name(self) -> str:
        """The run's name (its folder's, or the last part of its URI): it stands in for a blank run column."""
        return open_store(self.folder).name


@dataclass
class Traces:
    """Episodes of one or more runs, errors kept apart, and each run's steps unread."""

    episodes: pd.DataFrame  # every non-error episode, with ``arm`` and derived maze columns
    steps: list[RunSteps]  # per run; ``analysis.steps.annotate`` reads them (only their steps of ``episodes``)
    errors: pd.DataFrame  # episodes whose termination is ``error``: excluded from every metric
    run_dirs: list[Path | str] = field(default_factory=list)  # folders, or URIs of runs in object storage
    mazes: dict[str, Maze | None] = field(default_factory=dict)  # maze_id -> maze, None if unknown

    def _sorted_arms(self, reference: bool) -> list[str]:
        eps = self.episodes
        if "reference" in eps:
            eps = eps[eps["reference"] == reference]
        elif reference:
            return []
        arms = eps.drop_duplicates(["run", "model_name", "condition"])  # sort a row per arm, not all
        return list(dict.fromkeys(arms.sort_values(["run", "model_name", "condition"])["arm"]))

    @property
    def arms(self) -> list[str]:
        """Every arm: the models, then the references."""
        return [*self.models, *self.references]

    @property
    def models(self) -> list[str]:
        """The arms played by models (anything but a built-in agent)."""
        return self._sorted_arms(False)

    @property
    def references(self) -> list[str]:
        """The arms played by built-in agents (``builtin/<name>``): references, shown in rows of
        their own and never pooled, regressed or compared with the study (docs/report.md)."""
        return self._sorted_arms(True)

    @property
    def model_episodes(self) -> pd.DataFrame:
        """The episodes of the model arms: what is pooled, regressed and compared with the study."""
        eps = self.episodes
        return eps[~eps["reference"]] if "reference" in eps else eps


def unreadable(run_dir: Path | str, table: str, error: Exception) -> BadInput:
    """A damaged trace file as one line of bad input, never a traceback."""
    return BadInput(str(run_dir), table, f"unreadable trace files ({str(error).splitlines()[0][:200]})")


def read_run_tables(run_dir: str | Path) -> tuple[pd.DataFrame, RunSteps]:
    """The raw episodes table of one run (a folder or an ``s3://``/``gs://`` URI), and its steps
    table unread."""
    run_dir = run_dir if is_uri(run_dir) else Path(run_dir)
    store = open_store(run_dir, "RUN_DIR")
    if not store.is_dir():
        raise BadInput(str(run_dir), "", "no such run folder")
    if not store.is_dir(EPISODES_DIR) and not is_export(store):  # an export reads as its run (docs/export.md)
        raise BadInput(str(run_dir), EPISODES_DIR, "run folder has no episodes/ (is it a gridbench run?)")
    try:
        episodes = read_episodes(run_dir)
        steps = RunSteps(run_dir, trace_dataset(run_dir, STEPS_DIR))
    except (pa.ArrowException, OSError) as e:
        raise unreadable(run_dir, EPISODES_DIR, e) from None
    if episodes.empty:
        raise BadInput(str(run_dir), EPISODES_DIR, "no finished episodes in this run")
    return episodes, steps


def mechanism_content(episodes: pd.DataFrame) -> pd.Series:
    """key-door only / switch-gate only / both / none, from the maze counts of each episode."""
    kd = (episodes["n_keys"] > 0) & (episodes["n_doors"] > 0)
    sg = (episodes["n_switches"] > 0) & (episodes["n_gates"] > 0)
    out = np.select([kd & sg, kd, sg], ["both", "key-door only", "switch-gate only"], "none")
    return pd.Series(out, index=episodes.index, dtype="object")


BANDS = tuple(name for name, _, _ in ANALYSIS_BANDS)
# past the study's last band (>=61, where its plans stop at 132 actions): gridbench's own bands, from
# where the long-horizon set's bands start, so the curve goes on over that set
# (docs/report.md#progress-past-the-studys-horizon)
HORIZON_EDGES = (61, *(lo for _, lo, _ in LONG_HORIZON_BANDS.values()))
HORIZON_BANDS = (*BANDS[:-1], *(f"{lo}-{hi - 1}" for lo, hi in zip(HORIZON_EDGES, HORIZON_EDGES[1:], strict=False)),
                 f">={HORIZON_EDGES[-1]}")


def grid_order(grid: str) -> tuple[int, int, int, str]:
    """How grids (``"<width>x<height>"``) are ordered in tables and figures: by their number of
    cells, then width, then height, as numbers: 9x6 (54) < 8x7 (56) < 8x8 < 10x10 < 14x14. A
    name that is not of that form goes last."""
    try:
        w, h = (int(v) for v in str(grid).lower().split("x"))
    except ValueError:
        return (1 << 30, 0, 0, str(grid))
    return (w * h, w, h, str(grid))


def path_band(optimal: pd.Series) -> pd.Series:
    """The study's optimal-path bands, in actions."""
    edges = [hi for _, _, hi in ANALYSIS_BANDS[:-1]]
    cut = pd.cut(optimal, bins=[-np.inf, *edges, np.inf], labels=list(BANDS))
    return cut.astype("object")


def horizon_band(optimal: pd.Series) -> pd.Series:
    """The study's bands up to 60 actions, then gridbench's longer ones."""
    edges = [hi for _, _, hi in ANALYSIS_BANDS[:-1]] + [e - 1 for e in HORIZON_EDGES[1:]]
    cut = pd.cut(optimal, bins=[-np.inf, *edges, np.inf], labels=list(HORIZON_BANDS))
    return cut.astype("object")


def study_progress(d_start: pd.Series, d_end: pd.Series, solved: pd.Series) -> pd.Series:
    """Progress as the study computes it: ``1 - d_remaining / d_start``, **not clipped**, so an
    episode that ended farther from the goal than it started scores below 0.

    A solved episode ends on the goal (remaining distance 0) and so scores 1. The study is silent
    on two cases, and gridbench keeps the trace's reading of them: an episode with no known start
    distance (or 0), or whose goal can no longer be reached (no remaining distance: ``1 - inf /
    d_start`` has no value), scores 0 unless it solved."""
    start = pd.to_numeric(d_start, errors="coerce").astype("float64")
    end = pd.to_numeric(d_end, errors="coerce").astype("float64")
    value = 1.0 - end / start.where(start > 0)
    return value.where(value.notna() | ~solved.astype(bool), 1.0).fillna(0.0)


def _arm_labels(eps: pd.DataFrame) -> pd.Series:
    runs = eps["run"].nunique() > 1
    conds = eps["condition"].nunique() > 1
    label = eps["model_name"].astype(str)
    if runs:
        label = eps["run"].astype(str) + "/" + label
    if conds:
        label = label + " [" + eps["condition"].astype(str) + "]"
    return label


def manifest_mazes(run_dirs: list[Path | str]) -> dict[str, Maze]:
    """Mazes the runs recorded in their manifests (``mazes``: checksum -> maze content)."""
    found: dict[str, Maze] = {}
    for d in run_dirs:
        for checksum, content in (manifest(d).get("mazes") or {}).items():
            try:
                found[checksum] = maze_from_dict(content, f"{open_store(d).display('manifest.json')}: mazes")
            except BadInput:
                continue
    return found


def _load_maze(maze_id: str, checksum: str | None, recorded: dict[str, Maze]) -> Maze | None:
    """The maze an episode ran on: the copy the run recorded, else the shipped sets by id.

    A maze found by id counts only when its checksum matches the one in the trace, so an edited
    or different maze of the same name never answers for the one that was run.
    """
    if checksum and checksum in recorded:
        return recorded[checksum]
    try:
        m = resolve_maze(maze_id)
    except BadInput:
        return None
    if checksum and m.checksum != checksum:
        return None
    return m


def load_runs(run_dirs: Sequence[str | Path] | str | Path, resolve_mazes: bool = True) -> Traces:
    """Read the runs' episodes, drop error episodes into ``errors`` and add derived columns."""
    if isinstance(run_dirs, (str, Path)):
        run_dirs = [run_dirs]
    dirs = [d if is_uri(d) else Path(d) for d in run_dirs]
    eps_parts, steps = [], []
    for d in dirs:
        e, s = read_run_tables(d)
        # a run folder is the unit the user named: it wins over a blank run column (the steps'
        # run column is filled the same way when they are read)
        name = open_store(d).name
        e["run"] = e["run"].fillna(name).replace("", name)
        eps_parts.append(e)
        steps.append(s)
    episodes = pd.concat(eps_parts, ignore_index=True)
    episodes["condition"] = episodes["condition"].fillna("baseline")
    dup = episodes.duplicated(["run", "episode_id"], keep="last")
    episodes = episodes[~dup]

    errors = episodes[episodes["termination"] == ERROR].reset_index(drop=True)
    ok = episodes[episodes["termination"] != ERROR].copy().reset_index(drop=True)
    ok["arm"] = _arm_labels(ok) if not ok.empty else pd.Series(dtype="object")
    ok["content"] = mechanism_content(ok)
    ok["band"] = path_band(ok["optimal_actions"])
    ok["horizon_band"] = horizon_band(ok["optimal_actions"])
    ok["grid_side"] = ok[["grid_width", "grid_height"]].max(axis=1)
    ok["solved"] = ok["solved"].fillna(False).astype(bool)
    # the trace's progress columns are clipped to [0, 1]; the report's are the study's formula
    # (``study_progress``), with the clipped reading kept beside them under its own name
    for kind in ("action", "tile"):
        ok[f"progress_{kind}_clipped"] = ok[f"progress_{kind}"]
        ok[f"progress_{kind}"] = study_progress(ok[f"d_start_{kind}"], ok[f"d_end_{kind}"], ok["solved"])
    ok["reference"] = ok["model"].fillna("").map(is_builtin).astype(bool)

    mazes: dict[str, Maze | None] = {}
    if resolve_mazes:
        recorded = manifest_mazes(dirs)
        for mid, chk in ok[["maze_id", "maze_checksum"]].drop_duplicates("maze_id").itertuples(index=False):
            mazes[mid] = _load_maze(mid, chk, recorded)
    return Traces(ok, steps, errors, dirs, mazes)


def manifest(run_dir: Path | str) -> dict:
    """The run's manifest, or {} when it has none or it cannot be read."""
    try:
        return read_manifest(run_dir) or {}
    except (OSError, ValueError):
        return {}
