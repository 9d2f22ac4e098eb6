"""Projection twins in a sweep (docs/variants.md#projection-twins): each runs in its original's arm
under the protocol with the twin's own observation and render, an arm already showing the maze that
way runs no twin of it (and says so), and a protocol a projection cannot be laid over is refused at
load."""

from __future__ import annotations

import pytest

from agents.protocol import projected
from env import BadInput
from env.variants import record_of
from orchestrator.sweep import parse_sweep

MAZES = ["example", "study/r1_M1_8x8_corridor_kr_0"]
ORACLE = [{"name": "oracle", "model": "builtin/oracle"}]


def _view(e) -> str:
    record = record_of(e.maze)
    return record["name"] if record else "original"


def test_projection_twins_run_in_their_originals_arm_under_their_own_view():
    plain = parse_sweep({"name": "p", "mazes": MAZES, "models": ORACLE}, "p.yaml")
    sweep = parse_sweep({"name": "p", "mazes": MAZES, "models": ORACLE, "variants": ["projection"]}, "p.yaml")
    specs = sweep.episodes()
    # the default protocol already shows the 2D frame alone: its 2d twins are its originals
    assert sorted({_view(e) for e in specs}) == ["original", "projection-first_person", "projection-text",
                                                "projection-top_down"]
    assert len(specs) == 2 * 4 and {e.condition.name for e in specs} == {"default"}
    assert [(t.id, m, c) for t, m, c in sweep.shown_already()] == [
        (f"{s}.projection-2d", "oracle", "default") for s in ("example", "r1_M1_8x8_corridor_kr_0")]
    originals = {e.episode_id for e in specs if _view(e) == "original"}
    assert originals == {e.episode_id for e in plain.episodes()}  # adding twins moves no original's id
    for e in specs:
        assert e.condition.protocol == projected(sweep.protocol, e.maze)
        if _view(e) == "projection-text":
            assert e.condition.protocol.changed_fields(sweep.protocol) == ["observation"]
        if _view(e) == "projection-top_down":
            assert e.condition.protocol.render.camera == "top_down"
    assert len({e.episode_id for e in specs}) == len(specs)


def test_each_condition_runs_the_projections_it_does_not_already_show():
    sweep = parse_sweep({"name": "p", "mazes": MAZES[:1], "models": ORACLE,
                         "variants": ["projection-2d", "projection-text"],
                         "conditions": [{"name": "frames"}, {"name": "text", "observation": "text"}]}, "p.yaml")
    ran = {(e.condition.name, _view(e)) for e in sweep.episodes()}
    assert ran == {("frames", "original"), ("frames", "projection-text"), ("text", "original"),
                   ("text", "projection-2d")}
    assert {(t.id, c) for t, _, c in sweep.shown_already()} == {("example.projection-2d", "frames"),
                                                                ("example.projection-text", "text")}


def test_a_protocol_a_projection_cannot_be_laid_over_is_refused_at_load():
    data = {"name": "p", "mazes": MAZES[:1], "models": ORACLE, "variants": ["projection-2d"],
            "protocol": {"preset": "study-final", "observation": "text", "moves_remaining": True}}
    with pytest.raises(BadInput) as err:
        parse_sweep(data, "p.yaml")
    line = str(err.value)
    assert line.startswith("p.yaml: variants: oracle in condition 'default': projection-2d: ") and "moves_remaining" in line
    parse_sweep({**data, "variants": ["projection-text"]}, "p.yaml")  # the text map keeps the line


def test_the_dry_run_says_which_twins_an_arm_already_shows(capsys, monkeypatch, tmp_path):
    import yaml

    from app.cli import main as cli_main

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(
        {"name": "p", "mazes": MAZES, "models": ORACLE, "variants": ["projection"]}))
    try:
        cli_main(["run", "p.yaml", "--dry-run"])
    except SystemExit as exit_:
        assert exit_.code in (0, None)
    out, err = capsys.readouterr()
    assert ("2 projection-2d twins not run by oracle in condition 'default': it already shows its mazes that way"
            in " ".join(err.split()))
    row = next(line for line in out.splitlines() if line.startswith("│ projection "))
    assert [c.strip() for c in row.split("│")[1:-1]] == ["projection", "8", "0", "6"]
