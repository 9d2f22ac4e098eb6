"""Re-execute a recorded episode and check that the trace reproduces (``gridbench replay``).

Replay steps the reference dynamics (``env.state.step``), not ``MazeEnv`` that recorded the
episode, so a passing replay also holds the two implementations to each other. The maze comes
from the run's manifest (mazes are stored there by checksum), so a replay needs no maze files.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from env import Maze, maze_from_dict
from env.errors import BadInput
from env.files import atomic_path
from env.oracle import distance_table, tile_distance
from env.render import MINIGRID, RenderSettings, frame
from env.state import ACTIONS, MazeState, initial_state, step
from episodes.termination import gridbench_signature, study_signature
from traces import MANIFEST, mechanisms_json, open_store, read_episode, read_manifest

# Checked per step, in this order; the first mismatch of each step is reported.
CHECKED = ("event", "x", "y", "dir", "carrying", "mechanisms", "novel", "action_distance", "tile_distance")


@dataclass
class Mismatch:
    step: int
    column: str
    recorded: Any
    replayed: Any

    def __str__(self) -> str:
        return f"step {self.step}: {self.column} recorded {self.recorded!r}, replayed {self.replayed!r}"


@dataclass
class ReplayResult:
    episode: dict[str, Any]
    maze: Maze
    states: list[MazeState]  # the start state, then the state after each step
    actions: list[str | None]
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def frames(self, tile_size: int = 32) -> list[np.ndarray]:
        """The frame of every state, start first (what ``--gif`` animates), drawn as the episode's
        protocol drew them: its switches, and its own camera when it was shown 3D frames (then
        ``tile_size`` is unused: the frames are the episode's size)."""
        try:
            recorded = json.loads(self.episode.get("protocol") or "{}")
            switch_frames = recorded.get("switch_frames", "distinct")
            render = RenderSettings(**recorded["render"]) if recorded.get("render") else MINIGRID
        except (ValueError, AttributeError, TypeError):
            switch_frames, render = "distinct", MINIGRID
        return [frame(self.maze, s, tile_size, switch_frames, render) for s in self.states]


def load_run_maze(run_dir: str | os.PathLike, episode: dict[str, Any]) -> Maze:
    manifest = read_manifest(run_dir)
    source = open_store(run_dir, "RUN_DIR").display(MANIFEST)
    if manifest is None:
        raise BadInput(str(run_dir), "manifest.json", "missing: not a gridbench run folder")
    data = manifest.get("mazes", {}).get(episode["maze_checksum"])
    if data is None:
        raise BadInput(source, "mazes", f"holds no maze with checksum {episode['maze_checksum'][:12]}…")
    return maze_from_dict(data, source)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and math.isnan(a):
        a = None
    return a == b


def replay(run_dir: str | os.PathLike, episode_id: str, verify: bool = True) -> ReplayResult:
    """Re-execute ``episode_id``'s recorded actions; with ``verify`` compare every step."""
    try:
        episode, steps = read_episode(run_dir, episode_id)
    except FileNotFoundError:
        raise BadInput(str(run_dir), "episode", f"no episode {episode_id!r} in this run") from None
    maze = load_run_maze(run_dir, episode)
    drop = _recorded(episode).get("actions") == "with_drop"  # DROP offered: distances with its edge
    table = distance_table(maze, drop=drop)
    state = initial_state(maze)
    # novelty as the episode's style judged it: the study's watchdog signature, or the whole state
    signature = study_signature(maze, drop) if _style(episode) == "study" else gridbench_signature
    seen = {signature(state)}
    states, actions, mismatches = [state], [], []
    for rec in steps.to_dict("records"):
        action = rec["action"]
        if action is None or (isinstance(action, float) and math.isnan(action)):
            action, event = None, "noop"
        else:
            state, event = step(maze, state, ACTIONS.index(action))
        key = signature(state)
        novel = key not in seen
        seen.add(key)
        states.append(state)
        actions.append(action)
        if not verify:
            continue
        replayed = {
            "event": event, "x": state.pos[0], "y": state.pos[1], "dir": state.dir,
            "carrying": maze.keys[state.carrying].id if state.carrying >= 0 else None,
            "mechanisms": mechanisms_json(maze, state), "novel": novel,
            "action_distance": table.action_distance(state), "tile_distance": tile_distance(maze, state.pos),
        }
        for column in CHECKED:
            if not _same(_plain(rec[column]), replayed[column]):
                mismatches.append(Mismatch(int(rec["step"]), column, _plain(rec[column]), replayed[column]))
                break
    if verify and episode["termination"] == "solved" and (not states or states[-1].pos != tuple(maze.goal)):
        mismatches.append(Mismatch(len(steps), "termination", "solved", "not at the goal"))
    return ReplayResult(episode=episode, maze=maze, states=states, actions=actions, mismatches=mismatches)


def _recorded(episode: dict[str, Any]) -> dict[str, Any]:
    """The episode's recorded protocol fields ({} when unreadable)."""
    try:
        fields = json.loads(episode.get("protocol") or "{}")
    except ValueError:
        return {}
    return fields if isinstance(fields, dict) else {}


def _style(episode: dict[str, Any]) -> str:
    return str(_recorded(episode).get("style", "gridbench"))


def _plain(v: Any) -> Any:
    """numpy/pandas scalars from a DataFrame row as plain Python values (NA as None)."""
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    if hasattr(v, "item"):
        return v.item()
    try:
        import pandas as pd

        if v is pd.NA:
            return None
    except ImportError:  # pragma: no cover
        pass
    return v


def write_gif(result: ReplayResult, out: str | os.PathLike, tile_size: int = 32, fps: float = 4.0) -> Path:
    """Animate the replayed states (written atomically: ``env.files``)."""
    import imageio.v3 as iio

    out = Path(out)
    frames = result.frames(tile_size)
    with atomic_path(out) as tmp:
        iio.imwrite(tmp, np.stack(frames), extension=".gif", duration=1000 / fps, loop=0)
    return out
