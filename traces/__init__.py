"""The run format (docs/design.md §7): what a run's folder holds and how it is written and read.

Public API::

    from traces import read_run, trace_dataset, read_episodes, completed_ids, read_manifest
    episodes, steps = read_run("results/quickstart")          # DataFrames with the fixed schemas
    data = trace_dataset("s3://bucket/results/main", "steps")  # a lazy Arrow dataset, exact at every moment

- records: ``StepRecord``, ``EpisodeRecord`` and their nested parts ``EpisodeIdentity``,
  ``MazeSummary`` (``HoldsEpisode`` for anything carrying an episode's record); the outcome
  vocabulary of the ``termination`` column: ``Ending`` (a model's outcomes, ``ENDINGS``),
  ``ERROR`` and ``Termination`` (either);
- tables: ``EPISODES_DIR``, ``STEPS_DIR`` (their schemas: ``EpisodeRecord.schema()``,
  ``StepRecord.schema()``); the column codec ``mechanisms_json`` / ``recorded_state``, and ``episode_timelines`` (an
  episode's discovery timelines from its step rows);
- storage: ``RunStore`` (a local folder or an ``s3://``/``gs://`` prefix), ``open_store``, ``is_uri``;
  ``cache_home`` (gridbench's folder under ``$XDG_CACHE_HOME``);
- writing: ``encode_episode`` (an ``EncodedEpisode``), ``write_episode``, ``episodes_frame``;
- reading: ``trace_dataset``, ``read_table``, ``read_run``, ``read_episodes``, ``read_episode``,
  ``completed_ids``;
- keeping a run exact: ``clean_partial``, ``compact`` (a ``CompactionResult``), ``extract``;
- the manifest: ``MANIFEST``, ``read_manifest``, ``write_manifest``, ``git_info`` (the commit it records);
- durable steps: ``Journals``, the journal files of a run's unfinished episodes.

Every module behind this face is private. Names load on first use, and reading a run imports
pyarrow and the records only: never Ray, gymnasium, Minigrid, litellm or the oracle
(``tests/test_traces_import.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from traces._codec import episode_timelines, mechanisms_json, recorded_state
    from traces._compaction import CompactionResult, compact, extract
    from traces._journal import Journals
    from traces._manifest import MANIFEST, git_info, read_manifest, write_manifest
    from traces._records import (
        ENDINGS,
        ERROR,
        Ending,
        EpisodeIdentity,
        EpisodeRecord,
        HoldsEpisode,
        MazeSummary,
        StepRecord,
        Termination,
    )
    from traces._schema import EPISODES_DIR, STEPS_DIR
    from traces._store import RunStore, cache_home, is_uri, open_store
    from traces._tables import (
        EncodedEpisode,
        clean_partial,
        completed_ids,
        encode_episode,
        episodes_frame,
        read_episode,
        read_episodes,
        read_run,
        read_table,
        trace_dataset,
        write_episode,
    )

_HOMES = {
    **dict.fromkeys(("episode_timelines", "mechanisms_json", "recorded_state"), "traces._codec"),
    **dict.fromkeys(("CompactionResult", "compact", "extract"), "traces._compaction"),
    "Journals": "traces._journal",
    **dict.fromkeys(("MANIFEST", "git_info", "read_manifest", "write_manifest"), "traces._manifest"),
    **dict.fromkeys(("ENDINGS", "ERROR", "Ending", "EpisodeIdentity", "EpisodeRecord", "HoldsEpisode", "MazeSummary",
                     "StepRecord", "Termination"), "traces._records"),
    **dict.fromkeys(("EPISODES_DIR", "STEPS_DIR"), "traces._schema"),
    **dict.fromkeys(("RunStore", "cache_home", "is_uri", "open_store"), "traces._store"),
    **dict.fromkeys(("EncodedEpisode", "clean_partial", "completed_ids", "encode_episode", "episodes_frame",
                     "read_episode", "read_episodes", "read_run", "read_table", "trace_dataset", "write_episode"),
                    "traces._tables"),
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'traces' has no attribute {name!r}")


__all__ = [
    "ENDINGS", "ERROR", "Ending", "Termination", "EPISODES_DIR", "MANIFEST", "STEPS_DIR", "CompactionResult", "EncodedEpisode", "EpisodeIdentity",
    "EpisodeRecord", "HoldsEpisode", "Journals", "MazeSummary", "RunStore", "StepRecord",
    "cache_home", "clean_partial", "compact", "completed_ids", "encode_episode", "episode_timelines", "episodes_frame",
    "extract", "git_info", "is_uri",
    "mechanisms_json", "open_store", "read_episode", "read_episodes", "read_manifest", "read_run", "read_table",
    "recorded_state", "trace_dataset", "write_episode", "write_manifest",
]
