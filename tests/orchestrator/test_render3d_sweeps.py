"""The render block in sweeps: the shipped camera ablation and projections sweeps, arms that differ
only in how the maze is shown, 2D ids that did not move, and a maze the 3D frames cannot draw
refused when the sweep loads."""

from __future__ import annotations

import hashlib
import json

import pytest

from agents import Protocol, resolve_protocol
from agents.protocol import LATER_FIELDS
from env import BadInput
from orchestrator.sweep import load_sweep, parse_sweep

CAMERA_ABLATION_MAZES = ["r1_M2_8x8_corridor_sg_0", "r1_M2_8x8_corridor_sg_1", "r1_M3_8x8_corridor_kr_sg_1",
                         "r1_M2_10x10_corridor_sg_1", "r1_M1_8x8_corridor_kr_0", "r1_M5_8x8_corridor_kr_kb_1"]


def without(protocol: Protocol, *fields: str) -> dict:
    return {k: v for k, v in protocol.model_dump(mode="json").items() if k not in fields}


def test_the_2d_protocol_json_has_no_render_field_so_no_hash_moved():
    p = Protocol()
    assert "render" in LATER_FIELDS
    assert "render" not in p.to_dict()
    rest = json.dumps(without(p, *LATER_FIELDS), sort_keys=True, separators=(",", ":"))  # render among them
    assert p.hash == hashlib.sha256(rest.encode()).hexdigest()[:16]
    assert resolve_protocol({"render": {"backend": "minigrid"}}).hash == p.hash
    three = resolve_protocol({"render": {"backend": "mujoco3d", "camera": "top_down"}})
    assert three.to_dict()["render"] == {"backend": "mujoco3d", "camera": "top_down", "resolution": "grid",
                                         "start_map": False}
    assert three.hash != p.hash and three.changed_fields(p) == ["render"]


def test_camera_ablation_is_six_mazes_by_three_arms_that_differ_only_in_render():
    sweep = load_sweep("camera-ablation")
    assert [m.id for m in sweep.mazes] == CAMERA_ABLATION_MAZES
    assert [c.name for c in sweep.conditions] == ["2d", "top_down", "first_person"]
    assert len(sweep.episodes()) == 18
    renders = [c.protocol.render for c in sweep.conditions]
    assert [r.backend for r in renders] == ["minigrid", "mujoco3d", "mujoco3d"]
    assert [r.camera for r in renders[1:]] == ["top_down", "first_person_narrow"]  # the eye the study ran
    assert all(r.resolution == "grid" for r in renders[1:])
    stripped = [without(c.protocol, "render") for c in sweep.conditions]
    assert stripped[0] == stripped[1] == stripped[2]
    # the 2d arm is the study's final cell itself: its episodes are those of a sweep with no render
    main_like = {**without(sweep.protocol, "render")}
    assert sweep.conditions[0].protocol == resolve_protocol(main_like)


def test_projections_pairs_2d_with_3d_first_person_and_text_twins_in_one_arm():
    sweep = load_sweep("projections")
    assert len(sweep.sources) == 50 and sweep.variants == ["projection-first_person", "projection-text"]
    assert len(sweep.mazes) == 150 and len(sweep.conditions) == 1
    main = load_sweep("main")
    originals = [e for e in sweep.episodes() if not e.maze.id.endswith(("projection-first_person", "projection-text"))]
    assert {e.episode_id for e in originals} == {e.episode_id for e in main.episodes()}  # main's own episodes
    by_view = {}
    for e in sweep.episodes():
        by_view.setdefault(e.maze.id.rpartition(".projection-")[2] if ".projection-" in e.maze.id else "2d",
                           set()).add((e.condition.name, e.condition.protocol.observation, str(e.condition.protocol.render)))
    assert by_view == {"2d": {("default", "image", "minigrid")},
                       "first_person": {("default", "image", "mujoco3d, camera first_person, resolution grid")},
                       "text": {("default", "text", "minigrid")}}
    # each twin differs from its original, for the same model, in observation or render only
    own = {(e.model.name, e.maze.checksum): e.condition.protocol for e in originals}
    from env.variants import record_of

    for e in sweep.episodes():
        if (record := record_of(e.maze)) is not None:
            base = own[(e.model.name, record["twin_of_checksum"])]
            assert set(e.condition.protocol.changed_fields(base)) in ({"render"}, {"observation"}), e.maze.id


def test_a_maze_the_3d_frames_cannot_draw_is_refused_at_load(tmp_path):
    data = {
        "name": "neutral3d", "mazes": ["example"], "variants": None,
        "protocol": {"render": {"backend": "mujoco3d", "camera": "first_person"}},
        "models": [{"model": "builtin/oracle"}],
    }
    data.pop("variants")
    parse_sweep(data, "ok.yaml")  # the classic skin draws
    from env import resolve_maze

    neutral = resolve_maze("example").to_dict() | {"skin": "neutral", "id": "example-neutral"}
    (tmp_path / "example-neutral.json").write_text(json.dumps(neutral))
    with pytest.raises(BadInput, match="neutral3d.yaml: backend: example-neutral: the mujoco3d backend draws the classic skin only"):
        parse_sweep({**data, "mazes": str(tmp_path)}, "neutral3d.yaml")
    # a text-only condition shows no frame, so it draws nothing and refuses nothing
    parse_sweep({**data, "mazes": str(tmp_path), "protocol": {**data["protocol"], "observation": "text"}}, "t.yaml")


def test_the_camera_ablation_dry_run_lists_six_mazes_by_three_arms(capsys, monkeypatch, tmp_path):
    from app.cli import main as cli_main

    monkeypatch.chdir(tmp_path)  # a dry run writes nothing; results/ would be here if it did
    monkeypatch.setenv("COLUMNS", "200")  # the table's rows on one line each
    try:
        cli_main(["run", "camera-ablation", "--dry-run"])
    except SystemExit as exit_:
        assert exit_.code in (0, None)
    out = capsys.readouterr().out
    assert "camera-ablation: 6 mazes, 1 models, 3 conditions" in out
    for arm, changes in (("2d", "│"), ("top_down", "render: mujoco3d, camera top_down, resolution grid"),
                         ("first_person", "render: mujoco3d, camera first_person_narrow, resolution grid")):
        row = next(line for line in out.splitlines() if line.startswith(f"│ {arm} "))
        assert changes in row and row.split("│")[3].strip() == "6", row
    assert not any(tmp_path.iterdir())
