"""The render-defect sweep measures what the study's R1 frames cost (docs/incidents.md): each of
the study's 50 mazes under live frames and under R1's, paired by maze for every model; the R1
arm draws switches the same on and off, doors and gates by their state."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from env.render import frame
from env.sets import resolve_mazes
from env.state import initial_state, mechanism_info, state_of_info
from orchestrator.sweep import load_sweep

ROOT = Path(__file__).resolve().parents[2]
SWEEP = ROOT / "orchestrator" / "sweeps" / "render-defect.yaml"
TILE = 16


def test_each_study_maze_runs_under_both_frames_for_every_model_and_live_is_main():
    sweep = load_sweep(str(SWEEP))
    pairs: dict[tuple[str, str], set[str]] = defaultdict(set)
    for e in sweep.episodes():
        pairs[(e.model.name, e.maze.id)].add(e.condition.name)
        assert e.condition.protocol.switch_frames == ("study" if e.condition.name == "r1-frames" else "distinct")
    study = {m.id for m in resolve_mazes(["study"])}
    assert len(study) == 50
    assert {maze for _, maze in pairs} == study and len(pairs) == 3 * 50
    assert all(conditions == {"live", "r1-frames"} for conditions in pairs.values())
    live = {e.episode_id for e in sweep.episodes() if e.condition.name == "live"}
    assert live == {e.episode_id for e in load_sweep(str(ROOT / "orchestrator" / "sweeps" / "main.yaml")).episodes()}


def _cell(image: np.ndarray, pos: list[int] | tuple[int, int]) -> np.ndarray:
    x, y = pos
    return image[y * TILE:(y + 1) * TILE, x * TILE:(x + 1) * TILE]


def test_r1_frames_draw_switches_alike_and_doors_and_gates_by_their_state():
    maze = next(m for m in resolve_mazes(["study"]) if {"switch", "door", "gate"} <= {o.kind for o in m.objects})
    start = mechanism_info(maze, initial_state(maze))

    def drawn(switch_frames: str, **change: dict) -> np.ndarray:
        info = json.loads(json.dumps(start))
        for field, values in change.items():
            info[field].update(values)
        return frame(maze, state_of_info(maze, info), TILE, switch_frames)

    gate = next(o for o in maze.objects if o.kind == "gate")
    # the switch that raises the gate: the gate follows it (a gate's state is its switches')
    switch = next(o for o in maze.objects if o.kind == "switch"
                  and mechanism_info(maze, state_of_info(maze, {**start, "switches": {**start["switches"], o.id: True}}))
                  ["gates"][gate.id])
    door = next(o for o in maze.objects if o.kind == "door")
    for switch_frames, switch_differs in (("study", False), ("distinct", True)):
        off, on = drawn(switch_frames), drawn(switch_frames, switches={switch.id: True})
        assert (not np.array_equal(_cell(off, switch.pos), _cell(on, switch.pos))) is switch_differs, switch_frames
        assert not np.array_equal(_cell(off, gate.pos), _cell(on, gate.pos)), switch_frames
        closed, opened = drawn(switch_frames), drawn(switch_frames, doors={door.id: "open"})
        assert not np.array_equal(_cell(closed, door.pos), _cell(opened, door.pos)), switch_frames


def test_the_dry_run_prices_both_frame_conditions(tmp_path):
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(SWEEP), "--dry-run", "--json", "--out",
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["episodes"] == 300 and len(out["mazes"]) == 50
    conditions = {q["condition"] for q in out["requests"]}
    assert conditions == {"live", "r1-frames"}
    costs = {e["name"]: e for e in out["estimate"]}
    assert set(costs) == {"claude", "kimi", "qwen"} and costs["claude"]["cost_max"] > 0
    assert not (tmp_path / "out").exists()
