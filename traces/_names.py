"""The names of a table's files (docs/traces.md#layout): one rule to build and to read them.

``episodes/`` and ``steps/`` hold per-episode files, ``<episode_id>.parquet`` (the driver writes
one of each per finished episode), and compacted files, ``compacted-<gen>-<token>-<part>.parquet``
(``traces._compaction``); hidden names (``.``-prefixed: files being written) and ``_``-prefixed
ones are neither. An exported run keeps each table as shards in ``data/`` instead
(``shard_name``).
"""

from __future__ import annotations

import re

PARQUET = ".parquet"
COMPACTED = "compacted-"


def episode_file(episode_id: str) -> str:
    """The name of an episode's own file in either table."""
    return f"{episode_id}{PARQUET}"


def episode_of(name: str) -> str:
    """The episode id a per-episode file name holds (``is_per_episode(name)`` is assumed)."""
    return name[:-len(PARQUET)]


def compacted_name(gen: int, token: str, part: int) -> str:
    return f"{COMPACTED}{gen:06d}-{token}-{part:04d}{PARQUET}"


def is_compacted(name: str) -> bool:
    return name.startswith(COMPACTED) and name.endswith(PARQUET)


def is_per_episode(name: str) -> bool:
    """A per-episode file: ``<episode_id>.parquet``, not hidden, not compacted."""
    return name.endswith(PARQUET) and not name.startswith((".", "_")) and not is_compacted(name)


# ---- an exported run (docs/export.md): a Hugging Face dataset folder -----------------------------

EXPORT_DATA = "data"  # the folder of an export's shards
_SHARD = re.compile(r"^(?P<table>[a-z]+)-(?P<index>\d{5})-of-(?P<count>\d{5})\.parquet$")


def shard_name(table: str, index: int, count: int) -> str:
    """An export's shard: ``<table>-<index>-of-<count>.parquet`` (the Hub's own naming)."""
    return f"{table}-{index:05d}-of-{count:05d}{PARQUET}"


def shard_of(name: str) -> tuple[str, int, int] | None:
    """(table, index, count) of a shard's name; None for any other name."""
    m = _SHARD.match(name)
    return (m["table"], int(m["index"]), int(m["count"])) if m else None
