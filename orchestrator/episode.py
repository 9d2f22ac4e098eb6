"""One episode: an env, an agent, the protocol's termination rules, and the trace rows.

``run_episode`` is plain asyncio with no Ray in sight, so an episode can be run, tested and
debugged in a loop; the Ray actors in ``orchestrator.driver`` call exactly this function.
Its rows match ``orchestrator.schema.EPISODES`` and ``STEPS`` column for column.

Termination (DESIGN section 5), checked after every step in this order:
``solved`` (the agent entered the goal), ``step_cap`` (steps == ceil(factor x optimal)),
``stall`` (``stall_window`` consecutive steps, none reaching a never-seen (position, carried
key, mechanism state); the start counts as seen), and ``error`` when the agent raises
``InfraError`` (or anything else): an infrastructure failure, never a model outcome.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from agents.types import Agent, Decision, InfraError, PastStep, Turn
from env import ENV_VERSION, Maze, MazeEnv, MazeState, mechanism_info
from env.maze import DOOR_STATES
from env.oracle import distance_table, tile_distance
from env.state import ACTIONS

# Error messages travel into traces and onto the terminal; cap them so a provider's HTML error
# page cannot bloat a run.
MAX_ERROR_CHARS = 2000
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)", re.IGNORECASE)


class HasEpisodeRow:
    """Anything holding an episode's row as ``episode``: which episode it is, how it ended."""

    episode: dict[str, Any]

    @property
    def episode_id(self) -> str:
        return self.episode["episode_id"]

    @property
    def termination(self) -> str:
        return self.episode["termination"]


@dataclass
class EpisodeResult(HasEpisodeRow):
    """One finished episode: its row of ``EPISODES`` and its rows of ``STEPS``."""

    episode: dict[str, Any]
    steps: list[dict[str, Any]] = field(default_factory=list)


@lru_cache(maxsize=1)
def gridbench_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gridbench")
    except PackageNotFoundError:
        return "unknown"


def step_cap_for(optimal: int, factor: float) -> int:
    """The protocol's step budget: factor x optimal actions, rounded up, at least one step."""
    return max(1, math.ceil(factor * optimal - 1e-9))


def redact(text: str) -> str:
    """Replace the value of every secret-looking environment variable found in ``text``.

    Provider errors sometimes echo request headers; no key may reach a trace or a log.
    """
    for name, value in os.environ.items():
        if len(value) >= 8 and _SECRET_NAME.search(name) and value in text:
            text = text.replace(value, f"<{name}>")
    return text


def maze_summary(maze: Maze) -> dict[str, Any]:
    """The maze columns of an episode row."""
    meta = maze.meta
    return {
        "maze_id": maze.id,
        "maze_checksum": maze.checksum,
        "grid_width": maze.width,
        "grid_height": maze.height,
        "grid": f"{maze.width}x{maze.height}",
        "category": maze.category,
        "n_keys": len(maze.keys),
        "n_doors": len(maze.doors),
        "n_switches": len(maze.switches),
        "n_gates": len(maze.gates),
        "n_distractors": len(meta.distractors) if meta else 0,
        "chain_length": len(meta.chain) if meta else 0,
    }


def mechanisms_json(maze: Maze, state: MazeState) -> str:
    """Keys, doors, switches and gates after a step, as compact JSON (the ``mechanisms`` column)."""
    info = mechanism_info(maze, state)
    return json.dumps(
        {k: info[k] for k in ("keys", "doors", "switches", "gates")}, sort_keys=True, separators=(",", ":")
    )


def recorded_state(maze: Maze, x: int, y: int, direction: int, carrying: str | None,
                   mechanisms: dict[str, Any]) -> MazeState:
    """The state a step row records, from its ``x``, ``y``, ``dir``, ``carrying`` and parsed
    ``mechanisms`` columns: the inverse of ``mechanisms_json``. A record that does not fit the
    maze (an unknown key id, a door left out) raises ``KeyError`` or ``ValueError``."""
    keys, doors, switches = mechanisms["keys"], mechanisms["doors"], mechanisms["switches"]
    return MazeState(
        pos=(x, y),
        dir=direction,
        carrying=-1 if carrying is None else [k.id for k in maze.keys].index(carrying),
        keys=tuple(None if keys[k.id] is None else tuple(keys[k.id]) for k in maze.keys),
        doors=tuple(DOOR_STATES.index(doors[d.id]) for d in maze.doors),
        switches=tuple(bool(switches[s.id]) for s in maze.switches),
    )


