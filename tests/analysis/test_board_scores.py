"""The board's scores on hand-made episodes: efficiency against the oracle, human-normalised scores."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.board import human_normalised, maze_set_checksum, scores


def episodes(rows: list[tuple[str, bool, float, int, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["maze_checksum", "solved", "progress_action", "steps", "d_start_action"])


def test_efficiency_is_the_optimum_over_the_actions_taken_on_solved_episodes_only():
    eps = episodes([("m1", True, 1.0, 10, 10), ("m2", True, 1.0, 20, 10), ("m3", False, 0.2, 50, 10)])
    s = scores(eps)
    assert s["efficiency"] == pytest.approx((1.0 + 0.5) / 2) and s["efficiency_episodes"] == 2
    assert (s["episodes"], s["mazes"], s["solves"]) == (3, 3, 2)
    assert s["progress"] == pytest.approx(2.2 / 3)
    assert scores(episodes([("m1", False, 0.5, 9, 4)]))["efficiency"] is None


def test_human_normalised_is_the_arm_over_the_humans_on_the_mazes_both_played():
    arm = episodes([("m1", True, 1.0, 10, 10), ("m2", False, 0.25, 9, 4), ("m9", True, 1.0, 4, 4)])
    humans = episodes([("m1", True, 1.0, 12, 10), ("m2", True, 1.0, 6, 4), ("m2", False, 0.5, 9, 4)])
    h = human_normalised(arm, humans)
    # m9 has no human episode; per maze the humans average 1.0 and 0.75 in progress, 1.0 and 0.5 in solves
    assert h["mazes"] == 2
    assert h["progress"] == pytest.approx(((1.0 + 0.25) / 2) / ((1.0 + 0.75) / 2))
    assert h["solve_rate"] == pytest.approx((0.5) / 0.75)
    assert human_normalised(arm, episodes([("m7", True, 1.0, 3, 3)])) is None


def test_the_maze_set_checksum_is_of_the_set_not_its_order_or_repeats():
    assert maze_set_checksum(pd.Series(["b", "a", "a"])) == maze_set_checksum(pd.Series(["a", "b"]))
    assert maze_set_checksum(pd.Series(["a"])) != maze_set_checksum(pd.Series(["a", "b"]))
