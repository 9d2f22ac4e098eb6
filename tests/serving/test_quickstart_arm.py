"""The quickstart's model arm as a new user first meets it: the bundled SmolLM2 served by llama.cpp,
sampled with a seed per call, acts on every step and takes more than one action; the run's
closing lines say what the arm is for. It plays the larger of its two mazes alone (26 steps at
most): the other adds a minute of CPU answers to the suite and nothing the first does not show."""

import pandas as pd
import pytest

from app.cli import main

pytestmark = pytest.mark.slow


def test_the_quickstart_model_arm_moves_and_says_what_it_is_for(tmp_path, capfd):
    out = tmp_path / "results"
    try:
        main(["run", "quickstart", "--model", "smollm2-135m", "--mazes", "h14-small-walk", "--out", str(out),
              "--name", "qs"])
    except SystemExit as exit_:
        assert exit_.code in (0, None)
    printed = capfd.readouterr().out
    episodes = pd.read_parquet(out / "qs" / "episodes")
    assert len(episodes) == 1 and (episodes["termination"] != "error").all(), episodes["error_message"].tolist()
    steps = pd.read_parquet(out / "qs" / "steps")
    assert len(steps) == episodes["steps"].sum() > 2
    assert steps["parse"].eq("exact").all()  # the grammar makes every reply an action
    assert steps["action"].nunique() > 1, steps["action"].value_counts().to_dict()
    assert "smollm2-135m is the bundled SmolLM2-135M-Instruct" in " ".join(printed.split())
    assert "not to rank" in " ".join(printed.split())
