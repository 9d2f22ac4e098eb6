"""The small attribution run (tests/conftest.py ``attribution_run``): every twin reaches the traces
and the manifest like any maze, each scripted agent fails exactly what it was built to fail, and a
variant episode replays."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from testing.attribution import MAZES, MODELS, expected_solved
from traces import read_manifest

pytestmark = pytest.mark.slow


def test_each_agent_fails_what_it_was_built_to_fail(attribution_run):
    episodes = pd.read_parquet(attribution_run / "episodes")
    assert set(episodes["model_name"]) == set(MODELS) and (episodes["termination"] != "error").all()
    originals = {m.split("/")[1] for m in MAZES}
    twins = episodes[episodes["variant"].notna()]
    assert set(episodes.loc[episodes["variant"].isna(), "maze_id"]) == originals
    assert set(twins["twin_of"]) == originals and set(twins["variant_kind"]) >= {
        "no-switches", "reskin", "no-distractors", "control-none", "mirror", "recolor"}
    for row in episodes.itertuples():
        source = row.twin_of if isinstance(row.twin_of, str) else row.maze_id
        kind = row.variant_kind if isinstance(row.variant_kind, str) else "original"
        assert bool(row.solved) is expected_solved(row.model_name, source, kind), (row.model_name, row.maze_id)


def test_twins_are_in_the_manifest_and_a_variant_episode_replays(attribution_run):
    manifest = read_manifest(attribution_run)
    episodes = pd.read_parquet(attribution_run / "episodes")
    assert set(episodes["maze_checksum"]) <= set(manifest["mazes"])
    assert manifest["sweep"]["variants"]["left_out"], "twins a maze cannot have are recorded"
    mirror = episodes[(episodes["variant_kind"] == "mirror") & episodes["solved"]].iloc[0]
    r = subprocess.run([sys.executable, "-m", "app.cli", "replay", str(attribution_run), mirror["episode_id"],
                        "--verify"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
