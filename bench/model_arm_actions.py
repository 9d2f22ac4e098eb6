"""The quickstart's model arm on the real llama.cpp server: how often its replies are actions.

The served model entry of ``orchestrator/sweeps/quickstart.yaml`` plays its own episodes (its
mazes, its protocol) against a llama-cpp-python server on 127.0.0.1, once per model file and per
``constrain`` setting and temperature, one after the other, and a table prints for each: the
share of steps whose reply gave a valid action (exact or lenient), how many of those were exact,
how many distinct actions the steps took, episodes solved, steps, and seconds per step. The
output cap is the entry's own unless ``--cap`` names one.

  --gguf PATH:CHAT_FORMAT   a model file and its chat format (repeatable; default: the bundled model)
  --constrain none,action   the settings to compare (default: none and the entry's own)
  --temperature 0,1         the temperatures to compare (default: the entry's own)

Usage: .venv/bin/python bench/model_arm_actions.py [--gguf m.gguf:gemma-text] [--cap 32]
(a few minutes on 2 cores: the quickstart's model arm plays about 45 steps per setting)
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bench_results import record

from agents import build_agent, resolve_protocol
from episodes.episode import run_episode
from orchestrator.serving.command_lines import llama_cpp_command, llama_cpp_weights
from orchestrator.sweep import load_sweep
from traces import EpisodeIdentity


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """llama-cpp-python's server for one model file, as the sweep's ModelServer would start it."""

    def __init__(self, model: str, spec, path: str, chat_format: str, log: Path):
        self.port = free_port()
        cmd = llama_cpp_command(model, spec, model_path=path, host="127.0.0.1", port=self.port,
                                chat_format=chat_format)
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self._log = open(log, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)

    def wait(self, timeout: float = 300.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with code {self.proc.returncode}")
            try:
                if httpx.get(f"{self.url}/models", timeout=5).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError("the server did not come up")

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._log.close()


def play(sweep, entry, url: str, constrain: str, cap: int | None, temperature: float | None) -> dict:
    specs = [e for e in sweep.episodes() if e.model.name == entry.name]
    valid = exact = steps = solved = 0
    actions: set[int] = set()
    seconds = 0.0
    for spec in specs:
        fields = {**spec.condition.protocol.model_dump(mode="json"), "constrain": constrain}
        if cap is not None:
            fields["max_output_tokens"] = cap
        if temperature is not None:
            fields["temperature"] = temperature
        protocol = resolve_protocol(fields)
        agent = build_agent(entry.config, protocol, seed=spec.seed, endpoint=url)
        identity = EpisodeIdentity(run="bench", episode_id=spec.episode_id, model_name=entry.name,
                                   model=entry.model, condition=spec.condition.name, repeat=spec.repeat,
                                   maze_id=spec.maze.id)
        started = time.perf_counter()
        result = asyncio.run(run_episode(spec.maze, agent, protocol, identity))
        seconds += time.perf_counter() - started
        asyncio.run(agent.aclose())
        steps += len(result.steps)
        valid += sum(s.parse in ("exact", "lenient") for s in result.steps)
        exact += sum(s.parse == "exact" for s in result.steps)
        actions |= {s.action for s in result.steps if s.action is not None}
        solved += result.episode.termination == "solved"
    return {"episodes": len(specs), "steps": steps, "valid": valid, "exact": exact, "solved": solved,
            "distinct": len(actions), "s_per_step": seconds / max(steps, 1)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gguf", action="append", default=[], help="PATH:CHAT_FORMAT (default: the bundled model)")
    ap.add_argument("--constrain", default=None, help="comma-separated settings (default: none and the entry's own)")
    ap.add_argument("--cap", type=int, default=None, help="max_output_tokens (default: the entry's own)")
    ap.add_argument("--temperature", default=None, help="comma-separated temperatures (default: the entry's own)")
    args = ap.parse_args()

    sweep = load_sweep("quickstart")
    entry = next(m for m in sweep.models if m.serve is not None)
    spec = sweep.serve_spec(entry)
    own = entry.protocol.get("constrain", "none")
    settings = args.constrain.split(",") if args.constrain else list(dict.fromkeys(["none", own]))
    temperatures = [float(t) for t in args.temperature.split(",")] if args.temperature else [None]
    bundled, _, chat_format = llama_cpp_weights(spec, start=True)
    files = [tuple(g.rsplit(":", 1)) for g in args.gguf] or [(bundled, chat_format)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for path, chat_format in files:
            server = Server(entry.model, spec, path, chat_format, Path(tmp) / "server.log")
            try:
                server.wait()
                for constrain in settings:
                    for temperature in temperatures:
                        r = play(sweep, entry, server.url, constrain, args.cap, temperature)
                        rows.append((Path(path).name, constrain, temperature, r))
                        shown = "entry's" if temperature is None else f"{temperature:g}"
                        print(f"{Path(path).name:40s} constrain={constrain:8s} temperature={shown:7s} "
                              f"valid {r['valid']}/{r['steps']} ({100 * r['valid'] / max(r['steps'], 1):.0f}%), "
                              f"exact {r['exact']}, distinct actions {r['distinct']}, "
                              f"solved {r['solved']}/{r['episodes']}, {r['s_per_step']:.2f} s/step", flush=True)
            finally:
                server.close()
    for name, constrain, temperature, r in rows:
        share = r["valid"] / max(r["steps"], 1)
        # the goals: the quickstart's model arm takes valid actions on >= 95% of its steps (issue
        # 27), and more than one distinct action across its episodes (issue 38)
        goal = constrain == own and temperature is None and name == Path(files[0][0]).name
        label = f"{name}, constrain {constrain}" + ("" if temperature is None else f", temperature {temperature:g}")
        record(f"model arm valid actions ({label})", ">= 95% of steps" if goal else "",
               f"{r['valid']}/{r['steps']} ({100 * share:.0f}%)", share, share >= 0.95 if goal else None,
               exact=r["exact"], solved=r["solved"], seconds_per_step=round(r["s_per_step"], 2))
        record(f"model arm distinct actions ({label})", "> 1" if goal else "", str(r["distinct"]), r["distinct"],
               r["distinct"] > 1 if goal else None)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    sys.exit(main())
