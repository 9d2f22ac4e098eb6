"""The viewer of an episode the model saw in 3D: the bundle carries the episode's own 3D frames
(tiles cannot draw them in the page), and the page shows the one of each step beside the map."""

from __future__ import annotations

import base64
import importlib.util
import io

import numpy as np
import pytest
from PIL import Image
from test_viewer import _open, column, index_of, records
from web_runs import make_run

from agents import resolve_protocol
from app.web.viewer import build_view
from episodes.replay import replay

if importlib.util.find_spec("mujoco") is None:  # the 3d extra: scripts/install.sh --test installs it
    pytest.skip("mujoco is not installed", allow_module_level=True)

from env.render3d import frame3d  # noqa: E402

TOP_DOWN = resolve_protocol({"render": {"backend": "mujoco3d", "camera": "top_down", "resolution": 96}})


def pixels(uri: str) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(uri.split(",", 1)[1]))).convert("RGB"))


@pytest.fixture(scope="module")
def run3d(tmp_path_factory, example_maze):
    out = tmp_path_factory.mktemp("run3d")
    make_run(out, [(example_maze, "builtin/oracle", "3d", 0)], protocol=TOP_DOWN, prefix="three")
    make_run(out, [(example_maze, "builtin/oracle", "2d", 0)], prefix="flat")
    return out


@pytest.fixture(scope="module")
def view3d(run3d):
    return build_view(run3d, progress=False).out_dir


def test_the_bundle_carries_each_state_of_a_3d_episode_in_its_own_camera(run3d, view3d):
    index = index_of(view3d)
    ids = column(index, "condition")
    recs = records(view3d)
    three = recs[ids.index("3d")]
    flat = recs[ids.index("2d")]
    assert "frames3d" not in flat  # a 2D episode is drawn from tiles in the page, as before
    replayed = replay(run3d, three["episode"]["episode_id"])
    assert len(three["frames3d"]) == len(replayed.states) == three["n"] + 1
    for uri, state in zip(three["frames3d"], replayed.states, strict=True):
        assert np.array_equal(pixels(uri), frame3d(replayed.maze, state, "top_down", 96))


@pytest.mark.slow
def test_the_page_shows_the_3d_frame_of_each_step(view3d, page):
    index = index_of(view3d)
    i = column(index, "condition").index("3d")
    frames = records(view3d)[i]["frames3d"]
    _open(page, f"{(view3d / 'index.html').as_uri()}#e={i}", "episode")
    assert "camera top_down" in page.inner_text("#view3d-label")
    for s in range(3):
        if s:
            page.keyboard.press("ArrowRight")
        assert page.get_attribute("#frame3d", "src") == frames[s]
    assert frames[0] != frames[2] and page.errors == []
