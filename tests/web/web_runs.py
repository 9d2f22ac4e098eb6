"""Runs for the viewer and play tests, made by the real runner; the browser's launch flags.

Runs are made by the real episode runner and trace writer (``run_episode``, ``write_episode``,
``write_manifest``) with built-in agents and a scripted agent whose replies try to be markup.
"""

from __future__ import annotations

import asyncio
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agents import Decision, Protocol, Turn, Usage
from agents.builtin import OracleAgent, make_builtin
from env import ACTIONS, Maze
from orchestrator.episode import run_episode
from orchestrator.records import EpisodeIdentity
from orchestrator.traces import write_episode, write_manifest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
HOSTILE_REPLIES = (
    "<script>window.__pwned = 'reply'</script>\nACTION: {action}",
    "</script><img src=x onerror=\"window.__pwned='img'\">\nACTION: {action}",
    "<b>bold?</b> & &amp; \u2028 `${{x}}`\nACTION: {action}",
)


class HostileAgent:
    """Plays the oracle's moves while its replies and reasoning are written to look like HTML."""

    async def act(self, turn: Turn) -> Decision:
        action = OracleAgent.choose(turn.maze, turn.state)
        reply = HOSTILE_REPLIES[(turn.step - 1) % len(HOSTILE_REPLIES)].format(action=ACTIONS[action])
        return Decision(action=action, parse="exact", reply=reply,
                        reasoning=f"<i>thinking</i> at step {turn.step} <!-- -->", usage=Usage(tokens_out=7))

    async def resume(self, turn: Turn, decision: Decision) -> None:
        return None

    async def aclose(self) -> None:
        return None


def run_async(coro):
    """``asyncio.run`` in a thread of its own: Playwright's sync API keeps a loop running in this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def make_run(run_dir: Path, episodes: list[tuple[Maze, str, str, int]], protocol: Protocol | None = None) -> Path:
    """Run ``(maze, model, condition, repeat)`` episodes for real and write their traces.

    ``model``: ``builtin/<agent>`` or ``hostile``.
    """
    protocol = protocol or Protocol.preset("final")

    async def go() -> None:
        for i, (maze, model, condition, repeat) in enumerate(episodes):
            agent = HostileAgent() if model == "hostile" else make_builtin(model.removeprefix("builtin/"), seed=repeat)
            identity = EpisodeIdentity(run=run_dir.name, episode_id=f"ep{i:04d}-{maze.id}-{model.split('/')[-1]}",
                                       model_name=model.split("/")[-1], model=model, condition=condition,
                                       repeat=repeat, maze_id=maze.id)
            result = await run_episode(maze, agent, protocol, identity)
            write_episode(run_dir, result)

    run_async(go())
    mazes = {m.checksum: m.to_dict() for m, *_ in episodes}
    write_manifest(run_dir, run=run_dir.name, sweep={"name": "test"}, mazes=mazes, invocation={"argv": ["test"]})
    return run_dir


