"""No prompt tells the model how the maze works.

The study's baseline states the task, the actions relative to the facing direction and where the
mechanisms are, and nothing about how to operate them (its central finding is that models stood
on live switches without finding out what toggle does to them). So no prompt level, no fixed
sentence of a turn and no rendered prompt of any preset or shipped sweep condition may say what
an action does to a kind of object, or where an action must be used.

Observations are left out of the check: a text map describes the visible state (including
"standing on the blue switch" when the agent hides a switch glyph), never what an action does.

The study style is held to what the study's own prompts withheld: its minimal and standard levels
say nothing of how the mechanisms work, its verbose level states the rules. Its text description
(which key opens which door, which switch works which gate) and the outcome record of its text
observations (whose hints tell where to toggle) are part of its observation, checked against the
study's table in tests/agents/test_study_prompt_content.py instead.

A maze's skin names its objects in every prompt text of both styles: a neutral maze's prompts, of
every level, observation, conversation and feedback setting, hold none of the classic words (key,
door, lock, switch, gate, open, closed) and none of the classic frames; the classic skin's prompts
are the ones gridbench always had (the golden prompts of test_agents_prompt.py hold them).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from functools import cache

import pytest

from agents import PRESETS, Protocol, Turn, build_messages
from agents.prompt import LEVELS, fingerprint, icl_episode, instructions, reask_messages, texts
from agents.study_prompt import current_text, initial_maze_text
from agents.study_prompt import texts as study_texts
from env.maze import CLASSIC, SKIN_NAMES
from env.skins import SKINS, with_skin
from env.text import text_projection
from orchestrator.sweep import load_sweep, model_conditions, shipped_sweeps

# the classic skin's kinds and the neutral skin's words for them (env.skins)
KINDS = r"(?:keys?|doors?|switch(?:es)?|gates?|objects?|circles?|dax(?:es)?|wugs?|feps?|zibs?)"
# what a hint looks like: each pattern names the kind of rule it catches
FORBIDDEN = {
    "where an action acts (standing on a cell)": re.compile(r"\b(?:stand|standing|stood|step|stepping)\s+on\b"),
    "where an action acts (the cell in front)": re.compile(
        r"\bin front of\b|\b(?:pickup|pick up|toggle|take|use)\b[^.;\n]{0,60}\b(?:ahead|underfoot|beneath|below)\b"),
    "where an action acts (while/when you ...)": re.compile(
        r"\b(?:while|when|once|if) you(?:'re| are)? (?:stand|face|facing|carry|carrying|hold|holding|are on)\b"),
    "a mechanism's rule (unlocking)": re.compile(r"\bunlock"),
    "a mechanism's rule (present-tense effect)": re.compile(
        r"\b(?:opens|closes|flips|controls|activates|operates|toggles|unlocks)\b"),
    "an object kind with its effect": re.compile(
        rf"\b{KINDS}\b[^.;\n]{{0,60}}\b(?:open|close|flip|control|activate|operate|toggle)s\b"
        rf"|\b{KINDS} (?:can |will |must )?(?:open|close|flip|control|activate|operate|toggle|unlock)\b"),
    "an action named with the object kind it acts on": re.compile(
        rf"\b(?:pickup|pick up|toggle|use)\b[^.;\n]{{0,60}}\b{KINDS}\b"),
    "a colour-matching rule": re.compile(r"\b(?:matching|same) colou?r\b|\bits (?:key|switch|door|gate)\b"),
    "how to use an object": re.compile(rf"\b(?:used? (?:on|with|to)|to use)\b[^.;\n]{{0,40}}\b{KINDS}\b"),
}

# main's prompts before they were made neutral, and hints a future edit might write: the patterns
# must catch every one of them
KNOWN_HINTS = [
    "- pickup: pick up the object in the cell in front of you",
    "- toggle: use the object in front of you or the one you are standing on",
    "the yellow door unlocked and opened at step 7",
    "A key opens the door of its colour.",
    "A switch controls the gate of the same colour.",
    "Toggle while standing on a switch to flip it.",
    "toggle: flip the switch you are on",
    "pickup: take the key ahead of you",
    "toggle: use what is ahead",
    "Switches open gates.",
    "Use a key on a door.",
    "Keys can unlock doors; a key is used to open its door.",
]


def hints(text: str) -> list[str]:
    low = text.lower()
    return [f"{what}: {m.group(0)!r}" for what, pat in FORBIDDEN.items() for m in pat.finditer(low)]


@pytest.mark.parametrize("hint", KNOWN_HINTS)
def test_the_patterns_catch_known_hints(hint):
    assert hints(hint), hint


def _strings(node) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for v in node.values():
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


@pytest.mark.parametrize("skin", SKIN_NAMES)
def test_no_prompt_level_or_turn_sentence_gives_a_hint(skin):
    for level in LEVELS:
        assert hints(instructions(level, skin)) == [], level
    for sentence in _strings(texts(skin)):
        assert hints(sentence) == [], sentence


@pytest.mark.parametrize("skin", SKIN_NAMES)
def test_the_study_style_withholds_the_rules_where_the_study_did_and_states_them_in_verbose(skin):
    t = study_texts(skin)
    for level in ("minimal", "standard"):
        assert hints(t["levels"][level]) == [], level
    # what the verbose level adds is the rules: each kind of hint is there
    verbose = hints(t["levels"]["verbose"])
    assert any("standing on" in h or "while you stand" in h for h in verbose), verbose
    assert any("unlock" in h or "opens" in h or "while you face" in h for h in verbose), verbose
    # the study's probe hints (protocol field hint) state rules by design: in the classic words
    # the patterns catch the interaction rules and the stand-on-it sentence
    if skin == "classic":
        assert hints(t["hint"]["interaction_rules"]) and hints(t["hint"]["interaction_rules_stand"])
    # DROP's rule (actions: with_drop) is a rule of the verbose level, sent with it alone
    assert hints(t["drop_rule"])
    # the fixed sentences outside the observation, its outcome record and the probe hints tell nothing
    told = {k: v for k, v in t.items() if k not in ("levels", "objects", "feedback", "hints", "hint", "drop_rule")}
    for sentence in _strings(told):
        assert hints(sentence) == [], sentence


def test_actions_are_described_only_relative_to_the_facing_direction():
    for level in LEVELS:
        text = instructions(level)
        listed = [line for line in text.splitlines() if line.startswith("- ")]
        described = {line[2:].split(":", 1)[0] for line in listed if ":" in line}
        # only turning and moving get a description; pickup, toggle and done are only named
        assert {"left", "right", "forward"} <= described, level
        assert not described & {"pickup", "toggle", "done"}, level
        assert "relative to the direction you are facing" in text


@cache
def shipped_protocols() -> dict[str, Protocol]:
    """Every preset and every condition of every shipped sweep, as each model runs it."""
    found = {f"preset {name}": p for name, p in PRESETS.items()}
    for name in shipped_sweeps():
        sweep = load_sweep(name)
        for model in sweep.models:
            for cond in model_conditions(model, sweep.conditions):
                found[f"{name}/{model.name}/{cond.name}"] = cond.protocol
    return found


def _variants(p: Protocol) -> dict[str, Protocol]:
    """The protocol as shipped and with the texts it may leave out switched on (the study style:
    its outcome record off, and its verbose level, which states the rules, not checked)."""
    d = p.to_dict()
    if p.style == "study":
        if p.prompt == "verbose" or p.hint != "none":  # stating rules is their point
            return {}
        return {"as shipped, no outcome record": Protocol(**{**d, "feedback": "none"}),
                "multi": Protocol(**{**d, "feedback": "none", "conversation": "multi"})}
    return {
        "as shipped": p,
        "steps_remaining": Protocol(**{**d, "steps_remaining": True}),
        "multi": Protocol(**{**d, "conversation": "multi", "steps_remaining": True}),
    }


def _text(messages) -> str:
    out = []
    for m in messages:
        content = m["content"]
        out += [content] if isinstance(content, str) else [p["text"] for p in content if p["type"] == "text"]
    return "\n".join(out)


def _without_observations(text: str, maze, states) -> str:
    return _without(text, [text_projection(maze, s) for s in states])


def _without(text: str, observations) -> str:
    for seen in observations:
        text = text.replace(seen, "[text map]")
    return text


@pytest.mark.parametrize("skin", SKIN_NAMES)
@pytest.mark.parametrize("name", list(shipped_protocols()))
def test_no_rendered_prompt_of_a_preset_or_shipped_condition_gives_a_hint(name, skin, example_maze, walk,
                                                                          midway_actions):
    if shipped_protocols()[name].render.is_3d and skin != CLASSIC:
        pytest.skip("the 3D frames draw the classic skin only: a sweep asking for both is refused at load")
    # key taken, door unlocked, switch on, then off again: the summary holds every kind of event
    example_maze = with_skin(example_maze, skin)
    history, state = walk(example_maze, [*midway_actions, 4])
    icl_maze, icl_states, _ = icl_episode()
    icl_maze = with_skin(icl_maze, skin)
    for variant, protocol in _variants(shipped_protocols()[name]).items():
        for past, now in (((), history[0].state_before), (history, state)):
            turn = Turn(example_maze, protocol, len(past) + 1, now, past, 57)
            messages = build_messages(turn)
            asked_again = reask_messages(messages, "I am not sure.")
            text = _text(asked_again)
            if protocol.style == "study":
                states = [h.state_before for h in past] + [now]
                text = _without(text, [initial_maze_text(example_maze)] + [current_text(example_maze, s) for s in states])
            else:
                text = _without_observations(text, example_maze, [h.state_before for h in past] + [now])
                text = _without_observations(text, icl_maze, icl_states)
            assert "[text map]" in text or not protocol.uses_text, (name, variant)
            assert hints(text) == [], (name, variant, len(past))
            if protocol.steps_remaining:
                assert "steps left" in text


# ---- a maze's skin names its objects (docs/variants.md#reskin) -------------------------------------

CLASSIC_WORDS = re.compile(r"\b(?:keys?|doors?|locked|unlock\w*|switch(?:es)?|gates?|opens?|opened|closed?)\b",
                           re.IGNORECASE)


def protocols(style: str) -> list[Protocol]:
    """Every prompt level, observation and conversation of a style, with every text it can add."""
    if style == "gridbench":
        return [Protocol(prompt=level, observation=obs, conversation=conv, steps_remaining=True, icl_example=True,
                         mechanism_locations=True, start_info=True, history_frames=2)
                for level, obs, conv in itertools.product(LEVELS, ("image", "text", "image+text"), ("single", "multi"))]
    base = PRESETS["study-baseline"].to_dict()
    return [Protocol(**{**base, "prompt": level, "observation": obs, "conversation": conv, "feedback": feedback})
            for level, obs, conv, feedback in itertools.product(
                ("minimal", "standard", "verbose"), ("image", "text", "image+text"), ("single", "multi"),
                ("none", "outcome", "hints"))]


@pytest.mark.parametrize("skin", SKIN_NAMES)
def test_every_fixed_text_has_every_word_in_every_skin(skin):
    nouns = {one for one, _ in SKINS[skin].nouns.values()}
    every = [*(instructions(level, skin) for level in LEVELS), *_strings(texts(skin)), *_strings(study_texts(skin))]
    assert not [t for t in every if "$" in t]
    if skin != "classic":
        # {switches} is a format field (the switches' ids), not a word of the text
        assert not [t for t in every if CLASSIC_WORDS.search(re.sub(r"\{\w+\}", "", t))]
        assert {"dax", "wug", "fep", "zib"} <= nouns and any("dax" in t for t in every)


@pytest.mark.parametrize("style", ["gridbench", "study"])
def test_a_neutral_maze_is_named_in_its_own_words_and_drawn_in_its_own_glyphs(style, example_maze, walk):
    # the key taken, the door opened, the switch on and off and on: every event phrase is said
    actions = [2, 1, 2, 3, 0, 2, 4, 2, 2, 0, 2, 4, 4, 4, 1, 1, 5]
    neutral = with_skin(example_maze, "neutral")
    for protocol in protocols(style):
        seen = {}
        for maze in (example_maze, neutral):
            history, state = walk(maze, actions)
            turn = Turn(maze, protocol, len(history) + 1, state, history, 57)
            messages = reask_messages(build_messages(turn), "not sure")
            seen[maze.skin] = (_text(messages), set(fingerprint(messages)[1]))
        text, images = seen["neutral"]
        assert not CLASSIC_WORDS.search(text), (protocol, CLASSIC_WORDS.search(text))
        if protocol.uses_text or protocol.prompt in ("standard", "detailed", "verbose") or protocol.summarised:
            assert re.search(r"\b(?:dax|wug|fep|zib)", text), protocol
        assert CLASSIC_WORDS.search(seen["classic"][0]) or protocol.prompt == "minimal", protocol
        if protocol.uses_image:
            assert images and not images & seen["classic"][1], protocol
