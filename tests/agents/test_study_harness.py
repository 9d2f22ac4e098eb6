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
