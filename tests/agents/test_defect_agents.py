"""The scripted server's agents with one known defect (``testing.defects``), played through the LLM
agent over real HTTP on the study's mazes and their twins: each shows its defect, and only it."""

from __future__ import annotations

import asyncio

import pytest

from agents import ModelConfig, build_agent, resolve_protocol
from env import resolve_maze
from env.variants import build_variants
from episodes.episode import run_episode
from testing.scripted_server import ScriptedServer
from traces import EpisodeIdentity

# text only, no frames: fast; a step cap with room for a detour; the watchdog ends a loop
PROTOCOL = resolve_protocol({"observation": "text", "history_frames": 0, "thinking": False, "icl_example": False,
                             "stall_window": 10, "step_cap_factor": 2})
SWITCH = "study/r1_B1_8x8_corridor_swg_0"  # the gate is shut until its switch is toggled
DECOY = "study/r1_D1_10x10_dense_wrong_ky_kr_sg_kb_0"  # a yellow key nearer than the red one it needs


def twin(maze, spec):
    (made,) = build_variants(maze, spec)
    return made.maze


def play(mode: str, mazes, maze, protocol=PROTOCOL):
    async def go():
        agent = build_agent(ModelConfig.for_model("openai/scripted", api_base=srv.url, client="openai",
                                                  price={"input": 0.0, "output": 0.0}), protocol)
        identity = EpisodeIdentity(run="r", episode_id="e", model_name=mode, model="openai/scripted",
                                   condition="c", repeat=0, maze_id=maze.id)
        try:
            return await run_episode(maze, agent, protocol, identity)
        finally:
            await agent.aclose()

    with ScriptedServer(mode=mode, mazes=mazes) as srv:
        return asyncio.run(go())


def test_never_toggle_solves_the_no_switches_twin_and_not_its_switch_maze():
    original = resolve_maze(SWITCH)
    no_switches = twin(original, "no-switches")
    mazes = [original, no_switches]
    failed = play("never-toggle", mazes, original).episode
    assert not failed.solved and failed.termination == "stall"  # it waits where the gate bars the way
    assert play("never-toggle", mazes, no_switches).episode.solved


def test_colour_blind_takes_the_decoy_key_and_solves_the_twin_without_it():
    original = resolve_maze(DECOY)
    clean = twin(original, "no-distractors")
    mazes = [original, clean]
    failed = play("colour-blind", mazes, original)
    assert not failed.episode.solved and failed.episode.termination in ("stall", "step_cap")
    assert failed.steps[-1].carrying == "kY" and "kY" in original.meta.distractors  # the decoy, kept for good
    assert play("colour-blind", mazes, clean).episode.solved
    assert play("oracle", mazes, original).episode.solved  # the maze itself is solvable, by one who sees colour


@pytest.mark.parametrize("spec,solved", [(None, True), ("rotate-90", True), ("recolor", True), ("mirror-tb", False)])
def test_mirror_blind_fails_mirrors_only(spec, solved):
    original = resolve_maze(SWITCH)
    maze = original if spec is None else twin(original, spec)
    assert play("mirror-blind", [original, maze], maze).episode.solved is solved


def test_text_blind_fails_the_text_projection_only():
    from agents.protocol import projected

    frames = resolve_protocol({**PROTOCOL.to_dict(), "observation": "image"})
    original = resolve_maze(SWITCH)
    text = twin(original, "projection-text")
    mazes = [original, text]
    assert play("text-blind", mazes, original, frames).episode.solved  # it reads the 2D frame
    failed = play("text-blind", mazes, text, projected(frames, text)).episode
    assert not failed.solved and failed.termination == "stall"  # shown the text map alone, it answers done