def progress(d_start: int, d_end: int | None, solved: bool) -> float:
    """clip(1 - d_end / d_start, 0, 1); a goal that can no longer be reached scores 0."""
    if solved:
        return 1.0
    if d_end is None or d_start <= 0:
        return 0.0
    return min(1.0, max(0.0, 1.0 - d_end / d_start))


async def run_episode(
    maze: Maze,
    agent: Agent,
    protocol: Any,
    *,
    run: str,
    episode_id: str,
    model_name: str,
    model: str,
    condition: str,
    repeat: int,
    on_step: Callable[[dict[str, Any]], Awaitable[None] | None] | None = None,
    attempts: int = 1,
) -> EpisodeResult:
    """Play one episode to its end and return its trace rows.

    ``on_step`` (optional, sync or async) sees each step row as soon as it exists: the human
    player and live viewers use it. The agent is not closed here; whoever built it closes it.
    """
    started_at = datetime.now(UTC)
    t0 = time.perf_counter()
    try:
        table = distance_table(maze)
    except OverflowError as err:  # past the oracle's state cap no progress can be scored
        fields = {"run": run, "episode_id": episode_id, "model_name": model_name, "model": model,
                  "condition": condition, "repeat": repeat}
        return error_result(fields, maze, protocol, "OracleStateCap", str(err), attempts)
    env = MazeEnv(maze, tile_size=protocol.tile_size)
    env.reset(seed=protocol.seed)
    state = env.state
    d_start = table.action_distance(state)
    d_start_tile = tile_distance(maze, state.pos)
    ids = {"run": run, "episode_id": episode_id, "model_name": model_name, "condition": condition,
           "maze_id": maze.id}

    steps: list[dict[str, Any]] = []
    history: list[PastStep] = []
    seen = {state.mechanism_key()}
    since_novel = 0
    closest = d_start
    termination = ""
    error_class = error_message = None
    totals = {"tokens_in": 0, "tokens_out": 0, "tokens_reasoning": 0, "cost_usd": 0.0, "latency_s": 0.0,
              "invalid": 0, "reasks": 0, "estimated": False}

    if d_start is None:
        termination, error_class = "error", "UnsolvableMaze"
        error_message = f"maze {maze.id!r} cannot be solved from its start state"
        step_cap = 0
    else:
        step_cap = step_cap_for(d_start, protocol.step_cap_factor)

    step_no = 0
    while not termination:
        step_no += 1
        turn = Turn(maze=maze, protocol=protocol, step=step_no, state=state, history=tuple(history),
                    step_cap=step_cap)
        try:
            decision: Decision = await agent.act(turn)
        except InfraError as err:
            termination, error_class, error_message = "error", err.error_class, str(err)
            break
        except Exception as err:  # a bug or a library failure still costs only this episode
            termination, error_class, error_message = "error", type(err).__name__, str(err)
            break

        before = state
        if decision.action is None:
            event = "noop"  # an invalid reply counts as a step and leaves the env unchanged
        else:
            _, _, _, _, info = env.step(decision.action)
            event = info["event"]
            state = env.state
        key = state.mechanism_key()
        novel = key not in seen
        if novel:
            seen.add(key)
            since_novel = 0
        else:
            since_novel += 1
        d_action = table.action_distance(state)
        if d_action is not None:
            closest = min(closest, d_action)

        totals["tokens_in"] += decision.tokens_in
        totals["tokens_out"] += decision.tokens_out
        totals["tokens_reasoning"] += decision.tokens_reasoning
        totals["cost_usd"] += decision.cost_usd
        totals["latency_s"] += decision.latency_s
        totals["reasks"] += decision.reasks
        totals["estimated"] = totals["estimated"] or decision.reasoning_estimated
        if decision.action is None:
            totals["invalid"] += 1

        row = {
            **ids,
            "step": step_no,
            "action": ACTIONS[decision.action] if decision.action is not None else None,
            "parse": decision.parse,
            "reply": decision.reply,
            "reasoning": decision.reasoning,
            "event": event,
            "x": state.pos[0],
            "y": state.pos[1],
            "dir": state.dir,
            "carrying": maze.keys[state.carrying].id if state.carrying >= 0 else None,
            "mechanisms": mechanisms_json(maze, state),
            "novel": novel,
            "action_distance": d_action,
            "tile_distance": tile_distance(maze, state.pos),
            "tokens_in": decision.tokens_in,
            "tokens_out": decision.tokens_out,
            "tokens_reasoning": decision.tokens_reasoning,
            "reasoning_estimated": decision.reasoning_estimated,
            "cost_usd": decision.cost_usd,
            "latency_s": decision.latency_s,
            "finish_reason": decision.finish_reason,
            "retries": decision.retries,
            "reasks": decision.reasks,
            "prompt_hash": decision.prompt_hash,
            "image_hashes": list(decision.image_hashes),
        }
        steps.append(row)
        history.append(PastStep(step=step_no, action=decision.action, event=event,
                                state_before=before, state_after=state))
        if on_step is not None:
            maybe = on_step(row)
            if inspect.isawaitable(maybe):
                await maybe

        if event == "goal":
            termination = "solved"
        elif step_no >= step_cap:
            termination = "step_cap"
        elif since_novel >= protocol.stall_window:
            termination = "stall"

    solved = termination == "solved"
    d_end = table.action_distance(state) if d_start is not None else None
    d_end_tile = tile_distance(maze, state.pos)
    episode = {
        **{k: ids[k] for k in ("run", "episode_id", "model_name")},
        "model": model,
        "condition": condition,
        "protocol": protocol.to_json(),
        "protocol_hash": protocol.hash,
        "repeat": repeat,
        **maze_summary(maze),
        "optimal_actions": d_start,
        "step_cap": step_cap,
        "termination": termination,
        "solved": solved,
        "steps": len(steps),
        "progress_action": progress(d_start or 0, d_end, solved),
        "progress_tile": progress(d_start_tile or 0, d_end_tile, solved),
        "d_start_action": d_start,
        "d_end_action": d_end,
        "d_start_tile": d_start_tile,
        "d_end_tile": d_end_tile,
        "closest_action": closest,
        "invalid_outputs": totals["invalid"],
        "reasks": totals["reasks"],
        "tokens_in": totals["tokens_in"],
        "tokens_out": totals["tokens_out"],
        "tokens_reasoning": totals["tokens_reasoning"],
        "reasoning_estimated": totals["estimated"],
        "cost_usd": totals["cost_usd"],
        "model_latency_s": totals["latency_s"],
        "wall_s": time.perf_counter() - t0,
        "attempts": attempts,
        "error_class": error_class,
        "error_message": redact(error_message)[:MAX_ERROR_CHARS] if error_message else None,
        "gridbench_version": gridbench_version(),
        "env_version": ENV_VERSION,
        "started_at": started_at,
        "finished_at": datetime.now(UTC),
    }
    env.close()
    return EpisodeResult(episode=episode, steps=steps)


