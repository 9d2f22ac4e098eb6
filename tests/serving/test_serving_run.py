"""`gridbench run` with a served model, end to end: the driver starts the llama.cpp server through
its ModelServer actor, leases it to the episode, the litellm agent asks it, the traces record it,
and the server is gone when the command returns."""

import re
import socket

import pandas as pd
import pytest
import yaml

from app.cli import main
from orchestrator.serving.bundled import BUNDLED_MODEL, BUNDLED_SHA256, bundled_target

pytestmark = pytest.mark.slow


def test_gridbench_run_serves_the_bundled_model_end_to_end(tmp_path, capfd):
    sweep = tmp_path / "local.yaml"
    sweep.write_text(yaml.safe_dump({
        "name": "local", "mazes": ["example"],
        "protocol": {"observation": "text", "thinking": False, "max_output_tokens": 16, "temperature": 0.0,
                     "step_cap_factor": 0.1, "history_frames": 0, "icl_example": False},
        "models": [
            {"name": "oracle", "model": "builtin/oracle"},
            {"name": "gemma", "model": BUNDLED_MODEL, "max_concurrency": 1,
             "serve": {"engine": "llama_cpp", "model": "bundled:smollm2-135m-instruct", "n_ctx": 4096}},
        ],
    }))
    out = tmp_path / "results"
    try:
        main(["run", str(sweep), "--out", str(out), "--name", "r"])
    except SystemExit as exit_:
        assert exit_.code in (0, None)
    run = out / "r"
    episodes = pd.read_parquet(run / "episodes")
    gemma = episodes[episodes["model_name"] == "gemma"].iloc[0]
    assert gemma["termination"] != "error", gemma["error_message"]
    # the episode names the weights its server served, and the preflight asked the server first
    assert gemma["serving"] == f"llama_cpp model={bundled_target().name} sha256={BUNDLED_SHA256}"
    assert "preflight: gemma: every server up and listing its model" in capfd.readouterr().err
    steps = pd.read_parquet(run / "steps")
    mine = steps[steps["episode_id"] == gemma["episode_id"]]
    assert len(mine) == gemma["steps"] == 2
    assert (mine["tokens_in"] > 150).all() and (mine["tokens_out"] > 0).all() and (mine["latency_s"] > 0).all()
    assert mine["reply"].str.len().gt(0).all()
    log = (run / "servers" / "gemma-0.log").read_text()
    assert "POST /v1/chat/completions" in log
    # the command stopped its server: nothing listens on its port any more. SO_REUSEADDR lets the
    # bind pass over connections lingering in TIME_WAIT, never over a socket still listening.
    port = int(re.search(r"--port (\d+)", log).group(1))
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
