import base64
import io
import os
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import env
from agents import PRESETS, Protocol, Turn, build_messages
from agents.prompt import (
    event_summary,
    fingerprint,
    icl_episode,
    instructions,
    render_for_humans,
    texts,
)
from env.oracle import solve

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("GRIDBENCH_UPDATE_GOLDEN") == "1"

VARIANTS = {
    "final": PRESETS["gridbench-final"],
    "baseline": PRESETS["gridbench-baseline"],
    "detailed-text-steps": Protocol(prompt="detailed", observation="text", steps_remaining=True,
                                    icl_example=False, history_frames=2),
    "multi": Protocol(conversation="multi", icl_example=False, history_frames=1,
                      mechanism_locations=False, start_info=False),
}


def turn_for(maze, history, state, protocol):
    return Turn(maze, protocol, len(history) + 1, state, history, 57)


def images_of(messages):
    out = []
    for m in messages:
        if isinstance(m["content"], list):
            out += [p for p in m["content"] if p["type"] == "image_url"]
    return out


def all_text(messages):
    out = []
    for m in messages:
        if isinstance(m["content"], str):
            out.append(m["content"])
        else:
            out += [p["text"] for p in m["content"] if p["type"] == "text"]
    return "\n".join(out)


@pytest.mark.parametrize("name", list(VARIANTS))
def test_golden_prompt(name, example_maze, example_midway):
    history, state = example_midway
    messages = build_messages(turn_for(example_maze, history, state, VARIANTS[name]))
    rendered = render_for_humans(messages)
    path = GOLDEN / f"{name}.txt"
    if UPDATE or not path.exists():
        path.write_text(rendered)
    assert rendered == path.read_text(), f"prompt changed; GRIDBENCH_UPDATE_GOLDEN=1 rewrites {path.name}"


def test_final_prompt_shape(example_maze, example_midway):
    history, state = example_midway
    messages = build_messages(turn_for(example_maze, history, state, PRESETS["gridbench-final"]))
    assert [m["role"] for m in messages] == ["user"]
    text = all_text(messages)
    assert text.startswith(instructions("minimal"))
    assert "Text map" not in text  # image only
    icl_images = len(icl_episode()[1])
    assert len(images_of(messages)) == icl_images + 3 + 1  # example, 3 history frames, current
    assert "You picked up the yellow key at step 4" in text
    assert "the yellow door went from locked to open at step 7" in text
    assert "the blue gate opened at step 12" in text
    assert text.rstrip().endswith(texts()["request"])


def test_images_are_the_env_frames_as_png_data_uris(example_maze, example_midway):
    history, state = example_midway
    protocol = Protocol(icl_example=False, history_frames=0, tile_size=16)
    (image,) = images_of(build_messages(turn_for(example_maze, history, state, protocol)))
    uri = image["image_url"]["url"]
    assert uri.startswith("data:image/png;base64,")
    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).convert("RGB"))
    assert np.array_equal(pixels, env.render_state(example_maze, state, 16))


def test_history_frames_are_labelled_with_inventory_and_action(example_maze, example_midway):
    history, state = example_midway
    for k in range(0, 9):
        protocol = Protocol(icl_example=False, history_frames=k)
        messages = build_messages(turn_for(example_maze, history, state, protocol))
        assert len(images_of(messages)) == min(k, len(history)) + 1
    text = all_text(build_messages(turn_for(example_maze, history, state, Protocol(icl_example=False))))
    assert "Before step 12: you were carrying a yellow key. Your action was: toggle." in text


def test_a_short_history_shows_every_step_it_has(example_maze, example_midway):
    """Fewer steps taken than ``history_frames``: each of them is shown (the window was cut from
    ``len(history) - history_frames``, a negative index that dropped the oldest ones)."""
    history, _ = example_midway
    for taken in range(0, 4):
        for k in (3, 8):
            for protocol in (Protocol(icl_example=False, history_frames=k),
                             Protocol(icl_example=False, history_frames=k, observation="text")):
                state = history[taken - 1].state_after if taken else env.initial_state(example_maze)
                text = all_text(build_messages(turn_for(example_maze, history[:taken], state, protocol)))
                assert [n for n in range(1, 13) if f"Before step {n}:" in text] == list(range(1, taken + 1))


def test_text_observation_has_the_projection_and_no_images(example_maze, example_midway):
    history, state = example_midway
    messages = build_messages(turn_for(example_maze, history, state, Protocol(observation="text")))
    assert images_of(messages) == []
    assert env.text_projection(example_maze, state) in all_text(messages)


