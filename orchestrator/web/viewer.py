"""``gridbench view``: a static HTML bundle of a run's traces.

The bundle is plain files that work from ``file://`` (no server, no network, no build step)::

    view/index.html                          every episode, with filters
    view/episodes/<episode id>.html          one page per episode
    view/frames/<maze>-<tile>/<state>.png    each distinct state, drawn once for the whole bundle
    view/static/                             the shared scripts and style sheet

Frames are re-rendered by replaying the recorded actions on the maze stored in the run's
manifest, with the episode's own tile size, so they are the frames the model was shown. Each page carries its data as a JSON block that the page script reads; model
output is only ever put on screen with ``textContent``, and the JSON is escaped so that no
reply can close the block.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from agents.prompt import activity_summary
from agents.types import PastStep
from env import (
    ACTIONS,
    BadInput,
    Maze,
    MazeState,
    initial_state,
    maze_from_dict,
    png_bytes,
    render_state,
    step,
)
from env.oracle import solve
from orchestrator.store import open_store
from orchestrator.traces import EPISODES_DIR, MANIFEST, STEPS_DIR, read_manifest, trace_dataset

# the columns of the index table, in display order
INDEX_COLUMNS = (
    "model_name", "model", "condition", "maze_id", "repeat", "grid", "category", "termination",
    "solved", "steps", "optimal_actions", "progress_action", "closest_action", "invalid_outputs",
    "tokens_out", "cost_usd",
)
STEP_COLUMNS = (
    "step", "action", "parse", "reply", "reasoning", "event", "x", "y", "dir", "carrying",
    "action_distance", "tile_distance", "tokens_in", "tokens_out", "tokens_reasoning", "latency_s",
    "finish_reason", "retries", "reasks",
)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass
class ViewSummary:
    out_dir: Path
    episodes: int
    frames_drawn: int
    without_frames: list[str] = field(default_factory=list)  # episodes whose maze is not in the manifest


# ---- reading a run ----------------------------------------------------------------------------
def _plain(v: Any) -> Any:
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, float) and v != v:  # NaN is not JSON
        return None
    return v


def _rows(run_dir: str | Path, table: str, columns: list[str] | None = None) -> list[dict[str, Any]]:
    return trace_dataset(run_dir, table).to_table(columns=columns).to_pylist()


def read_run_rows(run_dir: str | Path) -> tuple[list[dict[str, Any]], dict[str, list[dict[str, Any]]]]:
    """Episode rows (sorted for the index) and, per episode id, its step rows in step order."""
    if not open_store(run_dir, "RUN_DIR").is_dir():
        raise BadInput(str(run_dir), "", "no such run folder")
    episodes = _rows(run_dir, EPISODES_DIR)
    if not episodes:
        raise BadInput(str(run_dir), EPISODES_DIR, "the run holds no finished episodes")
    steps: dict[str, list[dict[str, Any]]] = {}
    for row in _rows(run_dir, STEPS_DIR, ["episode_id", *STEP_COLUMNS]):
        steps.setdefault(row["episode_id"], []).append(row)
    for rows in steps.values():
        rows.sort(key=lambda r: r["step"])
    episodes.sort(key=lambda e: (e["model_name"] or "", e["condition"] or "", e["maze_id"] or "",
                                 e["repeat"] or 0, e["episode_id"]))
    return [{k: _plain(v) for k, v in e.items()} for e in episodes], steps


# ---- one episode --------------------------------------------------------------------------------
def _path_cells(maze: Maze, plan: list[int]) -> list[list[int]]:
    """The cells an action plan walks through, from the start."""
    s = initial_state(maze)
    cells = [list(s.pos)]
    for a in plan:
        s, _ = step(maze, s, a)
        if list(s.pos) != cells[-1]:
            cells.append(list(s.pos))
    return cells


def page_name(episode_id: str, taken: set[str]) -> str:
    """A file name for an episode page: the id, with anything unsafe for a path replaced."""
    base = _UNSAFE.sub("_", episode_id)[:80] or "episode"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base}-{n}"
    taken.add(name)
    return name


def _protocol(episode: dict[str, Any]) -> dict[str, Any]:
    try:
        p = json.loads(episode.get("protocol") or "{}")
    except ValueError:
        return {}
    return p if isinstance(p, dict) else {}


def _state_name(state: MazeState) -> str:
    return hashlib.sha1(repr(state).encode()).hexdigest()[:16]


def episode_data(episode: dict[str, Any], steps: list[dict[str, Any]], maze: Maze | None,
                 optimal_path: list[list[int]], frames_dir: Path, frames_href: str) -> tuple[dict[str, Any], int]:
    """The JSON an episode page shows, drawing its missing frames into ``frames_dir``.

    Frames are shared by every episode of the bundle: a file is named by the maze checksum, the
    tile size and the state, so a state that any episode reached is drawn once. Returns the
    data and the number of frames drawn.
    """
    protocol = _protocol(episode)
    data: dict[str, Any] = {
        "episode": episode,
        "protocol": protocol,
        "steps": [{k: _plain(r[k]) for k in STEP_COLUMNS} for r in steps],
        "width": episode.get("grid_width"),
        "height": episode.get("grid_height"),
        "frames": None, "summaries": None, "summary_of_step": None, "heat": [], "path": optimal_path,
        "start": None, "mismatch": None,
    }
    visits = Counter((r["x"], r["y"]) for r in steps if r["x"] is not None)
    drawn = 0
    if maze is not None:
        states, history, data["mismatch"] = replay_states(maze, steps)
        start = states[0]
        data["start"] = {"x": start.pos[0], "y": start.pos[1], "dir": start.dir}
        visits[start.pos] += 1
        tile = int(protocol.get("tile_size") or 32)
        folder = f"{maze.checksum[:16]}-{tile}"
        (frames_dir / folder).mkdir(parents=True, exist_ok=True)
        frames = []
        for s in states:
            name = f"{folder}/{_state_name(s)}.png"
            path = frames_dir / name
            if not path.exists():
                tmp = path.with_name(f".{path.name}.tmp")
                tmp.write_bytes(png_bytes(render_state(maze, s, tile)))
                tmp.replace(path)
                drawn += 1
            frames.append(f"{frames_href}/{name}")
        data["frames"] = frames
        # the turn of step i was built from the steps before it: that is the summary it showed
        summaries: list[str] = []
        of_step: list[int] = []
        for i in range(len(steps)):
            text = activity_summary(maze, history[:i])
            if not summaries or summaries[-1] != text:
                summaries.append(text)
            of_step.append(len(summaries) - 1)
        data["summaries"], data["summary_of_step"] = summaries, of_step
    data["heat"] = [[x, y, n] for (x, y), n in sorted(visits.items())]
    return data, drawn


class RunMazes:
    """The mazes of a run, from its manifest (stored there by checksum), each loaded and solved once."""

    def __init__(self, run_dir: str | Path):
        manifest = read_manifest(run_dir) or {}
        self._source = open_store(run_dir).display(MANIFEST)
        self._data: dict[str, Any] = manifest.get("mazes") or {}
        self._mazes: dict[str, Maze | None] = {}
        self._paths: dict[str, list[list[int]]] = {}

    def get(self, checksum: str | None) -> Maze | None:
        if checksum not in self._mazes:
            data = self._data.get(checksum) if checksum else None
            try:
                self._mazes[checksum] = maze_from_dict(data, self._source) if data is not None else None
            except BadInput:
                self._mazes[checksum] = None
        return self._mazes[checksum]

    def optimal_path(self, maze: Maze) -> list[list[int]]:
        if maze.checksum not in self._paths:
            sol = solve(maze)
            self._paths[maze.checksum] = _path_cells(maze, sol.plan) if sol.status == "solved" else []
        return self._paths[maze.checksum]


def replay_states(maze: Maze, steps: list[dict[str, Any]]) -> tuple[list[MazeState], list[PastStep], str | None]:
    """The start state and the state after each recorded step, and the first disagreement, if any.

    Only what the page draws is checked here; ``gridbench replay --verify`` checks every column.
    """
    s = initial_state(maze)
    states, history, mismatch = [s], [], None
    for row in steps:
        action = ACTIONS.index(row["action"]) if row["action"] in ACTIONS else None
        before = s
        s, event = step(maze, s, action) if action is not None else (s, "noop")
        states.append(s)
        history.append(PastStep(row["step"], action, event, before, s))
        recorded, replayed = (row["x"], row["y"], row["dir"], row["event"]), (*s.pos, s.dir, event)
        if mismatch is None and recorded != replayed:
            mismatch = f"step {row['step']}: recorded (x, y, dir, event) {recorded}, replayed {replayed}"
    return states, history, mismatch


# ---- pages ------------------------------------------------------------------------------------------
def script_json(obj: Any) -> str:
    """JSON safe inside ``<script type="application/json">``: no reply can close the element."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


