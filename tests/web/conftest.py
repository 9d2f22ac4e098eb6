"""Runs to view and a real headless Chromium to look at them with.

Runs are made by the real episode runner and trace writer (``run_episode``, ``write_episode``,
``write_manifest``) with built-in agents and a scripted agent whose replies try to be markup.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agents import Decision, Protocol, Turn
from agents.builtin import OracleAgent, make_builtin
from env import Maze, resolve_maze
from orchestrator.episode import run_episode
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
        from env import ACTIONS

        reply = HOSTILE_REPLIES[(turn.step - 1) % len(HOSTILE_REPLIES)].format(action=ACTIONS[action])
        return Decision(action=action, parse="exact", reply=reply,
                        reasoning=f"<i>thinking</i> at step {turn.step} <!-- -->", tokens_out=7)

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
            result = await run_episode(
                maze, agent, protocol, run=run_dir.name, episode_id=f"ep{i:04d}-{maze.id}-{model.split('/')[-1]}",
                model_name=model.split("/")[-1], model=model, condition=condition, repeat=repeat)
            write_episode(run_dir, result)

    run_async(go())
    mazes = {m.checksum: m.to_dict() for m, *_ in episodes}
    write_manifest(run_dir, run=run_dir.name, sweep={"name": "test"}, mazes=mazes, invocation={"argv": ["test"]})
    return run_dir


@pytest.fixture(scope="session")
def example_maze() -> Maze:
    return resolve_maze("example")


@pytest.fixture(scope="session")
def small_run(tmp_path_factory, example_maze) -> Path:
    """Three episodes on the design example: the oracle, a random walk, and hostile replies."""
    run = tmp_path_factory.mktemp("runs") / "small"
    return make_run(run, [
        (example_maze, "builtin/oracle", "baseline", 0),
        (example_maze, "builtin/random", "baseline", 1),
        (example_maze, "hostile", "markup", 0),
    ])


@pytest.fixture(scope="session")
def browser() -> Iterator:
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (scripts/install.sh --test installs it as root)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh page that records script errors and console errors (a CSP refusal is one)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    yield pg
    context.close()
