"""Re-execute a recorded episode and check that the trace reproduces (``gridbench replay``).

Replay steps the reference dynamics (``env.state.step``), not ``MazeEnv`` that recorded the
episode, so a passing replay also holds the two implementations to each other. Every step's
outcome columns are built and checked by ``episodes.step_row``, the code the loop built them
with, under the termination rules of the episode's own recorded protocol; the ending is checked
against those rules too. The maze comes from the run's manifest (mazes are stored there by
checksum), so a replay needs no maze files.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from agents.protocol import Protocol, resolve_protocol
from env import Maze, maze_from_dict
from env.errors import BadInput
from env.files import atomic_path
from env.oracle import DistanceTable, distance_table, tile_distance
from env.render import frame
from env.state import ACTIONS, MazeState, initial_state, step
from episodes.step_row import Mismatch, StepRows, plain, progress
from episodes.termination import RULE_ENDINGS
from traces import EPISODES_DIR, ERROR, MANIFEST, open_store, read_episode, read_manifest

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class ReplayResult:
    episode: dict[str, Any]
    maze: Maze
    protocol: Protocol  # the episode's own, from its protocol column
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
        return [frame(self.maze, s, tile_size, self.protocol.switch_frames, self.protocol.render) for s in self.states]


def load_run_maze(run_dir: str | os.PathLike, episode: dict[str, Any]) -> Maze:
    manifest = read_manifest(run_dir)
    source = open_store(run_dir, "RUN_DIR").display(MANIFEST)
    if manifest is None:
        raise BadInput(str(run_dir), "manifest.json", "missing: not a gridbench run folder")
    data = manifest.get("mazes", {}).get(episode["maze_checksum"])
    if data is None:
        raise BadInput(source, "mazes", f"holds no maze with checksum {episode['maze_checksum'][:12]}…")
    return maze_from_dict(data, source)


def recorded_protocol(run_dir: str | os.PathLike, episode: dict[str, Any]) -> Protocol:
    """The protocol ``episode`` was played under, rebuilt from its ``protocol`` column."""
    source = f"{open_store(run_dir, 'RUN_DIR').display(EPISODES_DIR)} (episode {episode['episode_id']}) protocol"
    try:
        fields = json.loads(episode.get("protocol") or "")
    except ValueError:
        raise BadInput(source, "", "is not JSON") from None
    return resolve_protocol(fields, source)


def replay(run_dir: str | os.PathLike, episode_id: str, verify: bool = True) -> ReplayResult:
    """Re-execute ``episode_id``'s recorded actions; with ``verify`` compare every step and the ending."""
    try:
        episode, steps = read_episode(run_dir, episode_id)
    except FileNotFoundError:
        raise BadInput(str(run_dir), "episode", f"no episode {episode_id!r} in this run") from None
    return replay_episode(episode, steps, load_run_maze(run_dir, episode), recorded_protocol(run_dir, episode), verify)


def replay_episode(episode: dict[str, Any], steps: pd.DataFrame, maze: Maze, protocol: Protocol,
                   verify: bool = True) -> ReplayResult:
    """``replay`` of an episode already read: its row, its steps in step order, its maze and its
    recorded protocol (``gridbench board`` reads many episodes at once, ``episodes.verify``)."""
    # the episode's own rules (an unsolvable maze's episode ended before a step: nothing to judge),
    # its distances with a DROP edge when it offered DROP
    table = distance_table(maze, drop=protocol.drop)
    start = initial_state(maze)
    optimal = table.action_distance(start) or 0
    rows = StepRows(maze, protocol, table, start, optimal)
    closest = optimal
    states, actions, mismatches = [start], [], []
    ended_early = None  # the step at which the rules ended the episode before its last step
    for rec in steps.to_dict("records"):
        action = plain(rec["action"])
        outcome = rows.take(None if action is None else ACTIONS.index(action),
                            lambda a: step(maze, rows.state, a))
        states.append(rows.state)
        actions.append(action)
        if outcome.action_distance is not None:
            closest = min(closest, outcome.action_distance)
        if not verify:
            continue
        mismatch = outcome.check(int(rec["step"]), rec)
        if mismatch is not None:
            mismatches.append(mismatch)
        if rows.termination.reason is not None and ended_early is None and rows.taken < len(steps):
            ended_early = Mismatch(rows.taken, "termination", "went on", rows.termination.reason)
    if verify:
        recorded, replayed = episode["termination"], rows.termination.reason
        if ended_early is not None:
            mismatches.append(ended_early)
        elif (recorded in RULE_ENDINGS or replayed is not None) and recorded != replayed:
            mismatches.append(Mismatch(len(steps), "termination", recorded,
                                       replayed or "no ending by the termination rules"))
        if recorded != ERROR:
            mismatches.extend(row_mismatches(episode, maze, table, start, rows.state, actions, closest))
    return ReplayResult(episode=episode, maze=maze, protocol=protocol, states=states, actions=actions,
                        mismatches=mismatches)


def row_mismatches(episode: dict[str, Any], maze: Maze, table: DistanceTable, start: MazeState, end: MazeState,
                   actions: list[str | None], closest: int) -> list[Mismatch]:
    """The episode row's outcome columns against the replayed play, at the step after the last: the
    columns every score is computed from, so a row rewritten over steps that reproduce does not pass.
    A null is not judged (a run written before the column existed)."""
    solved = episode["termination"] == "solved"
    d_start, d_end = table.action_distance(start), table.action_distance(end)
    d_start_tile, d_end_tile = tile_distance(maze, start.pos), tile_distance(maze, end.pos)
    replayed = {"steps": len(actions), "solved": solved, "optimal_actions": d_start, "d_start_action": d_start,
                "d_end_action": d_end, "d_start_tile": d_start_tile, "d_end_tile": d_end_tile, "closest_action": closest,
                "invalid_outputs": sum(a is None for a in actions),
                "progress_action": progress(d_start, d_end, solved), "progress_tile": progress(d_start_tile, d_end_tile, solved)}
    out = []
    for column, value in replayed.items():
        recorded = plain(episode.get(column))
        if recorded is None:
            continue
        if not (math.isclose(recorded, value) if isinstance(value, float) else recorded == value):
            out.append(Mismatch(len(actions), column, recorded, value))
    return out


def write_gif(result: ReplayResult, out: str | os.PathLike, tile_size: int = 32, fps: float = 4.0) -> Path:
    """Animate the replayed states (written atomically: ``env.files``)."""
    import imageio.v3 as iio

    out = Path(out)
    frames = result.frames(tile_size)
    with atomic_path(out) as tmp:
        iio.imwrite(tmp, np.stack(frames), extension=".gif", duration=1000 / fps, loop=0)
    return out
