"""The long-horizon sweep is the study's final cell (``main``) with the ``long-horizon`` set beside
the study's 50: the same models, tiers and protocol, so its study episodes are main's episode for
episode and the horizon curve goes on past the study's longest plans under the same conditions."""

from __future__ import annotations

from pathlib import Path

from env.sets import resolve_mazes, set_entries
from episodes.termination import step_cap_for
from orchestrator.sweep import load_sweep

SWEEPS = Path(__file__).resolve().parents[2] / "orchestrator" / "sweeps"


def test_the_long_horizon_sweep_is_main_with_the_long_horizon_set_beside_the_study():
    sweep, main = load_sweep(str(SWEEPS / "long-horizon.yaml")), load_sweep(str(SWEEPS / "main.yaml"))
    assert sweep.models == main.models
    main_episodes = main.episodes()
    main_ids = {e.episode_id for e in main_episodes}
    episodes = sweep.episodes()
    assert main_ids < {e.episode_id for e in episodes}  # the study's 50, exactly as main runs them
    long = {m.id for m in resolve_mazes("long-horizon")}
    beside = [e for e in episodes if e.episode_id not in main_ids]
    assert sorted((e.model.name, e.maze.id) for e in beside) == sorted((m.name, i) for m in main.models for i in long)
    protocol_of = {e.model.name: e.condition.protocol for e in main_episodes}
    assert all(e.condition.protocol == protocol_of[e.model.name] for e in episodes)
    protocol = protocol_of["claude"]
    # every long-horizon maze keeps the preset's cap of 3 x its optimal actions
    caps = sorted(step_cap_for(e["optimal_actions"], protocol.step_cap_factor) for e in set_entries("long-horizon"))
    assert protocol.step_cap_factor == 3.0 and caps[0] >= 3 * 150 and caps[-1] <= 3 * 600
