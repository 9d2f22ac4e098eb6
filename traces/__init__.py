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
- sharing a run: ``export_run`` (an ``ExportResult``): a Hugging Face dataset folder that every
  reader reads as the run (``is_export`` tells one; docs/export.md);
- the manifest: ``MANIFEST``, ``read_manifest``, ``write_manifest``, ``git_info`` (the commit it records),
  ``run_seal`` (the sealed set a run drew on, docs/sealed.md);
- durable steps: ``Journals``, the journal files of a run's unfinished episodes.

Every module behind this face is private. Names load on first use, and reading a run imports
pyarrow and the records only: never Ray, gymnasium, Minigrid, litellm or the oracle
(``tests/test_traces_import.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from env.lazy import lazy_face

_FACE = {
    "traces._codec": ("episode_timelines", "mechanisms_json", "recorded_state"),
    "traces._compaction": ("CompactionResult", "compact", "extract"),
    "traces._export": ("ExportResult", "export_run"),
    "traces._journal": ("Journals",),
    "traces._manifest": ("MANIFEST", "git_info", "read_manifest", "run_seal", "write_manifest"),
    "traces._records": (
        "ENDINGS", "ERROR", "Ending", "EpisodeIdentity", "EpisodeRecord", "HoldsEpisode", "MazeSummary",
        "StepRecord", "Termination",
    ),
    "traces._schema": ("EPISODES_DIR", "STEPS_DIR"),
    "traces._store": ("RunStore", "cache_home", "is_uri", "open_store"),
    "traces._tables": (
        "EncodedEpisode", "clean_partial", "completed_ids", "encode_episode", "episodes_frame", "is_export",
        "read_episode", "read_episodes", "read_run", "read_table", "trace_dataset", "write_episode",
    ),
}
if TYPE_CHECKING:  # the table as imports, for the type checker (env.lazy says why)
    from traces._codec import episode_timelines, mechanisms_json, recorded_state  # noqa: F401
    from traces._compaction import CompactionResult, compact, extract  # noqa: F401
    from traces._export import ExportResult, export_run  # noqa: F401
    from traces._journal import Journals  # noqa: F401
    from traces._manifest import MANIFEST, git_info, read_manifest, run_seal, write_manifest  # noqa: F401
    from traces._records import (  # noqa: F401
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
    from traces._schema import EPISODES_DIR, STEPS_DIR  # noqa: F401
    from traces._store import RunStore, cache_home, is_uri, open_store  # noqa: F401
    from traces._tables import (  # noqa: F401
        EncodedEpisode,
        clean_partial,
        completed_ids,
        encode_episode,
        episodes_frame,
        is_export,
        read_episode,
        read_episodes,
        read_run,
        read_table,
        trace_dataset,
        write_episode,
    )
else:
    __getattr__, __dir__, __all__ = lazy_face(__name__, _FACE)
