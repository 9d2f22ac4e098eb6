"""Every condition of the study sweeps (`main`, `ablation`) renders what the study's harness sent
and nothing it did not, checked against a table written from the study's protocol fact sheet
(PROTOCOL.md §1-§3 of the study-r1 notes; docs/protocol.md, "The study's protocol").

Each row: images in one request, and whether the request holds the text description's object
lines, the initial maze (its wall list), the rules, (row, col) coordinates, the activity summary,
the text record of recent steps with their outcomes, the one-shot example, the line naming the
mechanism kinds; the sentinel always, step numbers never.
"""

from __future__ import annotations

import re

import pytest

from agents import Turn, build_messages
from agents.study_prompt import build_study_messages, texts
from agents.types import PastQuery
from orchestrator.sweep import load_sweep, model_conditions

# recent steps shown in a request: the last 3 (the episode below has taken more)
RECENT = 3
EXPECTED = {
    # condition: images, objects, walls, rules, coords, summary, record, example, kinds
    "main": (RECENT + 1, False, False, False, True, True, False, False, False),
    "cond_prompt.standard": (1 + RECENT + 1, True, True, False, True, False, True, True, True),
    "cond_prompt.minimal": (1 + RECENT + 1, True, True, False, True, False, True, True, False),
    "cond_prompt.verbose": (1 + RECENT + 1, True, True, True, True, False, True, True, True),
    # image only: no text at all about where the agent is, not even in the summary (there is none)
    "obs_image_only": (1 + RECENT + 1, False, False, False, False, False, False, True, True),
    "ctx_current": (1 + 1, True, True, False, True, False, False, True, True),
    "ctx_text_summary": (1 + 1, True, True, False, True, True, False, True, True),
    "act_cardinal": (1 + RECENT + 1, True, True, False, True, False, True, True, True),
    "qry_subgoal": (1 + RECENT + 1, True, True, False, True, False, True, True, True),
    "qry_full_trajectory": (1 + RECENT + 1, True, True, False, True, False, True, True, True),
    "icl_zero_shot": (RECENT + 1, True, True, False, True, False, True, False, True),
    # the chat is the history: 3 past queries with their own frames, the example on this turn only
    "hist_multiturn": (RECENT + 1 + 1, True, True, False, True, False, False, True, True),
    "baseline_thinking": (1 + RECENT + 1, True, True, False, True, False, True, True, True),
}


def cases():
    for sweep_name in ("main", "ablation"):
        sweep = load_sweep(sweep_name)
        for model in sweep.models:
            for cond in model_conditions(model, sweep.conditions):
                key = "main" if sweep_name == "main" else cond.name
                yield pytest.param(cond.protocol, EXPECTED[key], id=f"{sweep_name}/{model.name}/{cond.name}")


def test_the_table_covers_every_condition_of_the_study_sweeps():
    names = {c.name for c in load_sweep("ablation").conditions}
    assert names == set(EXPECTED) - {"main"} and len(names) == 12


def _texts(messages) -> str:
    out = []
    for m in messages:
        content = m["content"]
        out += [content] if isinstance(content, str) else [p["text"] for p in content if p["type"] == "text"]
    return "\n".join(out)


def _images(messages) -> int:
    return sum(1 for m in messages if isinstance(m["content"], list) for p in m["content"]
               if p["type"] == "image_url")


@pytest.mark.parametrize("protocol, expected", list(cases()))
def test_a_mid_episode_request_holds_what_the_study_sent(protocol, expected, example_maze, walk, midway_actions):
    images, objects, walls, rules, coords, summary, record, example, kinds = expected
    history, state = walk(example_maze, midway_actions)
    assert len(history) > RECENT
    turn = Turn(example_maze, protocol, len(history) + 1, state, history, 57)
    if protocol.conversation == "multi":
        # the agent's chat of its past queries (agents.study_agent keeps it): more than it shows
        chat = [PastQuery(h.state_before, "FINAL_OUTPUT: MOVE_FORWARD") for h in history]
        messages = build_study_messages(turn, chat)
        assert [m["role"] for m in messages] == ["system", *["user", "assistant"] * RECENT, "user"]
    else:
        messages = build_messages(turn)
        assert [m["role"] for m in messages] == ["system", "user"]
    text = _texts(messages)
    t = texts()
    assert _images(messages) == (images if protocol.uses_image else 0)
    assert ("What the maze holds at this step" in text) is objects
    assert ("Wall cells inside the outer wall" in text) is walls
    assert ("How the maze works" in text) is rules
    assert bool(re.search(r"\(\d+, \d+\)", text)) is coords
    assert (t["summary_header"] in text or t["summary_none"] in text) is summary
    assert ("Outcome: " in text) is record
    assert (t["one_shot_intro"] in text) is example
    assert ("Keys, doors, switches and gates may be part of the maze" in text) is kinds
    assert "FINAL_OUTPUT" in text and not re.search(r"\bstep \d+", text, re.IGNORECASE)
    tokens = ("MOVE_NORTH", "INTERACT") if protocol.action_space == "cardinal" else ("TURN_LEFT", "TOGGLE")
    assert all(tok in text for tok in tokens)
    assert ("SUB_GOAL" in text) is (protocol.querying == "subgoal")


def test_the_one_shot_list_is_the_studys_and_does_not_solve_its_maze_under_the_studys_rules():
    """docs/protocol.md, "The one-shot example": shown as the study showed it, defect and all."""
    from agents.actions import EGOCENTRIC_TOKENS
    from agents.study_example import example
    from env.maze import MULTINET_R1
    from env.state import initial_state, step

    maze, actions = example()
    assert maze.ruleset == MULTINET_R1 and len(actions) == 51 and actions[-1] == "DONE"
    state, events = initial_state(maze), []
    for token in actions:
        state, event = step(maze, state, EGOCENTRIC_TOKENS.index(token))
        events.append(event)
    # the 18th action picks the key up from the cell in front, the 30th toggles from in front
    assert events[17] == "noop" and events[29] == "noop" and "goal" not in events
    assert state.pos == (5, 7)