def test_switches_off_what_the_protocol_turns_off(example_maze, example_midway):
    history, state = example_midway
    protocol = Protocol(start_info=False, mechanism_locations=False, context="recent",
                        icl_example=False, steps_remaining=False)
    text = all_text(build_messages(turn_for(example_maze, history, state, protocol)))
    for fragment in ("You started at", "Objects in this maze", "What has happened", "example", "steps left"):
        assert fragment not in text
    on = all_text(build_messages(turn_for(example_maze, history, state, Protocol(steps_remaining=True))))
    assert "You have 45 steps left." in on and "You started at (1, 1) facing east." in on
    assert "- a blue switch at (5, 1)" in on


def test_no_progress_signal_and_no_failure_message_after_bumps(example_maze, walk):
    # forward into the wall at (4, 1) twice: nothing in the prompt may say that it failed
    history, state = walk(example_maze, [2, 2, 2, 2, 3, 4])
    assert [h.event for h in history][2:] == ["bump", "bump", "noop", "noop"]
    for level in ("minimal", "standard", "detailed"):
        for conversation in ("single", "multi"):
            protocol = Protocol(prompt=level, observation="image+text", conversation=conversation)
            text = all_text(build_messages(turn_for(example_maze, history, state, protocol))).lower()
            for word in ("fail", "bump", "did not move", "nothing happened", "distance", "progress",
                         "closer", "further", "blocked", "invalid", "wrong"):
                assert word not in text, (level, conversation, word)


def test_detailed_prompt_explains_glyphs_but_not_mechanisms():
    detailed = instructions("detailed").lower()
    assert "red triangle" in detailed and "gate" in detailed and "switch" in detailed
    for how in ("unlock", "opens the", "controls", "matching colour", "same colour", "stand on a switch"):
        assert how not in detailed
    for level in ("minimal", "standard", "detailed"):
        assert "relative to the direction you are facing" in instructions(level)


def test_multi_conversation_sends_past_turns_and_own_replies(example_maze, example_midway):
    history, state = example_midway
    protocol = Protocol(conversation="multi", icl_example=False, history_frames=2)
    replies = [f"thinking {i}\nACTION: x{i}" for i in range(len(history))]
    messages = build_messages(turn_for(example_maze, history, state, protocol), replies)
    roles = [m["role"] for m in messages]
    assert roles == ["user", "assistant"] * len(history) + ["user"]
    assert [m["content"] for m in messages if m["role"] == "assistant"] == replies
    # pictures only for the last two past turns and the current one
    with_images = [i for i, m in enumerate(messages) if m["role"] == "user" and images_of([m])]
    assert with_images == [len(messages) - 5, len(messages) - 3, len(messages) - 1]
    # without the agent's replies, the actions taken stand in for them
    synthetic = build_messages(turn_for(example_maze, history, state, protocol))
    assert synthetic[1]["content"] == "ACTION: forward"


def test_icl_example_is_a_real_optimal_episode():
    maze, states, plan = icl_episode()
    assert len(plan) == solve(maze).optimal_actions and len(states) == len(plan) + 1
    e = env.MazeEnv(maze, render_mode="rgb_array")
    e.reset()
    for a, expected in zip(plan, states[1:], strict=True):
        e.step(a)
        assert e.state == expected
    assert states[-1].pos == tuple(maze.goal)


def test_activity_summary_names_every_mechanism_event_with_its_step(example_maze, walk, midway_actions):
    history, _ = walk(example_maze, [*midway_actions, 4])  # the switch on, then off again
    summary = event_summary(example_maze, history)
    assert summary.count("at step") == 6
    assert "the blue switch turned off at step 13; the blue gate closed at step 13." in summary
    assert event_summary(example_maze, ()) == texts()["summary_none"]


def test_fingerprint_tracks_images_and_text(example_maze, example_midway):
    history, state = example_midway
    a = build_messages(turn_for(example_maze, history, state, PRESETS["gridbench-final"]))
    b = build_messages(turn_for(example_maze, history[:-1], history[-1].state_before, PRESETS["gridbench-final"]))
    ha, ia = fingerprint(a)
    hb, ib = fingerprint(b)
    assert ha != hb and ia[:8] == ib[:8] and ia[-1] != ib[-1]
    assert fingerprint(a) == (ha, ia)


@pytest.mark.parametrize("look,alike", [("study", True), ("distinct", False)])
def test_switch_frames_reach_the_prompt_frames(example_maze, example_midway, look, alike):
    """The switch is on at this point of the example: with the switch drawn the study's way, its
    cell in the frame is the same as with the switch off."""
    from dataclasses import replace

    history, state = example_midway
    off = replace(state, switches=(False,))
    x, y = example_maze.switches[0].pos
    protocol = Protocol(switch_frames=look)
    cells = []
    for s in (state, off):
        uri = images_of(build_messages(turn_for(example_maze, history, s, protocol)))[-1]["image_url"]["url"]
        frame = np.asarray(Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))))
        cells.append(frame[32 * y:32 * (y + 1), 32 * x:32 * (x + 1)])
    assert np.array_equal(*cells) == alike
