from pathlib import Path

import pytest
import yaml

from agents import parse_action
from env.state import ACTIONS, SIX_ACTIONS

CORPUS = yaml.safe_load((Path(__file__).parent / "parse_corpus.yaml").read_text())


def test_corpus_is_large_and_covers_every_status():
    assert len(CORPUS) >= 60
    for status in ("exact", "lenient", "invalid"):
        assert sum(e["status"] == status for e in CORPUS) >= 12


@pytest.mark.parametrize("entry", CORPUS, ids=[f"{i}-{e['status']}" for i, e in enumerate(CORPUS)])
def test_corpus_reply_parses_as_expected(entry):
    expected = ACTIONS.index(entry["action"]) if entry["action"] else None
    assert parse_action(entry["reply"]) == (expected, entry["status"])


def test_none_and_every_exact_name():
    assert parse_action(None) == (None, "invalid")
    for i, name in enumerate(SIX_ACTIONS):
        assert parse_action(f"reasoning\nACTION: {name}") == (i, "exact")
    # the gridbench style offers no drop (actions: with_drop is the study style's)
    assert parse_action("ACTION: drop") == (None, "invalid")


def test_only_the_last_line_counts():
    # reasoning that names other actions before the answer does not make the reply ambiguous
    reply = "ACTION: left was my first idea.\nThen maybe toggle.\nACTION: pickup"
    assert parse_action(reply) == (ACTIONS.index("pickup"), "exact")
    assert parse_action("ACTION: pickup\nACTION: left or toggle") == (None, "invalid")
