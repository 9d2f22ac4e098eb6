"""A 3D episode is the 2D episode with other pictures: the same actions give the same step rows
apart from the image hashes, the model is shown the 3D frames of the states it is in, and the
episode replays with --verify, its GIF drawn with the episode's own camera."""

from __future__ import annotations

import asyncio
import importlib.util

import numpy as np
import pytest

if importlib.util.find_spec("mujoco") is None:  # the 3d extra: scripts/install.sh --test installs it
    pytest.skip("mujoco is not installed", allow_module_level=True)

from agents import ModelConfig, Protocol, resolve_protocol  # noqa: E402
from agents.caller import RetryPolicy  # noqa: E402
from agents.llm import LLMAgent  # noqa: E402
from env import initial_state, resolve_maze, step  # noqa: E402
from env.oracle import solve  # noqa: E402
from env.render3d import frame3d  # noqa: E402
from env.state import ACTIONS  # noqa: E402
from episodes.episode import run_episode  # noqa: E402
from episodes.replay import replay, write_gif  # noqa: E402
from testing.reading import last_image  # noqa: E402
from testing.scripted_server import ScriptedServer  # noqa: E402
from traces import EpisodeIdentity, write_episode, write_manifest  # noqa: E402

# what a step row says about the game and the reply; the image hashes (and the prompt hash and
# token counts that follow from them) are what a 3D episode changes
SAME = ("step", "action", "parse", "reply", "event", "x", "y", "dir", "carrying", "mechanisms", "novel",
        "action_distance", "tile_distance", "token", "plan", "subgoal")
THREE_D = {"backend": "mujoco3d", "camera": "first_person"}


def play(maze, protocol, actions, monkeypatch, name):
    monkeypatch.setenv("GRIDBENCH_TEST_KEY", "sk-test")
    with ScriptedServer(actions=actions) as srv:
        agent = LLMAgent(ModelConfig.for_model("openai/scripted", api_base=srv.url, api_key_env="GRIDBENCH_TEST_KEY"),
                         protocol, retry=RetryPolicy(max_retries=1, base_s=0.01, cap_s=0.02), seed=1)
        identity = EpisodeIdentity(run="r3d", episode_id=name, model_name="scripted", model="openai/scripted",
                                   condition=name, repeat=0, maze_id=maze.id)
        result = asyncio.run(run_episode(maze, agent, protocol, identity))
        bodies = [r.body for r in srv.chat_requests]
    return result, bodies


@pytest.fixture(scope="module")
def episodes(tmp_path_factory):
    monkeypatch = pytest.MonkeyPatch()
    maze = resolve_maze("example")
    plan = [ACTIONS[a] for a in solve(maze).plan]
    actions = ["left", "right", *plan]  # a turn and back first: the same state twice
    flat = Protocol(icl_example=False)
    deep = resolve_protocol({"icl_example": False, "render": THREE_D})
    out = tmp_path_factory.mktemp("r3d")
    two, _ = play(maze, flat, actions, monkeypatch, "2d")
    three, bodies = play(maze, deep, actions, monkeypatch, "3d")
    monkeypatch.undo()
    for r in (two, three):
        write_episode(out, r)
    write_manifest(out, run="r3d", sweep={"name": "r3d"}, mazes={maze.checksum: maze.to_dict()},
                   invocation={"command": ["test"]})
    return maze, actions, two, three, bodies, out


def test_the_same_actions_give_the_same_rows_apart_from_the_pictures(episodes):
    maze, actions, two, three, _, _ = episodes
    assert two.episode.solved and three.episode.solved
    assert len(two.steps) == len(three.steps) == len(actions)
    for a, b in zip(two.steps, three.steps, strict=True):
        assert {k: getattr(a, k) for k in SAME} == {k: getattr(b, k) for k in SAME}
        assert a.image_hashes and b.image_hashes and a.image_hashes[-1] != b.image_hashes[-1]
    for column in ("termination", "steps", "optimal_actions", "progress_action", "d_end_action"):
        assert getattr(two.episode, column) == getattr(three.episode, column)


def test_the_model_is_shown_the_3d_frame_of_its_state(episodes):
    maze, actions, _, three, bodies, _ = episodes
    state = initial_state(maze)
    assert len(bodies) == len(actions)
    for body, action in zip(bodies, actions, strict=True):
        assert np.array_equal(last_image(body), frame3d(maze, state, "first_person"))
        state = step(maze, state, ACTIONS.index(action))[0]


def test_a_3d_episode_replays_and_its_gif_has_its_camera(episodes, tmp_path):
    maze, _, two, three, _, out = episodes
    result = replay(out, "3d")
    assert result.ok, [str(m) for m in result.mismatches[:3]]
    frames = result.frames()
    assert all(np.array_equal(f, frame3d(maze, s, "first_person")) for f, s in zip(frames, result.states, strict=True))
    import imageio.v3 as iio

    gif3, gif2 = write_gif(result, tmp_path / "3d.gif"), write_gif(replay(out, "2d"), tmp_path / "2d.gif", tile_size=16)
    assert iio.imread(gif3, index=0).shape[:2] == (288, 288)  # the episode's own 3D frames, 32 px a cell
    assert iio.imread(gif2, index=0).shape[:2] == (16 * maze.height, 16 * maze.width)


def test_prompts_name_the_view_above_the_minimal_level_and_show_the_start_map_once():
    import base64
    import io

    from PIL import Image

    from agents import Turn, build_messages
    from agents.prompt import texts
    from env.render3d import start_map

    maze = resolve_maze("example")
    state = step(maze, initial_state(maze), ACTIONS.index("forward"))[0]

    def turn(**fields):
        p = resolve_protocol({"icl_example": False, "history_frames": 0, **fields})
        parts = build_messages(Turn(maze, p, 2, state, (), 57))[0]["content"]
        text = "\n".join(part["text"] for part in parts if part["type"] == "text")
        images = [np.asarray(Image.open(io.BytesIO(base64.b64decode(part["image_url"]["url"].split(",", 1)[1]))))
                  for part in parts if part["type"] == "image_url"]
        return text, images

    words = texts()
    eyes = {"backend": "mujoco3d", "camera": "first_person"}
    minimal, _ = turn(render=eyes)
    assert words["view_3d"]["first_person"] not in minimal and words["view_3d"]["top_down"] not in minimal
    standard, images = turn(prompt="standard", render=eyes)
    assert words["view_3d"]["first_person"] in standard and len(images) == 1
    assert np.array_equal(images[0], frame3d(maze, state, "first_person"))
    above, _ = turn(prompt="standard", render={"backend": "mujoco3d", "camera": "top_down"})
    assert words["view_3d"]["top_down"] in above
    flat, _ = turn(prompt="standard")
    assert words["view_3d"]["top_down"] not in flat and words["view_3d"]["first_person"] not in flat
    with_map, images = turn(render={**eyes, "start_map": True})
    assert words["start_map"] in with_map and len(images) == 2  # the map, then the current view
    assert np.array_equal(images[0], start_map(maze)) and np.array_equal(images[1], frame3d(maze, state, "first_person"))
