"""The bundled local model on this CPU: server start time, speed, and what serving costs.

The same K turns of the example maze (the quickstart's text protocol for the bundled
SmolLM2-135M-Instruct) are answered three ways, one after the other so they never share the CPU:

  in-process   llama_cpp.Llama in this process: no server, no HTTP (the floor)
  HTTP         a plain POST to the llama.cpp server started by the ModelServer actor
  agent        the LLM agent (litellm) against that server: the path every episode takes

and a table prints latency per turn, output tokens/s and each path's ratio to in-process.
Greedy decoding with a pinned seed makes the three paths produce the same tokens.

Usage: .venv/bin/python bench/serving_local.py [--turns K]     (about 1-3 minutes)
(K distinct prompts: the first K turns along the oracle's path through the example maze)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import httpx
import ray
from bench_results import record

from agents import ModelConfig, build_agent, build_messages, resolve_protocol
from agents.model import request_name
from agents.types import Turn
from env import initial_state, resolve_maze, step
from env.oracle import solve
from orchestrator.serving.bundled import BUNDLED_CHAT_FORMAT, BUNDLED_MODEL, BUNDLED_SPEC, bundled_model_path
from orchestrator.serving.server_pool import ServerPool
from orchestrator.serving.spec import parse_serve
from orchestrator.sweep import ModelEntry

PROTOCOL = {"observation": "text", "thinking": False, "max_output_tokens": 32, "temperature": 0.0,
            "history_frames": 0, "icl_example": False, "step_cap_factor": 1}
N_CTX = 8192


def oracle_turns(k: int) -> list[Turn]:
    """The first ``k`` turns of the oracle's path through the example maze: each prompt differs
    from the last where the map changes, as in a real episode (so prefix caching helps as much
    as it would there, and no more)."""
    maze = resolve_maze("example")
    protocol = resolve_protocol(PROTOCOL)
    state, turns = initial_state(maze), []
    for i, action in enumerate(solve(maze).plan[:k]):
        turns.append(Turn(maze=maze, protocol=protocol, step=i + 1, state=state, history=(), step_cap=19))
        state = step(maze, state, action)[0]
    return turns


def row(name: str, lat: list[float], out_tokens: list[int], base: float | None) -> tuple[str, ...]:
    median = statistics.median(lat)
    tps = sum(out_tokens) / sum(lat)
    return (name, f"{lat[0]:.2f} s", f"{median:.2f} s", f"{statistics.mean(out_tokens):.1f}", f"{tps:.1f}",
            f"{median / base:.2f}x" if base else "1.00x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=5)
    args = ap.parse_args()
    turns = oracle_turns(args.turns)
    conversations = [build_messages(t) for t in turns]
    model_path = str(bundled_model_path())

    ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024**2, log_to_driver=False)
    spec = parse_serve({"engine": "llama_cpp", "model": BUNDLED_SPEC, "n_ctx": N_CTX})
    served = ModelEntry(config=ModelConfig.for_model(BUNDLED_MODEL, name="bundled"), serve=spec, max_concurrency=1)
    http_lat, http_out, agent_lat, agent_out = [], [], [], []
    with tempfile.TemporaryDirectory() as run_dir:
        t0 = time.perf_counter()
        pool = ServerPool(run_dir, [served])
        with pool:
            start_wall = time.perf_counter() - t0
            status = pool.info["bundled"][0]
            url = status["url"]
            prompt_tokens = []
            for messages in conversations:
                body = {"model": request_name(BUNDLED_MODEL), "messages": messages, "temperature": 0.0, "seed": 0,
                        "max_tokens": PROTOCOL["max_output_tokens"]}
                t = time.perf_counter()
                r = httpx.post(f"{url}/chat/completions", json=body, timeout=300).json()
                http_lat.append(time.perf_counter() - t)
                http_out.append(r["usage"]["completion_tokens"])
                prompt_tokens.append(r["usage"]["prompt_tokens"])
            agent = build_agent(BUNDLED_MODEL, turns[0].protocol, endpoint=url)
            for turn in turns:
                d = asyncio.run(agent.act(turn))
                agent_lat.append(d.usage.latency_s)
                agent_out.append(d.usage.tokens_out)
    ray.shutdown()

    from llama_cpp import Llama

    import orchestrator.serving.llama_server  # noqa: F401 - registers the text chat formats

    llm = Llama(model_path=model_path, n_ctx=N_CTX, chat_format=BUNDLED_CHAT_FORMAT, seed=0, verbose=False)
    local_lat, local_out = [], []
    for messages in conversations:
        t = time.perf_counter()
        r = llm.create_chat_completion(messages=messages, max_tokens=PROTOCOL["max_output_tokens"],
                                       temperature=0.0, seed=0)
        local_lat.append(time.perf_counter() - t)
        local_out.append(r["usage"]["completion_tokens"])

    base = statistics.median(local_lat)
    rows = [("path", "first turn", "turn (median)", "out tokens/turn", "out tok/s", "median vs in-process"),
            row("in-process", local_lat, local_out, None),
            row("HTTP", http_lat, http_out, base),
            row("agent (litellm)", agent_lat, agent_out, base)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print(f"bundled {Path(model_path).name}, {args.turns} turns of the example maze per path, "
          f"{statistics.mean(prompt_tokens):.0f} prompt tokens per turn")
    print(f"server start through the ModelServer actor: {status['start_s'][0]:.1f} s to ready "
          f"({start_wall:.1f} s including the actor)")
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    # no goals of their own: reported for bench/run_all.py's table
    record("bundled model server start to ready", "", f"{status['start_s'][0]:.1f} s", None, None)
    for label, lat in (("HTTP", http_lat), ("agent (litellm)", agent_lat)):
        ratio = statistics.median(lat) / base
        record(f"local model turn via {label} vs in-process (median)", "", f"{statistics.median(lat):.2f} s vs "
               f"{base:.2f} s", ratio, None)


if __name__ == "__main__":
    main()
