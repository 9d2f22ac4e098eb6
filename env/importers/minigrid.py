"""Native Minigrid environments as gridbench mazes.

The env is built with ``gymnasium.make`` and reset with the seed; its grid is read cell by cell:
walls, the goal, keys, doors (locked / closed / open) and the agent's start cell and facing.
Anything gridbench has no counterpart for (lava, balls, boxes, a second goal) is bad input.
"""

from __future__ import annotations

import re
from typing import Any

from env.errors import BadInput
from env.maze import DIRECTIONS, FORMAT, Maze, maze_from_dict
from env.names import MAX_NAME, name_chars

_SPEC = re.compile(r"^(?P<env_id>[A-Za-z0-9_./-]+?)(?:@(?P<seed>\d+))?$")


def parse_spec(text: str) -> tuple[str, int]:
    m = _SPEC.match(text)
    if not m:
        raise BadInput(f"minigrid:{text}", "", "write minigrid:<EnvId>[@seed], e.g. minigrid:MiniGrid-DoorKey-8x8-v0@3")
    return m["env_id"], int(m["seed"] or 0)


def maze_id_for(env_id: str, seed: int) -> str:
    return name_chars(f"{env_id}-s{seed}")[-MAX_NAME:].lstrip("-_.")


def native_env(env_id: str, max_steps: int | None = None):
    """``gymnasium.make(env_id)`` for a registered Minigrid env; BadInput if there is none."""
    import gymnasium as gym
    import minigrid  # noqa: F401  (registers the MiniGrid-* ids)

    spec = f"minigrid:{env_id}"
    if env_id not in gym.registry:
        raise BadInput(spec, "EnvId", f"{env_id!r} is not a registered Gymnasium environment")
    kwargs: dict[str, Any] = {} if max_steps is None else {"max_steps": max_steps}
    e = gym.make(env_id, **kwargs)
    from minigrid.minigrid_env import MiniGridEnv

    if not isinstance(e.unwrapped, MiniGridEnv):
        e.close()
        raise BadInput(spec, "EnvId", f"{env_id!r} is not a Minigrid environment")
    return e


def import_minigrid(text: str) -> Maze:
    """The maze of ``<EnvId>[@seed]`` at its reset state (seed 0 when none is given)."""
    env_id, seed = parse_spec(text)
    spec = f"minigrid:{env_id}@{seed}"
    e = native_env(env_id)
    try:
        e.reset(seed=seed)
        u = e.unwrapped
        doc = _convert(u, spec, maze_id_for(env_id, seed))
    finally:
        e.close()
    return maze_from_dict(doc, spec)


def _wall_off_unreachable(rows: list[str], start: tuple[int, int]) -> list[str]:
    """Empty cells the agent can never enter (outside MultiRoom's rooms) become wall."""
    seen = {start}
    todo = [start]
    while todo:
        x, y = todo.pop()
        for n in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if n not in seen and 0 <= n[1] < len(rows) and 0 <= n[0] < len(rows[0]) and rows[n[1]][n[0]] == ".":
                seen.add(n)
                todo.append(n)
    return ["".join("." if (x, y) in seen else "#" for x in range(len(r))) for y, r in enumerate(rows)]


def _convert(u, spec: str, maze_id: str) -> dict:
    rows = []
    goal = None
    keys: list[dict[str, Any]] = []
    doors: list[dict[str, Any]] = []
    for y in range(u.height):
        row = []
        for x in range(u.width):
            obj = u.grid.get(x, y)
            kind = obj.type if obj is not None else "empty"
            row.append("#" if kind == "wall" else ".")
            if kind in ("empty", "wall", "floor"):
                continue
            if kind == "goal":
                if goal is not None:
                    raise BadInput(spec, "grid", f"a second goal at [{x}, {y}]: gridbench mazes have one")
                goal = [x, y]
            elif kind == "key":
                keys.append({"id": f"k{len(keys) + 1}", "kind": "key", "color": obj.color, "pos": [x, y]})
            elif kind == "door":
                state = "locked" if obj.is_locked else ("open" if obj.is_open else "closed")
                doors.append({"id": f"d{len(doors) + 1}", "kind": "door", "color": obj.color,
                              "pos": [x, y], "state": state})
            else:
                raise BadInput(spec, "grid", f"{kind} at [{x}, {y}] has no gridbench counterpart")
        rows.append("".join(row))
    if goal is None:
        raise BadInput(spec, "grid", "the environment has no goal cell")
    rows = _wall_off_unreachable(rows, (int(u.agent_pos[0]), int(u.agent_pos[1])))
    if u.carrying is not None:
        raise BadInput(spec, "agent", "starts carrying an object")
    # One locked door and exactly one key that opens it: that pair is the maze's chain.
    locked = [d for d in doors if d["state"] == "locked"]
    chain = []
    if len(locked) == 1:
        openers = [k for k in keys if k["color"] == locked[0]["color"]]
        if len(openers) == 1:
            chain = [[openers[0]["id"], locked[0]["id"]]]
    ax, ay = (int(v) for v in u.agent_pos)
    return {
        "format": FORMAT,
        "id": maze_id,
        "grid": rows,
        "start": {"pos": [ax, ay], "dir": DIRECTIONS[int(u.agent_dir)]},
        "goal": goal,
        "objects": keys + doors,
        "meta": {
            "category": "mechanism" if keys or doors else "scale",
            "topology": "minigrid",
            "chain": chain,
            "distractors": [],
            "source": f"imported:{spec}",
            "generator": {},
        },
    }
