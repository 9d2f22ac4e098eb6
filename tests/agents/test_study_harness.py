"""The study's revised harness as protocol fields of the study style (docs/protocol.md, "The
revised harness"): each field's rendering held by a golden prompt, its validation, its re-query
wording through the real querying loop, and the promise that protocols from before the fields
keep their JSON, hash and episode ids."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from pathlib import Path

import pytest

from agents import PRESETS, Turn
from agents.prompt import render_for_humans
from agents.protocol import LATER_FIELDS, Protocol, resolve_protocol
from agents.study_agent import StudyPolicy
from agents.study_prompt import build_study_messages, corrective_requery, texts
from agents.transport import Completion
from agents.usage import Budget
from env.errors import BadInput

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("GRIDBENCH_UPDATE_GOLDEN") == "1"
FINAL = PRESETS["study-final"].model_dump()
# the image+text observation of the study-final cell: where moves_remaining and the feedback
# levels show (an image-only request has no text record and no text description)
WITH_TEXT = {**FINAL, "observation": "image+text"}

VARIANTS = {
    **{f"study-hint-{h}": Protocol(**{**FINAL, "hint": h})
       for h in ("switch", "state_change", "interaction_rules", "interaction_rules_stand")},
    "study-moves-remaining": Protocol(**{**WITH_TEXT, "moves_remaining": True}),
    **{f"study-feedback-{f}": Protocol(**{**WITH_TEXT, "feedback": f}) for f in ("minimal", "outcome", "hints")},
    "study-actions-with_drop": Protocol(**{**FINAL, "actions": "with_drop"}),
}


def _turn(maze, history, state, protocol):
    return Turn(maze, protocol, len(history) + 1, state, history, 57)


def _golden(name: str, rendered: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if UPDATE or not path.exists():
        path.write_text(rendered)
    assert rendered == path.read_text(), f"prompt changed; GRIDBENCH_UPDATE_GOLDEN=1 rewrites {path.name}"


@pytest.mark.parametrize("name", list(VARIANTS))
def test_golden_prompt_of_each_revised_field(name, example_maze, example_midway):
    history, state = example_midway
    _golden(name, render_for_humans(build_study_messages(_turn(example_maze, history, state, VARIANTS[name]))))


def test_golden_corrective_requery(example_maze, example_midway):
    history, state = example_midway
    protocol = Protocol(**{**FINAL, "requery": "corrective"})
    messages = build_study_messages(_turn(example_maze, history, state, protocol))
    _golden("study-requery-corrective", render_for_humans(corrective_requery(messages, protocol)))


def test_each_field_changes_only_its_own_part(example_maze, example_midway):
    history, state = example_midway
    plain = build_study_messages(_turn(example_maze, history, state, PRESETS["study-final"]))
    for h in ("switch", "state_change", "interaction_rules", "interaction_rules_stand"):
        hinted = build_study_messages(_turn(example_maze, history, state, VARIANTS[f"study-hint-{h}"]))
        assert hinted[1:] == plain[1:]
        assert hinted[0]["content"] == plain[0]["content"] + "\n" + texts()["hint"][h]
    with_text = build_study_messages(_turn(example_maze, history, state, Protocol(**WITH_TEXT)))
    counted = build_study_messages(_turn(example_maze, history, state, VARIANTS["study-moves-remaining"]))
    assert counted[0] == with_text[0]
    last_text = counted[1]["content"][-1]["text"]
    assert f"Moves remaining: {57 - len(history)}." in last_text
    assert last_text.replace(f"\nMoves remaining: {57 - len(history)}.", "") == with_text[1]["content"][-1]["text"]


def test_minimal_feedback_is_the_bare_event_word(example_maze, example_midway):
    history, state = example_midway
    record = [p["text"] for p in build_study_messages(
        _turn(example_maze, history, state, VARIANTS["study-feedback-minimal"]))[1]["content"]
        if p["type"] == "text" and "Outcome:" in p["text"]]
    outcomes = [line.rsplit("Outcome: ", 1)[1] for line in record[0].splitlines() if "Outcome:" in line]
    assert len(outcomes) == 3
    assert all(o in {"MOVED", "TURNED", "BLOCKED", "PICKUP", "NOTHING", "OPENED", "TOGGLED", "WRONG DONE"}
               for o in outcomes)


def test_protocols_without_the_new_fields_keep_their_json_and_hash():
    for name, preset in PRESETS.items():
        full = preset.model_dump(mode="json")
        assert all(full[k] == v for k, v in LATER_FIELDS.items()), name
        older = {k: v for k, v in full.items() if k not in LATER_FIELDS}
        text = json.dumps(older, sort_keys=True, separators=(",", ":"))
        assert preset.to_json() == text
        assert preset.hash == hashlib.sha256(text.encode()).hexdigest()[:16]
    revised = resolve_protocol({"preset": "study-final", "hint": "switch", "moves_remaining": False})
    assert json.loads(revised.to_json())["hint"] == "switch" and "moves_remaining" not in revised.to_dict()
    assert revised.hash != PRESETS["study-final"].hash
    assert revised.changed_fields(PRESETS["study-final"]) == ["hint"]
    # a recorded protocol reads back to the same protocol
    assert Protocol(**json.loads(revised.to_json())) == revised


@pytest.mark.parametrize("fields, field", [
    ({"preset": "study-final", "prompt": "standard", "hint": "switch"}, "hint"),
    ({"preset": "study-final", "moves_remaining": True}, "moves_remaining"),  # image only
    ({"preset": "study-final", "invalid_output": "noop", "requery": "corrective"}, "requery"),
    ({"preset": "gridbench-final", "hint": "switch"}, "hint"),
    ({"preset": "study-final", "hint": "stand"}, "hint"),
    ({"preset": "gridbench-final", "actions": "with_drop"}, "actions"),  # the study style's field
    ({"preset": "study-final", "actions": "drop"}, "actions"),
])
def test_a_field_that_does_not_fit_is_refused_by_name(fields, field):
    with pytest.raises(BadInput) as err:
        resolve_protocol(fields)
    assert err.value.field == field


@pytest.mark.parametrize("requery", ["plain", "corrective"])
def test_a_requery_is_byte_identical_or_adds_one_corrective_line(requery, example_maze, example_midway):
    history, state = example_midway
    protocol = resolve_protocol({"preset": "study-final", "requery": requery})
    sent: list[list[dict]] = []
    replies = iter(["I would rather think about it.", "FINAL_OUTPUT: MOVE_FORWARD"])

    class Model:  # what the policy asks of its model (agents.policy.Model): the messages it sends, recorded
        budget, marks_cache, count_tokens = Budget(), False, len

        async def call(self, messages):
            sent.append(messages)
            return Completion(reply=next(replies))

    decision = asyncio.run(StudyPolicy(Model()).act(_turn(example_maze, history, state, protocol)))
    assert decision.action is not None and decision.usage.reasks == 1
    first, second = sent
    if requery == "plain":
        assert second == first
    else:
        assert second[:-1] == first[:-1]
        assert second[-1]["content"][:-1] == first[-1]["content"]
        assert "FINAL_OUTPUT" in second[-1]["content"][-1]["text"]


def test_a_past_query_of_a_multi_turn_chat_shows_its_own_moves_remaining(example_maze, example_midway):
    from agents.types import PastQuery

    history, state = example_midway
    protocol = Protocol(**{**WITH_TEXT, "moves_remaining": True, "conversation": "multi", "history_frames": 2})
    chat = [PastQuery(h.state_before, "FINAL_OUTPUT: MOVE_FORWARD", h.step) for h in history]
    messages = build_study_messages(_turn(example_maze, history, state, protocol), chat)
    users = [m for m in messages if m["role"] == "user"]
    shown = [next(p["text"] for p in reversed(m["content"]) if p["type"] == "text") for m in users]
    # the last two past queries (steps 11 and 12) and the current one (step 13), cap 57
    assert [line for t in shown for line in t.splitlines() if line.startswith("Moves remaining")] == \
        ["Moves remaining: 47.", "Moves remaining: 46.", "Moves remaining: 45."]


def test_a_short_multi_turn_chat_keeps_every_past_query(example_maze, example_midway):
    """Fewer past queries than ``history_frames``: the chat keeps each of them (the window was cut
    from ``len(chat) - history_frames``, a negative index that dropped the oldest ones)."""
    from agents.types import PastQuery

    history, _ = example_midway
    protocol = Protocol(**{**WITH_TEXT, "conversation": "multi", "history_frames": 3})
    for taken in range(0, 5):
        chat = [PastQuery(h.state_before, "FINAL_OUTPUT: MOVE_FORWARD", h.step) for h in history[:taken]]
        messages = build_study_messages(_turn(example_maze, history[:taken], history[taken].state_before, protocol), chat)
        assert sum(m["role"] == "assistant" for m in messages) == min(taken, 3), taken


# ---- actions: with_drop ----------------------------------------------------------------------
DECOY = "study/r1_D2_8x8_corridor_wrong_ky_inactive_sb_sg_kr_1"


def test_golden_drop_in_the_verbose_rules_the_summary_and_the_text_record(walk):
    """A multinet-r1 maze where the agent took the decoy key, tried DROP on a switch (nothing put
    down) and put the key down further on: the action list, the verbose level's DROP rule, the
    summary's drop event and the text record's outcomes."""
    import env
    from env.state import DROP, FORWARD, LEFT, PICKUP, RIGHT

    maze = env.resolve_maze(DECOY)
    F = FORWARD
    history, state = walk(maze, [RIGHT, F, F, PICKUP, LEFT, LEFT, F, DROP, LEFT, LEFT, F, F, DROP])
    events = [p.event for p in history]
    assert events[3] == "pickup" and events[7] == "noop" and events[-1] == "drop"  # not on the switch
    protocol = resolve_protocol({"preset": "study-baseline", "prompt": "verbose", "actions": "with_drop",
                                 "feedback": "outcome", "context": "summary+recent", "history_frames": 6})
    _golden("study-actions-with_drop-verbose",
            render_for_humans(build_study_messages(_turn(maze, history, state, protocol))))


def test_drop_is_offered_listed_and_read_only_with_drop():
    from agents.actions import tokens_of
    from agents.constraint import answer_lines
    from agents.parse import parse_study
    from env.state import DROP

    plain, dropping = PRESETS["study-final"], Protocol(**{**FINAL, "actions": "with_drop"})
    assert plain.offered == tuple(range(6)) and dropping.offered == tuple(range(7)) and DROP == 6
    assert "actions" not in plain.to_dict() and dropping.to_dict()["actions"] == "with_drop"
    assert dropping.changed_fields(plain) == ["actions"]
    assert tokens_of("egocentric", True) == ("TURN_LEFT", "TURN_RIGHT", "MOVE_FORWARD", "PICKUP", "DROP",
                                            "TOGGLE", "DONE")  # where the study listed it
    assert tokens_of("cardinal", True)[4:6] == ("PICKUP", "DROP")
    system = build_study_messages(_turn(env_example(), (), env_start(), dropping))[0]["content"]
    assert "PICKUP, DROP, TOGGLE" in system
    assert "DROP" not in build_study_messages(_turn(env_example(), (), env_start(), plain))[0]["content"]
    # the answer line names DROP only where it is offered; the fallback never reads it
    assert parse_study("FINAL_OUTPUT: DROP").status == "invalid"
    assert parse_study("FINAL_OUTPUT: DROP", drop=True).tokens == ("DROP",)
    assert parse_study("I will drop the key.", drop=True).tokens == ()
    assert parse_study("FINAL_OUTPUT: MOVE_NORTH, DROP", action_space="cardinal", querying="trajectory",
                       drop=True).tokens == ("MOVE_NORTH", "DROP")
    assert "FINAL_OUTPUT: DROP" in answer_lines(Protocol(**{**FINAL, "actions": "with_drop", "constrain": "action"}))
    assert "FINAL_OUTPUT: DROP" not in answer_lines(Protocol(**{**FINAL, "constrain": "action"}))


def test_a_drop_reply_becomes_the_drop_step(example_maze):
    import env

    protocol = Protocol(**{**FINAL, "actions": "with_drop"})

    class Model:  # what the policy asks of its model (agents.policy.Model)
        budget, marks_cache, count_tokens = Budget(), False, len

        async def call(self, messages):
            return Completion(reply="FINAL_OUTPUT: DROP")

    turn = _turn(example_maze, (), env.initial_state(example_maze), protocol)
    decision = asyncio.run(StudyPolicy(Model()).act(turn))
    assert decision.action == env.ACTIONS.index("drop") and decision.token == "DROP"


def env_example():
    import env

    return env.resolve_maze("example")


def env_start():
    import env

    return env.initial_state(env_example())
