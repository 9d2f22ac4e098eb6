"""Step-level analyses on hand-built episodes of the design example (docs/design.md §2), every count by hand.

The example (9x6): start (1,1) facing east, key k1 at (2,3), locked door d1 at (4,2), switch s1
at (5,1) controlling gate g1 at (7,3), goal (7,4).
"""

from __future__ import annotations

import pytest
from tracefab import play, write_run

import env.oracle
from analysis import compute, failure
from analysis.load import load_runs
from analysis.steps import annotate

KEYS = ["right", "forward", "left", "forward", "right",
        "forward",  # bump: the key lies in front, not a wall
        "pickup", "pickup", "toggle",  # key taken, then nothing to pick up, nothing to toggle
        "left", "forward", "toggle", "toggle", "toggle",  # unlock, close, open the door
        "forward", "forward", "left", "forward",  # onto the live switch
        "toggle"]  # switch on
WALLS = ["forward", "forward"] + ["forward"] * 33  # then 33 bumps into the wall at (4,1)
QUARTERS = ["forward", "forward",  # Q1: two unseen cells
            "left", "left",  # Q2: two turns
            "forward", "forward",  # Q3: two revisits (back onto (2,1), then the start cell)
            "forward", "right"]  # Q4: a wall bump and a turn
THINK = [10, 20, 30, 40, 50, 60, 70, 80]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    maze = env.resolve_maze("example")
    episodes, steps = [], []
    for name, actions, kw in (("keys", KEYS, {}), ("walls", WALLS, {}),
                              ("quarters", QUARTERS, {"reasoning_tokens": THINK}),
                              ("oracle", env.oracle.optimal_actions(maze).plan_names, {})):
        row, st = play(maze, actions, model_name=name, **kw)
        episodes.append(row)
        steps += st
    run = write_run(tmp_path_factory.mktemp("runs") / "hand", episodes, steps)
    traces = load_runs([run])
    return traces, annotate(traces)


def _arm(t, arm):
    return t[t["arm"] == arm].iloc[0]


def test_events_are_what_the_comments_say(data):
    _, st = data
    steps = st.frame()
    ev = list(steps[steps["arm"] == "keys"]["event"])
    assert ev[5:9] == ["bump", "pickup", "noop", "noop"]
    assert ev[11:14] == ["door_unlocked", "door_closed", "door_opened"]
    assert ev[-1] == "switch_on"


def test_verb_efficiency(data):
    traces, st = data
    t = failure.verbs(traces, st)
    k = _arm(t, "keys")
    assert (k["pickup_actions"], k["keys_picked_up"]) == (2, 1)
    assert (k["toggle_actions"], k["doors_opened"], k["doors_closed"], k["switches_flipped"],
            k["toggles_nothing"]) == (5, 2, 1, 1, 1)
    assert k["toggle_efficiency"] == pytest.approx(4 / 5)
    w = _arm(t, "walls")
    assert (w["pickup_actions"], w["toggle_actions"]) == (0, 0)
    o = _arm(t, "oracle")
    assert (o["keys_picked_up"], o["doors_opened"], o["switches_flipped"]) == (1, 1, 1)
    assert _arm(t, "all")["pickup_actions"] == 2 + 1


def test_live_switch(data):
    traces, st = data
    t = failure.live_switch(traces, st)
    assert _arm(t, "keys")["stood_on_live_switch"] == 1
    assert _arm(t, "walls")["stood_on_live_switch"] == 0
    assert _arm(t, "oracle")["stood_on_live_switch"] == 1
    a = _arm(t, "all")
    assert (a["episodes_with_live_switch"], a["stood_on_live_switch"], a["solved"]) == (4, 2, 1)


def test_wall_bumps_in_the_last_30_steps(data):
    traces, st = data
    per, summary = failure.last_actions(traces, st)
    w = per[per["arm"] == "walls"].iloc[0]
    assert (w["window"], w["bumps"], w["wall_bumps"]) == (30, 30, 30) and bool(w["wall_bump_majority"])
    k = per[per["arm"] == "keys"].iloc[0]
    # 19 steps; one bump, against the key: a bump but not a wall bump
    assert (k["window"], k["bumps"], k["wall_bumps"]) == (19, 1, 0)
    assert "oracle" not in set(per["arm"])  # solved episodes have no failure window
    a = _arm(summary, "all")
    assert a["failed_episodes"] == 3
    assert a["wall_bump_share"] == pytest.approx((30 + 0 + 1) / (30 + 19 + 8))
    assert a["episodes_wall_bump_majority"] == 1
    assert (a["stalled_episodes"], a["stalled_wall_bump_majority"]) == (3, 1)


