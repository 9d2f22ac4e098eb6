"""``gridbench board``'s site (docs/board.md): static files that open from disk with no network.

    DIR/board.json          the board's numbers (analysis.board), beside the site
    DIR/index.html          the board: a row per arm, sealed sets apart, the paired comparisons
    DIR/diff.html           two arms side by side, maze by maze and step by step
    DIR/runs/NN/            the viewer of each public run (``gridbench view``), where the diff links
    DIR/static/             the pages' scripts and style sheet
    DIR/verdicts.json       the verdicts of every episode replayed (episodes.verify), for the next board

Each page's data is inlined as ``script_json`` inside a JSON script element (the diff's: every
public arm's episodes and steps); the pages show every value from the traces (replies,
reasoning, names) only as ``textContent``, under the viewer's content security policy. A sealed
arm has no data file, no viewer and no maze in any file.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from app.web.viewer import CSP, build_view, read_index, script_json, template
from env.files import atomic_write
from traces import STEPS_DIR, read_table

STATIC_FILES = ("board.css", "board.js", "diff.js")
DIFF_STEP_COLUMNS = ("step", "action", "x", "y", "dir", "event", "action_distance", "reply", "reasoning")
DIFF_EPISODE_COLUMNS = ("episode_id", "run", "maze_id", "maze_checksum", "repeat", "termination", "solved", "steps",
                        "progress_action")


def _plain(v: Any) -> Any:
    if hasattr(v, "item"):
        v = v.item()
    return None if isinstance(v, float) and v != v else v


def arm_steps(episodes: pd.DataFrame, run_dirs: dict[str, str], viewers: dict[str, dict[str, str]]) -> dict[str, Any]:
    """One public arm's episodes by maze checksum, each with its steps column by column and where
    the run's viewer shows it (``viewers``: per run, each episode's address in its viewer)."""
    by_maze: dict[str, list[dict[str, Any]]] = {}
    for run, eps in episodes.groupby("run", sort=True):
        ids = sorted(eps["episode_id"])
        steps = read_table(run_dirs[run], STEPS_DIR, ["episode_id", *DIFF_STEP_COLUMNS], ids=ids).to_pandas()
        steps = steps.sort_values(["episode_id", "step"])
        own = dict(tuple(steps.groupby("episode_id", sort=False)))
        for row in eps.sort_values(["maze_id", "repeat", "episode_id"])[list(DIFF_EPISODE_COLUMNS)].to_dict("records"):
            st = own.get(row["episode_id"], steps.iloc[0:0])
            by_maze.setdefault(row["maze_checksum"], []).append({
                **{k: _plain(v) for k, v in row.items()},
                "view": viewers.get(run, {}).get(row["episode_id"]),
                "trace": {c: [_plain(v) for v in st[c].tolist()] for c in DIFF_STEP_COLUMNS}})
    return by_maze


def copy_static(out: Path) -> None:
    static = out / "static"
    static.mkdir(parents=True, exist_ok=True)
    for name in STATIC_FILES:
        atomic_write(static / name, resources.files("app.web").joinpath("static", name).read_text(encoding="utf-8"))


def write_site(out: Path, payload: dict[str, Any], scored: pd.DataFrame, run_dirs: dict[str, str],
               with_viewers: bool = True) -> list[Path]:
    """Write the site of ``payload`` (``analysis.board.board``) into ``out``; ``scored``: the
    board's non-error episodes with their ``board_arm``; ``run_dirs``: each run's folder by name."""
    public_runs = sorted({r for row in payload["arms"] for r in row["runs"]})
    viewers: dict[str, dict[str, str]] = {}
    if with_viewers:
        for k, run in enumerate(public_runs):
            folder = f"runs/{k:02d}"
            build_view(run_dirs[run], out / folder)
            # the viewer opens an episode by its place in its index
            ids = read_index(run_dirs[run]).column("episode_id").to_pylist()
            viewers[run] = {eid: f"{folder}/index.html#e={i}" for i, eid in enumerate(ids)}
    diff_arms = [{"arm": row["arm"], "verified": row["verified"],
                  "mazes": arm_steps(scored[scored["board_arm"] == row["arm"]], run_dirs, viewers)}
                 for row in payload["arms"]]
    copy_static(out)
    atomic_write(out / "board.json", json.dumps(payload, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    pages = []
    for name, title, inline in (("diff.html", "gridbench board · diff", {"arms": diff_arms}),
                                ("index.html", "gridbench board", payload)):  # the board's page last
        page = template(f"board-{name}").substitute(title=html.escape(title), csp=CSP, data=script_json(inline))
        pages.append(atomic_write(out / name, page))
    return pages
