"""What one LLM turn costs on our side: prompt building, and litellm against a plain HTTP post.

Plays the design example through the litellm agent against the scripted server (oracle mode,
no added latency) for each preset, and times, per turn: building the messages, the agent's
whole ``act`` (prompt + litellm call + parsing), and a bare ``httpx`` post of the same request
body. The ratio column says how much litellm and the agent add over the wire time.

    python bench/agent_overhead.py [--turns 19] [--maze example]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402
from bench_results import record  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

import env  # noqa: E402
from agents import PRESETS, ModelConfig, Turn, build_messages  # noqa: E402
from agents.litellm_transport import litellm_module  # noqa: E402
from agents.llm import LLMAgent  # noqa: E402
from agents.prompt import frame_uri  # noqa: E402
from agents.types import PastStep  # noqa: E402
from testing.scripted_server import ScriptedServer  # noqa: E402


async def measure(maze: env.Maze, protocol, turns: int, url: str) -> dict[str, float]:
    agent = LLMAgent(ModelConfig.for_model("openai/scripted", api_base=url), protocol)
    state, history = env.initial_state(maze), []
    build, act, raw = [], [], []
    async with httpx.AsyncClient(timeout=30) as client:
        for n in range(1, turns + 1):
            turn = Turn(maze, protocol, n, state, tuple(history), 3 * turns)
            frame_uri.cache_clear()  # every turn pays for its frames, as a fresh state would
            t0 = time.perf_counter()
            messages = build_messages(turn)
            build.append(time.perf_counter() - t0)
            body = {k: v for k, v in agent.transport.body(messages).items()
                    if k not in ("num_retries", "timeout", "api_base")}
            body["model"] = "scripted"
            t0 = time.perf_counter()
            r = await client.post(url + "/chat/completions", json=body)
            raw.append(time.perf_counter() - t0)
            r.raise_for_status()
            frame_uri.cache_clear()
            t0 = time.perf_counter()
            decision = await agent.act(turn)
            act.append(time.perf_counter() - t0)
            nxt, event = env.step(maze, state, decision.action)
            history.append(PastStep(n, decision.action, event, state, nxt))
            state = nxt
            if event == "goal":
                break
    return {"build": statistics.median(build), "act": statistics.median(act), "raw": statistics.median(raw),
            "turns": len(act)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--maze", default="example")
    ap.add_argument("--turns", type=int, default=19)
    args = ap.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    t0 = time.perf_counter()
    litellm_module()
    import_s = time.perf_counter() - t0
    maze = env.resolve_maze(args.maze)
    table = Table(title=f"per-turn medians on {maze.id} ({maze.width}x{maze.height}), scripted server, no latency")
    for col in ("preset", "turns", "build prompt ms", "bare HTTP post ms", "agent act ms", "act / bare post"):
        table.add_column(col, justify="right")
    with ScriptedServer(mode="oracle", maze=maze.id if args.maze == "example" else args.maze) as srv:
        for name, protocol in PRESETS.items():
            asyncio.run(measure(maze, protocol, 2, srv.url))  # warm the caches and the connection
            m = asyncio.run(measure(maze, protocol, args.turns, srv.url))
            table.add_row(name, str(m["turns"]), f"{m['build'] * 1e3:.1f}", f"{m['raw'] * 1e3:.1f}",
                          f"{m['act'] * 1e3:.1f}", f"{m['act'] / m['raw']:.2f}")
            # no goal of its own: reported for bench/run_all.py's table
            record(f"LLM turn, {name} preset: agent act vs bare HTTP post (median)", "",
                   f"{m['act'] * 1e3:.1f} ms vs {m['raw'] * 1e3:.1f} ms", m["act"] / m["raw"], None)
    console = Console()
    console.print(table)
    console.print(f"importing litellm once per process: {import_s:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