def test_quarter_shares(data):
    traces, st = data
    t = failure.quarters(traces, st)
    q = t[t["arm"] == "quarters"].set_index("quarter")
    assert list(q["steps"]) == [2, 2, 2, 2]
    assert list(q["unseen_share"]) == [1.0, 0.0, 0.0, 0.0]
    assert list(q["turn_share"]) == [0.0, 1.0, 0.0, 0.5]
    assert list(q["revisit_share"]) == [0.0, 0.0, 1.0, 0.0]
    assert list(q["bump_share"]) == [0.0, 0.0, 0.0, 0.5]
    assert list(q["wall_bump_share"]) == [0.0, 0.0, 0.0, 0.5]
    k = t[t["arm"] == "keys"]
    assert k["bump_share"].sum() > 0 and k["wall_bump_share"].sum() == 0  # its one bump hit the key
    w = t[t["arm"] == "walls"].set_index("quarter")
    # 35 steps: quarters of 9, 9, 9, 8 steps; the two moves are in the first
    assert list(w["steps"]) == [9, 9, 9, 8]
    assert w.loc[1, "unseen_share"] == pytest.approx(2 / 9) and w.loc[4, "bump_share"] == 1.0


def test_regret_and_horizon(data):
    traces, st = data
    r = failure.regret(traces, st)
    q = _arm(r, "quarters")
    # distances 19 -> 18 21 20 19 18 21 21 20: five down, two up, one unchanged
    assert (q["progress_share"], q["neutral_share"], q["wasted_share"]) == pytest.approx((5 / 8, 1 / 8, 2 / 8))
    assert _arm(r, "oracle")["progress_share"] == 1.0
    h = failure.horizon(traces, st)
    o = h[h["arm"] == "oracle"].set_index("step")["mean_remaining"]
    assert o.iloc[0] == 1.0 and o.iloc[-1] == 0.0 and o.loc[10] == pytest.approx(9 / 19)
    q = h[h["arm"] == "quarters"].set_index("step")["mean_remaining"]
    assert q.loc[2] == pytest.approx(21 / 19)


def test_thinking_after_progress_and_no_progress(data):
    traces, st = data
    t = compute.thinking_after(traces, st)
    q = t[t["arm"] == "quarters"].set_index("after")
    # next-turn tokens after progress steps 1,3,4,5 -> 20,40,50,60; after steps 2,6 (wasted), 7 (neutral)
    assert q.loc["progress", "median_reasoning_tokens"] == 45 and q.loc["progress", "turns"] == 4
    assert q.loc["no progress", "median_reasoning_tokens"] == 70 and q.loc["no progress", "turns"] == 3
    assert q.loc["wasted", "median_reasoning_tokens"] == 50
    assert q.loc["neutral", "median_reasoning_tokens"] == 80


def test_tokens_and_cost_per_solve(data):
    traces, _ = data
    t = compute.tokens(traces)
    q = _arm(t, "quarters")
    assert q["tokens_reasoning"] == sum(THINK) and q["tokens_out"] == 8 * 10
    # 10 output tokens a step: 8 steps is the least spend; the 35-step episode spent 35/8 of it
    assert q["tokens_out_vs_least"] == 1.0 and _arm(t, "walls")["tokens_out_vs_least"] == pytest.approx(35 / 8)
    assert q["cost_per_solve_usd"] != q["cost_per_solve_usd"]  # no solve: no cost per solve
    o = _arm(t, "oracle")
    assert o["solves"] == 1 and o["cost_per_solve_usd"] == pytest.approx(o["cost_usd"])


