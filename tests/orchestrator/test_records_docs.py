"""The column tables of docs/traces.md are the records' own declaration, and the Parquet schemas
are derived from the same records."""

from __future__ import annotations

import re
from pathlib import Path

from traces import EpisodeRecord, StepRecord
from traces._records import markdown_table
from traces._schema import EPISODES, STEPS

DOC = Path(__file__).resolve().parents[2] / "docs" / "traces.md"


def documented(table: str) -> str:
    found = re.search(rf"<!-- columns: {table} .*?-->\n(.*?)<!-- /columns -->", DOC.read_text(), re.DOTALL)
    assert found, f"docs/traces.md has no generated column table for {table}"
    return found.group(1)


def test_the_docs_tables_are_generated_from_the_records():
    assert documented("episodes") == markdown_table(EpisodeRecord), "run python -m traces"
    assert documented("steps") == markdown_table(StepRecord), "run python -m traces"


def test_the_schemas_are_the_records_columns_and_nothing_else():
    assert EPISODES.names == [c.name for c in EpisodeRecord.columns()]
    assert STEPS.names == [c.name for c in StepRecord.columns()]
    assert len(set(EPISODES.names)) == len(EPISODES.names) and len(set(STEPS.names)) == len(STEPS.names)
    # the usage record is declared once and flattened into both tables
    for name in ("tokens_in", "tokens_out", "tokens_reasoning", "tokens_cached", "cost_usd", "retries", "reasks"):
        assert name in EPISODES.names and name in STEPS.names
    assert "latency_s" in STEPS.names and "model_latency_s" in EPISODES.names