def error_result(
    spec_fields: dict[str, Any], maze: Maze, protocol: Any, error_class: str, message: str, attempts: int
) -> EpisodeResult:
    """An ``error`` episode that never got to run (its actor or node died on every attempt)."""
    now = datetime.now(UTC)
    episode = {
        "run": spec_fields["run"], "episode_id": spec_fields["episode_id"],
        "model_name": spec_fields["model_name"], "model": spec_fields["model"],
        "condition": spec_fields["condition"], "protocol": protocol.to_json(), "protocol_hash": protocol.hash,
        "repeat": spec_fields["repeat"], **maze_summary(maze),
        "optimal_actions": None, "step_cap": None, "termination": "error", "solved": False, "steps": 0,
        "progress_action": None, "progress_tile": None, "d_start_action": None, "d_end_action": None,
        "d_start_tile": None, "d_end_tile": None, "closest_action": None, "invalid_outputs": 0, "reasks": 0,
        "tokens_in": 0, "tokens_out": 0, "tokens_reasoning": 0, "reasoning_estimated": False,
        "cost_usd": 0.0, "model_latency_s": 0.0, "wall_s": 0.0, "attempts": attempts,
        "error_class": error_class, "error_message": redact(message)[:MAX_ERROR_CHARS],
        "gridbench_version": gridbench_version(), "env_version": ENV_VERSION,
        "started_at": now, "finished_at": now,
    }
    return EpisodeResult(episode=episode, steps=[])
