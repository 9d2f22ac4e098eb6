"""Command lines of the two engines, built from a resolved ``ServeSpec``.

The vLLM flags are ``vllm serve``'s; ``bench/vllm_cli_check.py`` feeds every command line the
sweeps and tests give to vLLM's own parser (docs/cluster.md lists them and the versions checked).
Both servers speak the OpenAI API
under ``/v1``; the model is served under the name the sweep's litellm string carries, so the
agent's ``hosted_vllm/<name>`` or ``openai/<name>`` request reaches it unchanged.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from agents.model import request_name
from orchestrator.serving.spec import ServeSpec, Weights


def vllm_command(model: str, spec: ServeSpec, *, host: str, port: int, executable: str = "vllm") -> list[str]:
    """``vllm serve MODEL ...`` for one replica; ``spec`` must be ``resolved`` first."""
    if spec.engine != "vllm":
        raise ValueError(f"vllm_command needs engine vllm, got {spec.engine}")
    if spec.limit_mm_per_prompt is None or spec.max_num_seqs is None:
        raise ValueError("resolve the spec (ServeSpec.resolved) before building its command")
    cmd = [
        executable, "serve", request_name(model),
        "--served-model-name", request_name(model),
        "--tensor-parallel-size", str(spec.tensor_parallel_size),
    ]
    if spec.tensor_parallel_size > 1:
        # the replica's GPUs are the ones Ray gave its actor; vLLM's own Ray backend would
        # schedule workers on the cluster behind gridbench's back
        cmd += ["--distributed-executor-backend", "mp"]
    if spec.max_model_len is not None:
        cmd += ["--max-model-len", str(spec.max_model_len)]
    cmd += ["--limit-mm-per-prompt", json.dumps(spec.limit_mm_per_prompt, sort_keys=True)]
    # without it vLLM reports no cached prompt tokens (usage.prompt_tokens_details)
    cmd += ["--enable-prompt-tokens-details"]
    if spec.reasoning_parser:
        cmd += ["--reasoning-parser", spec.reasoning_parser]
    cmd += [
        "--enable-prefix-caching" if spec.enable_prefix_caching else "--no-enable-prefix-caching",
        "--max-num-seqs", str(spec.max_num_seqs),
        "--seed", str(spec.seed),
        "--generation-config", spec.generation_config,
        "--gpu-memory-utilization", str(spec.gpu_memory_utilization),
        *spec.extra_args,
        "--host", host,
        "--port", str(port),
    ]
    return cmd


def llama_cpp_command(
    model: str, spec: ServeSpec, *, model_path: str, host: str, port: int, python: str | None = None,
    chat_format: str | None = None,
) -> list[str]:
    """llama-cpp-python's OpenAI-compatible server for one replica (through
    ``orchestrator.serving.llama_server``, which adds the text chat formats ``chatml-text`` and
    ``gemma-text``).

    ``chat_format`` is used when the spec names none (the bundled model needs one).
    """
    if spec.engine != "llama_cpp":
        raise ValueError(f"llama_cpp_command needs engine llama_cpp, got {spec.engine}")
    cmd = [
        python or sys.executable, "-m", "orchestrator.serving.llama_server",
        "--model", model_path,
        "--model_alias", request_name(model),
        "--n_ctx", str(spec.n_ctx),
        "--seed", str(spec.seed),
        "--host", host,
        "--port", str(port),
    ]
    if spec.n_threads is not None:
        cmd += ["--n_threads", str(spec.n_threads)]
    fmt = spec.chat_format or chat_format
    if fmt:
        cmd += ["--chat_format", fmt]
    return cmd


def llama_cpp_weights(spec: ServeSpec, *, start: bool) -> tuple[str, Weights, str | None]:
    """What a llama.cpp replica serves: the GGUF's path, its ``Weights`` and the chat format it
    needs (the bundled model's; None: the spec's, or the file's own template).

    ``start``: for a server about to start, the bundled file is assembled and a missing file is a
    ``FileNotFoundError``; otherwise (a dry run) nothing is written and the checksum of a file
    not on this machine is unknown (None).
    """
    from orchestrator.serving.bundled import (
        BUNDLED_CHAT_FORMAT,
        BUNDLED_SHA256,
        BundledModelError,
        bundled_model_path,
        bundled_target,
        is_bundled,
        weights_sha256,
    )

    if spec.engine != "llama_cpp" or spec.model is None:
        raise ValueError("llama_cpp_weights needs a llama_cpp spec that names its model")
    if is_bundled(spec.model):
        if start:
            path = str(bundled_model_path())
        else:
            try:
                path = str(bundled_target())
            except BundledModelError:  # the run says so when it starts; a plan shows the name
                path = f"<{spec.model}: not installed>"
        # the bundled file is checked against its pinned checksum as it is found or assembled
        return path, Weights(Path(path).name, BUNDLED_SHA256), BUNDLED_CHAT_FORMAT
    if not Path(spec.model).is_file():
        if start:
            raise FileNotFoundError(f"model file {spec.model} not found on this node")
        return spec.model, Weights(Path(spec.model).name), None
    return spec.model, Weights(Path(spec.model).name, weights_sha256(spec.model)), None
