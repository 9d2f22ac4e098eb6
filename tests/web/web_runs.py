"""Runs for the viewer and play tests, made by the real runner; the browser's launch flags.

Runs are made by the real episode runner and trace writer (``run_episode``, ``write_episode``,
``write_manifest``) with built-in agents, a scripted agent whose replies try to be markup, and one
that plays a fixed list of actions. ``compacted_copies`` turns a run into a bigger one laid out
as a compacted run: a few Parquet files per folder, each holding many episodes in any order.
"""

from __future__ import annotations

import asyncio
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from agents import Decision, Protocol, Turn, Usage
from agents.builtin import OracleAgent, make_builtin
from env import ACTIONS, Maze
from episodes.episode import run_episode
from traces import EpisodeIdentity, write_episode, write_manifest
from traces._schema import EPISODES, STEPS

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


class DescribingAgent:
    """Plays the oracle's moves and says in each reply what it sees: the maze's id and grid, which
    a page must not show of a sealed set."""

    async def act(self, turn: Turn) -> Decision:
        action = OracleAgent.choose(turn.maze, turn.state)
        seen = " / ".join(turn.maze.grid)
        return Decision(action=action, parse="exact", reply=f"in {turn.maze.id} I see {seen}\nACTION: {ACTIONS[action]}",
                        reasoning=f"{turn.maze.id} at step {turn.step}")

    async def resume(self, turn: Turn, decision: Decision) -> None:
        return None

    async def aclose(self) -> None:
        return None


class ScriptAgent:
    """Plays ``script`` (action names) in order, then ``done``."""

    def __init__(self, script: list[str]):
        self._left = list(script)

    async def act(self, turn: Turn) -> Decision:
        name = self._left.pop(0) if self._left else "done"
        return Decision(action=ACTIONS.index(name), reply=f"ACTION: {name}")

    async def aclose(self) -> None:
        return None


def run_async(coro):
    """``asyncio.run`` in a thread of its own: Playwright's sync API keeps a loop running in this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def make_run(run_dir: Path, episodes: list[tuple[Maze, str, str, int]], protocol: Protocol | None = None,
             prefix: str = "ep", scripts: dict[int, list[str]] | None = None,
             sealed: dict[str, str] | None = None) -> Path:
    """Run ``(maze, model, condition, repeat)`` episodes for real and write their traces.

    ``model``: ``builtin/<agent>``, ``hostile``, ``describer``, or ``script`` (episode ``i`` plays
    ``scripts[i]``). A run can be made by several calls with different protocols and prefixes.
    ``sealed``: the sealed set the mazes come from, as a sweep finds it, for the manifest.
    """
    protocol = protocol or Protocol.preset("gridbench-final")

    def agent_for(i: int, model: str, repeat: int):
        if model == "hostile":
            return HostileAgent()
        if model == "describer":
            return DescribingAgent()
        if model == "script":
            return ScriptAgent((scripts or {})[i])
        return make_builtin(model.removeprefix("builtin/"), seed=repeat)

    async def go() -> None:
        for i, (maze, model, condition, repeat) in enumerate(episodes):
            identity = EpisodeIdentity(run=run_dir.name, episode_id=f"{prefix}{i:04d}-{maze.id}-{model.split('/')[-1]}",
                                       model_name=model.split("/")[-1], model=model, condition=condition,
                                       repeat=repeat, maze_id=maze.id)
            result = await run_episode(maze, agent_for(i, model, repeat), protocol, identity)
            write_episode(run_dir, result)

    run_async(go())
    mazes = {m.checksum: m.to_dict() for m, *_ in episodes}
    write_manifest(run_dir, run=run_dir.name, sweep={"name": "test"}, mazes=mazes, invocation={"argv": ["test"]},
                   sealed=sealed)
    return run_dir


def compacted_copies(source: Path, run_dir: Path, copies: int, files: int = 3, seed: int = 0) -> Path:
    """``copies`` copies of ``source``'s episodes (ids ``c<k>-<id>``, models ``m0``..``m2``,
    conditions ``c0``..``c11``, repeats ``k // 36``) in ``files`` Parquet files per folder,
    rows shuffled: no file is one episode and no file name is an episode id."""
    episodes = pq.read_table(source / "episodes", schema=EPISODES)
    steps = pq.read_table(source / "steps", schema=STEPS)
    n = episodes.num_rows
    rng = np.random.default_rng(seed)
    k = np.arange(copies * n)
    new_ids = np.array([f"c{i:05d}-{e}" for i, e in zip(k, episodes.column("episode_id").to_pylist() * copies,
                                                          strict=True)], dtype=object)
    eps = pa.concat_tables([episodes] * copies)
    for name, values in (("episode_id", new_ids), ("model_name", [f"m{i % 3}" for i in k]),
                         ("condition", [f"c{i // 3 % 12}" for i in k]), ("repeat", (k // 36).astype(np.int32)),
                         ("run", [run_dir.name] * len(k))):
        eps = eps.set_column(eps.schema.get_field_index(name), name, pa.array(values, EPISODES.field(name).type))
    of_id = dict(zip(episodes.column("episode_id").to_pylist(), range(n), strict=True))
    source_of_row = np.array([of_id[e] for e in steps.column("episode_id").to_pylist()])
    st = pa.concat_tables([steps] * copies)
    copy_of_row = np.repeat(np.arange(copies), steps.num_rows)
    ids = new_ids[copy_of_row * n + np.tile(source_of_row, copies)]
    st = st.set_column(st.schema.get_field_index("episode_id"), "episode_id", pa.array(ids, pa.string()))
    for folder, table in (("episodes", eps), ("steps", st)):
        (run_dir / folder).mkdir(parents=True)
        table = table.take(pa.array(rng.permutation(table.num_rows)))
        for f, part in enumerate(np.array_split(np.arange(table.num_rows), files)):
            pq.write_table(table.take(pa.array(part)), run_dir / folder / f"part-{f}.parquet")
    shutil.copy(source / "manifest.json", run_dir / "manifest.json")
    return run_dir


