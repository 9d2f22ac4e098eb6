#!/usr/bin/env bash
# GPU check of the vLLM path: serve a small vision-language model with vLLM through the
# ModelServer actor and run a few episodes against it, exactly as `gridbench run` does.
#
# Needs: one NVIDIA GPU with >= 24 GB, CUDA drivers, internet for the weights (about 7.5 GB).
# Expected duration on one A100/H100: 6-12 min on a fresh machine (vLLM install 2-4 min, weights
# 1-3 min, server start with CUDA graph capture 1-3 min, the episodes 1-2 min); about 3 min when
# vLLM and the weights are cached.
#
# Usage: bench/gpu_vllm_check.sh [MODEL]     (default Qwen/Qwen2.5-VL-3B-Instruct)
# Prints a table: server start time, episodes, steps, mean latency per step, output tokens/s.
set -euo pipefail
cd "$(dirname "$0")/.."

MODEL="${1:-Qwen/Qwen2.5-VL-3B-Instruct}"
PY=.venv/bin/python
if [ ! -x "$PY" ]; then
  python3 -m venv .venv
fi
if ! "$PY" -c "import vllm, orchestrator" 2>/dev/null; then
  .venv/bin/pip install -q -e '.[run,vllm]'
fi
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
# four mazes of the eval set are enough to cross the whole path: actor, server, litellm, traces
MAZES=$("$PY" -c "from env.sets import resolve_mazes; print(', '.join(m.id for m in resolve_mazes('eval')[:4]))")
cat > "$WORK/gpu-vllm-check.yaml" <<YAML
name: gpu-vllm-check
mazes: [$MAZES]
repeats: 1
protocol: {observation: image, history_frames: 1, thinking: false, max_output_tokens: 256,
           temperature: 0.0, step_cap_factor: 1}
models:
  - name: vllm-small
    model: hosted_vllm/$MODEL
    max_concurrency: 4
    serve: {engine: vllm, tensor_parallel_size: 1, max_model_len: 16384,
            gpu_memory_utilization: 0.85, startup_timeout_s: 900}
YAML

RUN="gpu-vllm-check-$(date +%Y%m%d-%H%M%S)"
START=$(date +%s)
.venv/bin/gridbench run "$WORK/gpu-vllm-check.yaml" --out results --name "$RUN"
END=$(date +%s)

"$PY" - "$RUN" "$((END - START))" <<'PYEOF'
import json, re, sys
from pathlib import Path

import pandas as pd

run, wall = sys.argv[1], int(sys.argv[2])
root = Path("results") / run
eps = pd.read_parquet(root / "episodes")
steps = pd.read_parquet(root / "steps")
log = (root / "servers" / "vllm-small-0.log").read_text(errors="replace")
ok = steps[steps["latency_s"] > 0]
rows = [
    ("episodes (errors)", f"{len(eps)} ({int((eps['termination'] == 'error').sum())})"),
    ("steps", str(len(steps))),
    ("mean latency per step", f"{ok['latency_s'].mean():.2f} s"),
    ("output tokens/s per stream", f"{(ok['tokens_out'] / ok['latency_s']).mean():.1f}"),
    ("server log lines", str(log.count(chr(10)))),
    ("whole check wall time", f"{wall} s"),
]
width = max(len(k) for k, _ in rows)
for k, v in rows:
    print(f"{k:<{width}}  {v}")
bad = eps[eps["termination"] == "error"]
sys.exit(1 if len(bad) == len(eps) else 0)
PYEOF
