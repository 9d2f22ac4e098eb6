"""Fixed pyarrow schemas of the traces (DESIGN section 7); docs/traces.md documents each column.

Every episodes file and every steps file is written with exactly these schemas, so a folder of
them reads as one table: ``pd.read_parquet("results/<run>/steps")``.
"""

from __future__ import annotations

import pyarrow as pa

EPISODES = pa.schema([
    ("run", pa.string()),
    ("episode_id", pa.string()),
    ("model_name", pa.string()),        # the sweep's short name for the model entry
    ("model", pa.string()),             # litellm string, builtin/<agent> or human/<name>
    ("condition", pa.string()),
    ("protocol", pa.string()),          # resolved protocol as JSON
    ("protocol_hash", pa.string()),
    ("repeat", pa.int32()),
    ("maze_id", pa.string()),
    ("maze_checksum", pa.string()),
    ("grid_width", pa.int32()),
    ("grid_height", pa.int32()),
    ("grid", pa.string()),              # "10x10"
    ("category", pa.string()),
    ("n_keys", pa.int32()),
    ("n_doors", pa.int32()),
    ("n_switches", pa.int32()),
    ("n_gates", pa.int32()),
    ("n_distractors", pa.int32()),
    ("chain_length", pa.int32()),
    ("optimal_actions", pa.int32()),
    ("step_cap", pa.int32()),
    ("termination", pa.string()),       # solved | step_cap | stall | error
    ("solved", pa.bool_()),
    ("steps", pa.int32()),
    ("progress_action", pa.float64()),
    ("progress_tile", pa.float64()),
    ("d_start_action", pa.int32()),
    ("d_end_action", pa.int32()),       # null when the goal became unreachable
    ("d_start_tile", pa.int32()),
    ("d_end_tile", pa.int32()),
    ("closest_action", pa.int32()),
    ("invalid_outputs", pa.int32()),
    ("reasks", pa.int32()),
    ("tokens_in", pa.int64()),
    ("tokens_out", pa.int64()),
    ("tokens_reasoning", pa.int64()),
    ("reasoning_estimated", pa.bool_()),
    ("cost_usd", pa.float64()),
    ("model_latency_s", pa.float64()),  # summed over the episode's model calls
    ("wall_s", pa.float64()),
    ("attempts", pa.int32()),
    ("error_class", pa.string()),
    ("error_message", pa.string()),
    ("gridbench_version", pa.string()),
    ("env_version", pa.string()),
    ("started_at", pa.timestamp("us", tz="UTC")),
    ("finished_at", pa.timestamp("us", tz="UTC")),
])

STEPS = pa.schema([
    ("run", pa.string()),
    ("episode_id", pa.string()),
    ("model_name", pa.string()),
    ("condition", pa.string()),
    ("maze_id", pa.string()),
    ("step", pa.int32()),               # 1-based
    ("action", pa.string()),            # null when the reply was invalid (a no-op step)
    ("parse", pa.string()),             # exact | lenient | invalid | builtin
    ("reply", pa.string()),
    ("reasoning", pa.string()),
    ("event", pa.string()),
    ("x", pa.int32()),                  # position after the step
    ("y", pa.int32()),
    ("dir", pa.int8()),                 # 0 east, 1 south, 2 west, 3 north
    ("carrying", pa.string()),          # key id, null when empty-handed
    ("mechanisms", pa.string()),        # JSON: keys, doors, switches, gates after the step
    ("novel", pa.bool_()),
    ("action_distance", pa.int32()),    # after the step; null when the goal is unreachable
    ("tile_distance", pa.int32()),
    ("tokens_in", pa.int64()),
    ("tokens_out", pa.int64()),
    ("tokens_reasoning", pa.int64()),
    ("reasoning_estimated", pa.bool_()),
    ("cost_usd", pa.float64()),
    ("latency_s", pa.float64()),
    ("finish_reason", pa.string()),
    ("retries", pa.int32()),
    ("reasks", pa.int32()),
    ("prompt_hash", pa.string()),
    ("image_hashes", pa.list_(pa.string())),
])
