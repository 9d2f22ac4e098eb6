"""Projection twins: the same maze under its own id, shown another way (docs/variants.md#projection-twins),
and the protocol a run shows it with (``agents.protocol.projected``)."""

from __future__ import annotations

import pytest

from agents.protocol import Protocol, projected, resolve_protocol
from env import BadInput, maze_from_dict, resolve_maze
from env.oracle import solve
from env.variants import (
    DEFAULT_PROJECTIONS,
    PROJECTIONS,
    Skipped,
    Variant,
    assess,
    build_variants,
    kinds_from,
    projection,
    projection_of,
    record_of,
    variant_id,
)

SOURCE = "study/r1_M2_8x8_corridor_sg_0"


def test_the_kind_makes_one_twin_per_projection_each_the_source_itself_under_its_own_id():
    maze = resolve_maze(SOURCE)
    made = list(build_variants(maze, "projection"))
    assert all(isinstance(v, Variant) for v in made)
    twins = [v for v in made if isinstance(v, Variant)]
    assert [v.name for v in twins] == [f"projection-{p}" for p in DEFAULT_PROJECTIONS]
    assert [v.maze.id for v in twins] == [f"{maze.id}.projection-{p}" for p in DEFAULT_PROJECTIONS]
    source_content = {k: v for k, v in maze.to_dict().items() if k not in ("id", "meta")}
    for v in twins:
        assert v.kind == v.family == "projection"
        assert v.twin_of == maze.id and v.record["twin_of_checksum"] == maze.checksum
        assert {k: x for k, x in v.maze.to_dict().items() if k not in ("id", "meta")} == source_content
        assert v.maze.checksum != maze.checksum  # its own maze in a run: its own episodes, paired by twin_of
        assert record_of(v.maze)["name"] == v.name and projection_of(v.maze) == v.params
        a = assess(v, maze)
        assert a.kept and a.optimal == solve(maze).optimal_actions  # the same task: the count cannot move
    params = {v.params["projection"]: v.params for v in twins}
    assert params["2d"]["observation"] == "image" and params["2d"]["render"] == {"backend": "minigrid"}
    assert params["text"]["observation"] == "text" and params["text"]["render"] == {"backend": "minigrid"}
    assert params["first_person"]["render"] == {"backend": "mujoco3d", "camera": "first_person", "resolution": "grid"}
    assert params["top_down"]["render"]["camera"] == "top_down"
    assert projection_of(maze) is None
    # the same source and projection: the same id and the same maze
    again = projection(maze, "text")
    assert isinstance(again, Variant) and again.maze.checksum == twins[-1].maze.checksum


def test_single_projections_and_their_names():
    assert kinds_from("projection-text,projection-first_person_narrow") == [
        "projection-text", "projection-first_person_narrow"]
    assert set(PROJECTIONS) == {"2d", "top_down", "first_person", "first_person_narrow", "text"}
    (narrow,) = build_variants(resolve_maze(SOURCE), "projection-first_person_narrow")
    assert isinstance(narrow, Variant) and narrow.params["render"]["camera"] == "first_person_narrow"
    with pytest.raises(BadInput, match="not a kind of variant"):
        kinds_from("projection-4d")
    long = "x" * 60
    assert len(variant_id(long, "projection-first_person")) <= 64


def test_a_3d_projection_of_a_maze_the_3d_frames_cannot_draw_is_skipped_with_the_reason():
    neutral = maze_from_dict({**resolve_maze(SOURCE).to_dict(), "skin": "neutral"}, "<neutral>")
    made = {v.name: v for v in build_variants(neutral, "projection")}
    assert isinstance(made["projection-top_down"], Skipped) and isinstance(made["projection-first_person"], Skipped)
    assert "classic skin only" in made["projection-top_down"].reason
    assert isinstance(made["projection-text"], Variant) and isinstance(made["projection-2d"], Variant)


def test_the_protocol_a_twin_is_shown_with_changes_observation_and_render_only():
    maze = resolve_maze(SOURCE)
    base = resolve_protocol({"preset": "study-final", "switch_frames": "distinct"})
    assert projected(base, maze) is base  # an original: the protocol itself
    shown = {p: projected(base, v.maze) for v in build_variants(maze, "projection") if isinstance(v, Variant)
             for p in [v.params["projection"]]}
    assert shown["2d"] == base  # the study's final cell already shows the 2D frame alone
    assert shown["text"].changed_fields(base) == ["observation"] and shown["text"].observation == "text"
    assert shown["first_person"].changed_fields(base) == ["render"]
    assert shown["first_person"].render.camera == "first_person" and shown["first_person"].render.resolution == "grid"
    # a projection sets the view outright: a 3D protocol's text twin has no 3D render left
    three = resolve_protocol({"render": {"backend": "mujoco3d", "camera": "top_down", "resolution": 64,
                                         "start_map": False}})
    assert projected(three, projection(maze, "text").maze).render.backend == "minigrid"  # type: ignore[union-attr]
    both = Protocol(observation="image+text")
    assert projected(both, projection(maze, "2d").maze).observation == "image"  # type: ignore[union-attr]


def test_a_protocol_a_projection_cannot_be_laid_over_is_one_line_naming_it():
    text_only = resolve_protocol({"preset": "study-final", "observation": "text", "moves_remaining": True})
    twin = projection(resolve_maze(SOURCE), "first_person")
    assert isinstance(twin, Variant)
    with pytest.raises(BadInput) as err:
        projected(text_only, twin.maze, "s.yaml")
    assert str(err.value).startswith("s.yaml: projection-first_person: ")
    assert "moves_remaining" in str(err.value)


def test_maze_show_draws_a_3d_twin_in_its_own_view(tmp_path):
    import importlib.util

    if importlib.util.find_spec("mujoco") is None:
        pytest.skip("mujoco is not installed")
    import numpy as np
    from PIL import Image
    from typer.testing import CliRunner

    from app.cli import app
    from env import initial_state, save_maze
    from env.render3d import frame3d

    maze = resolve_maze("example")
    twin = projection(maze, "top_down")
    assert isinstance(twin, Variant)
    path = tmp_path / f"{twin.maze.id}.json"
    save_maze(twin.maze, path)
    runner = CliRunner()
    for extra, want in (([], frame3d(maze, initial_state(maze), "top_down")), (["--backend", "minigrid"], None)):
        out = tmp_path / f"shown{len(extra)}.png"
        r = runner.invoke(app, ["maze", "show", str(path), "--png", str(out), *extra])
        assert r.exit_code == 0, r.output
        pixels = np.asarray(Image.open(out).convert("RGB"))
        if want is not None:
            assert np.array_equal(pixels, want)
        else:  # asked for 2D: the 2D frame, tiles of 32 px
            assert pixels.shape[:2] == (maze.height * 32, maze.width * 32)
