"""The fixed Parquet schemas of the traces, derived from the records of ``traces._records``,
and the folders of a run that hold them.

Every episodes file and every steps file is written with exactly these schemas, so a folder of
them reads as one table: ``pd.read_parquet("results/<run>/steps")``.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from traces._records import EpisodeRecord, StepRecord

EPISODES = EpisodeRecord.schema()
STEPS = StepRecord.schema()

EPISODES_DIR = "episodes"
STEPS_DIR = "steps"
SCHEMAS = {EPISODES_DIR: EPISODES, STEPS_DIR: STEPS}
TABLES = (STEPS_DIR, EPISODES_DIR)  # the order an episode's files are written in: the episodes file last
# a per-episode file: one row compresses to nothing, so the episodes file is left plain (half the cost)
PER_EPISODE_COMPRESSION = {EPISODES_DIR: "none", STEPS_DIR: "zstd"}


def parquet_bytes(table: pa.Table, compression: str = "zstd") -> bytes:
    """A whole Parquet file in memory."""
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=compression)
    return sink.getvalue().to_pybytes()
