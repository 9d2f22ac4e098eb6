"""The fixed Parquet schemas of the traces, derived from the records of ``orchestrator.records``.

Every episodes file and every steps file is written with exactly these schemas, so a folder of
them reads as one table: ``pd.read_parquet("results/<run>/steps")``.
"""

from __future__ import annotations

from orchestrator.records import EpisodeRecord, StepRecord

EPISODES = EpisodeRecord.schema()
STEPS = StepRecord.schema()
