"""Read one or more runs into two tables and attach what every analysis needs.

A run is a folder written by ``gridbench run`` (docs/design.md §7): ``episodes/*.parquet`` and
``steps/*.parquet`` with the fixed schemas of ``orchestrator.schema``. Several runs are
concatenated; the ``run`` column tells them apart. Each episode gets an ``arm`` label: the
model, prefixed by the run and suffixed by the condition only when those vary, so tables and
figures of a single run read as plain model names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from agents.usage import Budget
from env.errors import BadInput
from env.generator.strata import ANALYSIS_BANDS
from env.maze import Maze, maze_from_dict
from env.sets import resolve_maze
from orchestrator.traces import read_run

# Columns of the analysis tables that are not trace columns.
GROUP = ["run", "model_name", "condition"]

# the per-step budget columns (``agents.usage.Budget``): runs written before they were recorded
# read them as null
BUDGET_COLUMNS = tuple(f.name for f in fields(Budget))


@dataclass
class Traces:
    """Episodes and steps of one or more runs, errors kept apart."""

    episodes: pd.DataFrame  # every non-error episode, with ``arm`` and derived maze columns
    steps: pd.DataFrame  # steps of those episodes, ordered by (episode_id, step), with ``arm``
    errors: pd.DataFrame  # episodes whose termination is ``error``: excluded from every metric
    run_dirs: list[Path] = field(default_factory=list)
    mazes: dict[str, Maze | None] = field(default_factory=dict)  # maze_id -> maze, None if unknown

    @property
    def arms(self) -> list[str]:
        return list(dict.fromkeys(self.episodes.sort_values(["run", "model_name", "condition"])["arm"]))


def read_run_tables(run_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The raw episodes and steps tables of one run folder (``orchestrator.traces.read_run``)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise BadInput(str(run_dir), "", "no such run folder")
    if not (run_dir / "episodes").is_dir():
        raise BadInput(str(run_dir), "episodes", "run folder has no episodes/ (is it a gridbench run?)")
    try:
        episodes, steps = read_run(run_dir)
    except (pa.ArrowException, OSError) as e:  # a damaged file is one line, never a traceback
        raise BadInput(str(run_dir), "episodes", f"unreadable trace files ({str(e).splitlines()[0][:200]})") from None
    if episodes.empty:
        raise BadInput(str(run_dir), "episodes", "no finished episodes in this run")
    return episodes, steps


def mechanism_content(episodes: pd.DataFrame) -> pd.Series:
    """key-door only / switch-gate only / both / none, from the maze counts of each episode."""
    kd = (episodes["n_keys"] > 0) & (episodes["n_doors"] > 0)
    sg = (episodes["n_switches"] > 0) & (episodes["n_gates"] > 0)
    out = np.select([kd & sg, kd, sg], ["both", "key-door only", "switch-gate only"], "none")
    return pd.Series(out, index=episodes.index, dtype="object")


BANDS = tuple(name for name, _, _ in ANALYSIS_BANDS)


def path_band(optimal: pd.Series) -> pd.Series:
    """The study's optimal-path bands, in actions."""
    edges = [hi for _, _, hi in ANALYSIS_BANDS[:-1]]
    cut = pd.cut(optimal, bins=[-np.inf, *edges, np.inf], labels=list(BANDS))
    return cut.astype("object")


def _arm_labels(eps: pd.DataFrame) -> pd.Series:
    runs = eps["run"].nunique() > 1
    conds = eps["condition"].nunique() > 1
    label = eps["model_name"].astype(str)
    if runs:
        label = eps["run"].astype(str) + "/" + label
    if conds:
        label = label + " [" + eps["condition"].astype(str) + "]"
    return label


def manifest_mazes(run_dirs: list[Path]) -> dict[str, Maze]:
    """Mazes the runs recorded in their manifests (``mazes``: checksum -> maze content)."""
    found: dict[str, Maze] = {}
    for d in run_dirs:
        for checksum, content in (manifest(d).get("mazes") or {}).items():
            try:
                found[checksum] = maze_from_dict(content, f"{d / 'manifest.json'}: mazes")
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


def load_runs(run_dirs: list[str | Path] | str | Path, resolve_mazes: bool = True) -> Traces:
    """Read runs, drop error episodes into ``errors``, add derived columns, order the steps."""
    if isinstance(run_dirs, (str, Path)):
        run_dirs = [run_dirs]
    dirs = [Path(d) for d in run_dirs]
    eps_parts, step_parts = [], []
    for d in dirs:
        e, s = read_run_tables(d)
        # a run folder is the unit the user named: it wins over a blank run column
        e["run"] = e["run"].fillna(d.name).replace("", d.name)
        s["run"] = s["run"].fillna(d.name).replace("", d.name)
        eps_parts.append(e)
        step_parts.append(s)
    episodes = pd.concat(eps_parts, ignore_index=True)
    steps = pd.concat(step_parts, ignore_index=True)
    episodes["condition"] = episodes["condition"].fillna("baseline")
    dup = episodes.duplicated(["run", "episode_id"], keep="last")
    episodes = episodes[~dup]

    errors = episodes[episodes["termination"] == "error"].reset_index(drop=True)
    ok = episodes[episodes["termination"] != "error"].copy().reset_index(drop=True)
    ok["arm"] = _arm_labels(ok) if not ok.empty else pd.Series(dtype="object")
    ok["content"] = mechanism_content(ok)
    ok["band"] = path_band(ok["optimal_actions"])
    ok["grid_side"] = ok[["grid_width", "grid_height"]].max(axis=1)
    ok["solved"] = ok["solved"].fillna(False).astype(bool)

    keep = ok[["run", "episode_id", "arm"]]
    steps = steps.drop(columns=[c for c in ("arm",) if c in steps]).merge(keep, on=["run", "episode_id"])
    steps = steps.sort_values(["run", "episode_id", "step"]).reset_index(drop=True)

    mazes: dict[str, Maze | None] = {}
    if resolve_mazes:
        recorded = manifest_mazes(dirs)
        for mid, chk in ok[["maze_id", "maze_checksum"]].drop_duplicates("maze_id").itertuples(index=False):
            mazes[mid] = _load_maze(mid, chk, recorded)
    return Traces(ok, steps, errors, dirs, mazes)


def manifest(run_dir: Path) -> dict:
    p = Path(run_dir) / "manifest.json"
    if not p.is_file():
        return {}
    try:
        return json.loads(p.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
