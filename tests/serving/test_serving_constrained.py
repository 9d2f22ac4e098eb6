"""The quickstart's model arm on the real llama.cpp server with the bundled model: under its
protocol (constrain: action, llama.cpp's grammar) its replies are actions.

The server is the command the ModelServer actor runs (``llama_cpp_weights``, ``llama_cpp_command``),
started here as a plain process on 127.0.0.1; the agent and the episode loop are the ones every run uses.
"""

import asyncio
import socket
import subprocess
import time

import httpx
import pytest

from agents import build_agent, resolve_protocol
from env.oracle import solve
from episodes.episode import run_episode
from orchestrator.serving.bundled import BUNDLED_SPEC
from orchestrator.serving.command_lines import llama_cpp_command, llama_cpp_weights
from orchestrator.sweep import load_sweep
from traces import EpisodeIdentity

pytestmark = pytest.mark.slow

STEPS = 12  # enough to see a format failure in one step of twenty, few enough for well under a minute


@pytest.fixture(scope="module")
def quickstart_arm(tmp_path_factory):
    """The quickstart's served entry, its first episode, and the URL of its server."""
    sweep = load_sweep("quickstart", mazes="example")
    entry = next(m for m in sweep.models if m.serve is not None)
    episode = next(e for e in sweep.episodes() if e.model.name == entry.name)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    spec = sweep.serve_spec(entry)
    assert spec.model == BUNDLED_SPEC
    path, _, chat_format = llama_cpp_weights(spec, start=True)
    cmd = llama_cpp_command(entry.model, spec, model_path=path, host="127.0.0.1", port=port,
                            chat_format=chat_format)
    log = open(tmp_path_factory.mktemp("server") / "server.log", "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, f"the server exited with code {proc.returncode}"
            assert time.monotonic() < deadline, "the server did not come up"
            try:
                if httpx.get(f"{url}/models", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        yield entry, episode, url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_the_quickstart_model_arm_takes_valid_actions(quickstart_arm):
    entry, episode, url = quickstart_arm
    protocol = episode.condition.protocol
    assert protocol.constrain == "action" and protocol.max_output_tokens <= 16
    # the same protocol with a step cap of STEPS (the maze's optimum is longer, so no early end)
    optimum = solve(episode.maze).optimal_actions
    short = resolve_protocol({**protocol.model_dump(mode="json"), "step_cap_factor": STEPS / optimum})
    agent = build_agent(entry.config, short, seed=episode.seed, endpoint=url)
    identity = EpisodeIdentity(run="t", episode_id=episode.episode_id, model_name=entry.name, model=entry.model,
                               condition=episode.condition.name, repeat=0, maze_id=episode.maze.id)

    async def play():
        try:
            return await run_episode(episode.maze, agent, short, identity)
        finally:
            await agent.aclose()

    result = asyncio.run(play())
    assert result.episode.termination != "error", result.episode.error_message
    steps = result.steps
    assert len(steps) >= STEPS - 1 or result.episode.termination == "solved"
    valid = [s for s in steps if s.action is not None]
    assert len(valid) >= 0.95 * len(steps), [s.reply for s in steps]
    assert all(s.budget.constraint == "grammar" and s.finish_reason == "stop" for s in steps)
    assert all(s.parse == "exact" for s in valid)
