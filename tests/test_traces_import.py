"""Reading a run needs pyarrow and the trace records only (docs/design.md §1): a fresh interpreter
imports the reading API, reads a small run, and has loaded no Ray, gymnasium, Minigrid, litellm,
oracle, episode runner or agent machinery."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("ray", "gymnasium", "minigrid", "litellm", "env.oracle", "env.minigrid_env", "env.render",
         "orchestrator", "agents.llm", "agents.prompt", "analysis", "matplotlib", "scipy")

READ = """
import json, sys
from traces import completed_ids, read_episode, read_episodes, read_manifest, read_run, trace_dataset
run = sys.argv[1]
episodes, steps = read_run(run)
one, its_steps = read_episode(run, episodes["episode_id"][0])
print(json.dumps({
    "episodes": len(episodes), "steps": len(steps), "one": len(its_steps), "ids": sorted(completed_ids(run)),
    "lazy": trace_dataset(run, "steps").count_rows(), "listed": len(read_episodes(run)),
    "manifest": read_manifest(run)["run"], "modules": sorted(sys.modules),
}))
"""


def test_reading_a_run_loads_no_runtime_no_env_machinery(tmp_path):
    import asyncio

    from agents import Protocol, build_agent
    from env import resolve_maze
    from episodes.episode import run_episode
    from traces import EpisodeIdentity, write_episode, write_manifest

    maze = resolve_maze("example")
    for name in ("oracle", "random"):
        identity = EpisodeIdentity(run="small", episode_id=f"{name}-0", model_name=name, model=f"builtin/{name}",
                                   condition="default", repeat=0, maze_id=maze.id)
        write_episode(tmp_path, asyncio.run(run_episode(maze, build_agent(f"builtin/{name}", Protocol()), Protocol(),
                                                        identity)))
    write_manifest(tmp_path, run="small", sweep={"name": "small"}, mazes={maze.checksum: maze.to_dict()},
                   invocation={"command": ["test"]})
    r = subprocess.run([sys.executable, "-c", READ, str(tmp_path)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["episodes"] == out["listed"] == 2 and out["ids"] == ["oracle-0", "random-0"]
    assert out["steps"] == out["lazy"] > 19 and out["one"] >= 19 and out["manifest"] == "small"
    loaded = [m for m in out["modules"] if any(m == h or m.startswith(f"{h}.") for h in HEAVY)]
    assert not loaded, f"reading a run imported {loaded}"
    assert "pyarrow" in out["modules"] and "traces._records" in out["modules"]

