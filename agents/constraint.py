"""Constrained decoding (the protocol's ``constrain``): the replies a model is allowed to generate.

``action``: the reply is one answer line and nothing else, ``ACTION: <name>`` in the gridbench
style, ``FINAL_OUTPUT: <TOKEN>`` in the study style (one token of the protocol's action space,
``DROP`` among them where the protocol offers it).
``reasoning+action``: any lines of free text, then that answer line as the last line. The free
text holds no ``<``, so it cannot open a reasoning block (``<think>``) that the gridbench parser
would cut the answer off with. Either way every reply the engine lets through is one the
protocol's parser reads as ``exact``; only a reply cut off by the output cap is not.

Each engine takes the same set of replies in its own form: llama.cpp (llama-cpp-python's server)
a GBNF grammar in the request's ``grammar`` field (``gbnf``), vLLM ``structured_outputs`` with
the answer lines as a ``choice`` list or with a ``regex`` (``answer_lines``, ``regex``).
``agents.providers`` decides which one a model's requests carry, and refuses the option where a
provider has none; all three forms are built from the parser's own answer line (``agents.parse``).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Literal

from agents.actions import tokens_of
from agents.parse import ACTION_LABEL, SENTINEL
from env.state import SIX_ACTIONS

if TYPE_CHECKING:
    from agents.protocol import Protocol

Constrain = Literal["none", "action", "reasoning+action"]
# a line of the free text before the answer: anything but "<" and a line break
_FREE_LINE_GBNF = r'[^<\n]* "\n"'
_FREE_LINE_REGEX = r"[^<\n]*\n"
_PLAIN = re.compile(r"[A-Za-z_: ]+")


def answer_lines(protocol: Protocol) -> tuple[str, ...]:
    """Every answer line the protocol's parser reads as an exact action."""
    if protocol.style == "study":
        return tuple(f"{SENTINEL}: {token}" for token in tokens_of(protocol.action_space, protocol.drop))
    return tuple(ACTION_LABEL + name for name in SIX_ACTIONS)


def gbnf(protocol: Protocol) -> str:
    """The protocol's replies as a GBNF grammar (llama.cpp)."""
    # a JSON string literal is a GBNF string literal for these plain ASCII lines
    answer = " | ".join(json.dumps(line) for line in answer_lines(protocol))
    if protocol.constrain == "action":
        return f"root ::= {answer}\n"
    return f"root ::= line* answer\nline ::= {_FREE_LINE_GBNF}\nanswer ::= {answer}\n"


def regex(protocol: Protocol) -> str:
    """The protocol's replies as one regular expression, matched against the whole reply. Only
    plain groups and a character class: the subset every engine's regex dialect shares."""
    lines = answer_lines(protocol)
    assert all(_PLAIN.fullmatch(line) for line in lines), lines  # nothing in them needs escaping
    answer = "(" + "|".join(lines) + ")"
    return answer if protocol.constrain == "action" else f"({_FREE_LINE_REGEX})*{answer}"