def template(name: str) -> Template:
    return Template(resources.files("orchestrator.web").joinpath("templates", name).read_text())


def copy_static(out_dir: Path) -> None:
    static = out_dir / "static"
    static.mkdir(parents=True, exist_ok=True)
    for entry in resources.files("orchestrator.web").joinpath("static").iterdir():
        if entry.is_file():
            (static / entry.name).write_bytes(entry.read_bytes())


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def build_view(run_dir: str | Path, out_dir: str | Path | None = None, progress: bool = True) -> ViewSummary:
    """Write the static viewer of ``run_dir`` (a folder or a URI) into the local ``out_dir``
    (default ``run_dir/view``; for a run in object storage, a local folder that
    ``gridbench view`` uploads to ``RUN/view``)."""
    store = open_store(run_dir, "RUN_DIR")
    view = store.child("view")
    out_dir = Path(out_dir) if out_dir is not None else view.local_dir()
    episodes, steps = read_run_rows(run_dir)  # bad input fails here, before anything is written
    run_name = episodes[0].get("run") or store.name
    mazes = RunMazes(run_dir)
    (out_dir / "episodes").mkdir(parents=True, exist_ok=True)
    (out_dir / "frames").mkdir(parents=True, exist_ok=True)
    copy_static(out_dir)
    page = template("episode.html")
    taken: set[str] = set()
    names = [page_name(e["episode_id"], taken) for e in episodes]
    summary = ViewSummary(out_dir, len(episodes), 0)
    index_rows = []
    columns = [TextColumn("view"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn()]
    with Progress(*columns, disable=not progress, transient=True) as bar:
        task = bar.add_task("episodes", total=len(episodes))
        for i, (ep, name) in enumerate(zip(episodes, names, strict=True)):
            maze = mazes.get(ep.get("maze_checksum"))
            if maze is None and ep["steps"]:
                summary.without_frames.append(ep["episode_id"])
            data, drawn = episode_data(ep, steps.get(ep["episode_id"], []), maze,
                                       mazes.optimal_path(maze) if maze is not None else [],
                                       out_dir / "frames", "../frames")
            summary.frames_drawn += drawn
            data["prev"] = f"{names[i - 1]}.html" if i > 0 else None
            data["next"] = f"{names[i + 1]}.html" if i + 1 < len(names) else None
            title = f"{ep.get('model_name') or ep.get('model')} · {ep['maze_id']} · {ep.get('condition')}"
            _write(out_dir / "episodes" / f"{name}.html", page.substitute(
                title=html.escape(title), data=script_json(data), static="../static"))
            index_rows.append({**{k: ep.get(k) for k in INDEX_COLUMNS}, "href": f"episodes/{name}.html"})
            bar.advance(task)
    write_index(out_dir, run_name, index_rows)  # the index last: a bundle with an index is complete
    return summary


def write_index(out_dir: Path, run_name: str, rows: list[dict[str, Any]]) -> Path:
    """The index page: ``rows`` hold the ``INDEX_COLUMNS`` of each episode and its page's ``href``."""
    path = out_dir / "index.html"
    _write(path, template("index.html").substitute(
        title=html.escape(f"gridbench · {run_name}"),
        data=script_json({"run": run_name, "columns": list(INDEX_COLUMNS), "episodes": rows}),
        static="static"))
    return path