def test_failure_onset_under_both_definitions(data):
    traces, st = data
    per, summary = failure.onset(traces, st)
    per = per.set_index("arm")
    # distances 19 -> 18 21 20 19 18 21 21 20: only step 1 set a new minimum (step 5 only equalled it);
    # the last never-seen (position, key, mechanisms) was step 2: the turns, the walk back and the bump
    # revisit what the first two steps reached
    q = per.loc["quarters"]
    assert (q["onset_step"], q["novel_onset_step"]) == (1, 2)
    assert (q["onset_share"], q["novel_onset_share"]) == pytest.approx((1 / 8, 2 / 8))
    # forward (closer), forward past the turn to the key (farther), then 33 bumps
    w = per.loc["walls"]
    assert (w["onset_step"], w["novel_onset_step"], w["steps"]) == (1, 2, 35)
    # distances 20 19 18 ... 12 13 12 ... 7: each of its last steps is a new minimum
    assert per.loc["keys", "onset_step"] == 19 and per.loc["keys", "onset_share"] == 1.0
    o = per.loc["oracle"]  # a solve's onset is its last step
    assert o["onset_step"] == o["steps"] and o["onset_share"] == 1.0
    s = summary.set_index("arm")
    assert s.loc["oracle", "unsolved_episodes"] == 0
    a = s.loc["all"]
    assert (a["episodes"], a["unsolved_episodes"]) == (4, 3)
    assert (a["onset_first_half"], a["onset_first_quarter"], a["never_progressed"]) == (2, 2, 0)
    assert s.loc["walls", "median_onset_share"] == pytest.approx(1 / 35)


def test_failure_onset_when_nothing_ever_got_closer(tmp_path):
    maze = env.resolve_maze("example")
    # turning in place on the start cell: the distance never falls below the start's
    row, st = play(maze, ["left", "left", "left"], model_name="spinner")
    traces = load_runs([write_run(tmp_path / "r", [row], st)])
    per, summary = failure.onset(traces, annotate(traces))
    assert per.iloc[0]["onset_step"] == 0 and per.iloc[0]["onset_share"] == 0.0
    assert summary.iloc[0]["never_progressed"] == 1


def test_thinking_after_a_step_that_changed_the_state_or_not(data):
    traces, st = data
    t = compute.thinking_after(traces, st)
    q = t[(t["arm"] == "quarters") & (t["definition"] == "state")].set_index("after")
    # steps 1, 2, 5, 6 moved (next turns 20, 30, 60, 70); 3, 4 turned (40, 50); 7 bumped (80)
    assert q.loc["worked", "turns"] == 4 and q.loc["worked", "median_reasoning_tokens"] == 45
    assert q.loc["achieved nothing", "turns"] == 3 and q.loc["achieved nothing", "median_reasoning_tokens"] == 50
    assert q.loc["turned", "median_reasoning_tokens"] == 45 and q.loc["no change", "median_reasoning_tokens"] == 80
    assert set(t["definition"]) == {"state", "distance"}


def test_thinking_per_quarter(data):
    traces, st = data
    t = compute.thinking_quarters(traces, st)
    q = t[t["arm"] == "quarters"].set_index("quarter")
    assert list(q["turns"]) == [2, 2, 2, 2]
    assert list(q["median_reasoning_tokens"]) == [15, 35, 55, 75]
    assert list(q["reasoning_tokens"]) == [30, 70, 110, 150]


def test_two_runs_with_the_same_episode_ids_count_as_two_episodes(tmp_path):
    maze = env.resolve_maze("example")
    runs = []
    for run in ("first", "second"):
        row, st = play(maze, QUARTERS, run=run, model_name="m", episode_id="same-id", reasoning_tokens=THINK)
        runs.append(write_run(tmp_path / run, [row], st))
    traces = load_runs(runs)
    st = annotate(traces)
    q = failure.quarters(traces, st)
    pooled = q[q["arm"] == "all"].set_index("quarter")
    assert list(pooled["episodes"]) == [2, 2, 2, 2] and list(pooled["steps"]) == [4, 4, 4, 4]
    t = compute.thinking_quarters(traces, st)
    assert list(t[t["arm"] == "all"]["episodes"]) == [2, 2, 2, 2]


def test_the_step_table_reads_no_texts_and_is_deleted_when_closed(data):
    traces, _ = data
    st = annotate(traces)
    columns = set(st.frame().columns)
    assert {"quarter", "unseen", "wall_bump", "next_reasoning"} <= columns
    assert not {"reply", "reasoning", "mechanisms"} & columns
    assert st.folder.is_dir()
    st.close()
    assert not st.folder.exists()
