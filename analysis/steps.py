"""Per-step derived columns that the failure, regret and compute analyses share.

Added to each step (steps ordered within an episode):

- ``d_before``: action distance before the step (the episode's ``d_start_action`` for step 1);
  ``delta = d_after - d_before``. An unreachable goal (null distance) counts as infinitely far.
- ``outcome``: ``progress`` (delta < 0), ``neutral`` (delta == 0, including staying unreachable)
  or ``wasted`` (delta > 0, including making the goal unreachable): the per-step oracle regret.
- ``moved``: the step changed the cell (events ``moved`` and ``goal``).
- ``state_change``: what the step changed: ``changed`` (the position, the carried key or a
  mechanism: events moved, goal, pickup, swap, door_*, switch_*), ``facing`` (only the
  direction: a turn) or ``none`` (nothing at all: a bump, or a no-op pickup, toggle, done or
  invalid reply).
- ``unseen``: it moved onto a cell the episode had never stood on (the start cell counts as seen).
- ``revisit``: it moved onto a cell stood on before.
- ``turn``: a left/right action.
- ``quarter``: 1..4, which quarter of the episode's steps it falls in.
- ``wall_bump``: a ``bump`` whose front cell is a wall (needs the maze; null when unknown);
  ``bump`` counts every blocked forward (walls, keys, closed doors, closed gates).
- ``on_live_switch``: it ends on a switch that controls at least one gate (needs the maze).

The start cell is inferred from the first step, not the maze: a ``forward`` that moved came
from the cell behind the agent, anything else left the agent where it was.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis.load import Traces
from env.maze import DIR_VECTORS

MOVE_EVENTS = ("moved", "goal")
FACING_EVENTS = ("turned",)
NOTHING_EVENTS = ("bump", "noop")


def _as_distance(s: pd.Series) -> np.ndarray:
    return s.astype("float64").fillna(np.inf).to_numpy()


def annotate(traces: Traces) -> pd.DataFrame:
    st = traces.steps.copy()
    if st.empty:
        for c in ("d_before", "delta", "outcome", "moved", "state_change", "unseen", "revisit", "turn",
                  "quarter", "bump", "wall_bump", "on_live_switch", "n_steps"):
            st[c] = pd.Series(dtype="object")
        return st
    eps = traces.episodes.set_index(["run", "episode_id"])
    st = st.sort_values(["run", "episode_id", "step"]).reset_index(drop=True)
    key = [st["run"], st["episode_id"]]
    first = ~st.duplicated(["run", "episode_id"])

    d_after = _as_distance(st["action_distance"])
    d_start = _as_distance(eps.loc[list(zip(st["run"], st["episode_id"], strict=True)), "d_start_action"]
                           .reset_index(drop=True))
    d_before = np.where(first, d_start, np.roll(d_after, 1))
    with np.errstate(invalid="ignore"):
        delta = d_after - d_before  # inf - inf is nan: stayed unreachable, a neutral step
    st["d_before"] = np.where(np.isinf(d_before), np.nan, d_before)
    st["delta"] = delta
    st["outcome"] = np.select([delta < 0, delta > 0], ["progress", "wasted"], "neutral")

    st["moved"] = st["event"].isin(MOVE_EVENTS)
    st["state_change"] = np.select([st["event"].isin(FACING_EVENTS), st["event"].isin(NOTHING_EVENTS)],
                                   ["facing", "none"], "changed")
    st["turn"] = st["action"].isin(["left", "right"])
    st["bump"] = st["event"] == "bump"
    n = st.groupby(key)["step"].transform("size").to_numpy()
    rank = st.groupby(key).cumcount().to_numpy()
    st["n_steps"] = n
    st["quarter"] = np.minimum(4 * rank // n + 1, 4)

    unseen = np.zeros(len(st), dtype=bool)
    revisit = np.zeros(len(st), dtype=bool)
    xs, ys, ds = st["x"].to_numpy(), st["y"].to_numpy(), st["dir"].to_numpy()
    moved = st["moved"].to_numpy()
    seen: set[tuple[int, int]] = set()
    for i in range(len(st)):
        pos = (int(xs[i]), int(ys[i]))
        if first[i]:
            if moved[i]:
                dx, dy = DIR_VECTORS[int(ds[i])]
                seen = {(pos[0] - dx, pos[1] - dy)}
            else:
                seen = {pos}
        if moved[i]:
            if pos in seen:
                revisit[i] = True
            else:
                unseen[i] = True
                seen.add(pos)
    st["unseen"] = unseen
    st["revisit"] = revisit

    wall = np.full(len(st), np.nan)
    live = np.full(len(st), np.nan)
    for mid, idx in st.groupby("maze_id").groups.items():
        maze = traces.mazes.get(mid)
        if maze is None:
            continue
        idx = np.asarray(list(idx))
        live_cells = {tuple(s.pos) for s in maze.switches if s.controls}
        live[idx] = [float((int(xs[i]), int(ys[i])) in live_cells) for i in idx]
        fx = xs[idx] + np.array([DIR_VECTORS[int(d)][0] for d in ds[idx]])
        fy = ys[idx] + np.array([DIR_VECTORS[int(d)][1] for d in ds[idx]])
        inside = (fx >= 0) & (fx < maze.width) & (fy >= 0) & (fy < maze.height)
        is_wall = np.ones(len(idx), dtype=bool)
        is_wall[inside] = maze.walls[fx[inside], fy[inside]]
        wall[idx] = (st["bump"].to_numpy()[idx] & is_wall).astype(float)
    st["wall_bump"] = wall
    st["on_live_switch"] = live
    return st
