"""A served entry names its weights, the dry run shows what each server would run, and the
episodes record the weights' file name and checksum (hashed once per version of the file)."""

import hashlib
import json

import pytest
import yaml

from app.cli import main
from orchestrator.serving import bundled
from orchestrator.serving.bundled import BUNDLED_SHA256, weights_sha256
from orchestrator.serving.spec import Weights
from orchestrator.sweep import load_sweep

PROTOCOL = {"observation": "text", "thinking": False, "history_frames": 0, "icl_example": False}


def sweep_with(tmp_path, serve: dict, model: str = "openai/qwen2.5-0.5b-instruct"):
    path = tmp_path / "sweeps" / "own.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump({"name": "own", "mazes": ["example"], "protocol": PROTOCOL,
                                    "models": [{"name": "qwen", "model": model, "serve": serve}]}))
    return path


def dry_run(path, tmp_path, *options: str) -> None:
    try:
        main(["run", str(path), "--dry-run", *options, "--out", str(tmp_path / "results")])
    except SystemExit as done:
        assert done.code in (0, None)


@pytest.fixture
def gguf(tmp_path):
    """A stand-in weights file next to the sweep (llama.cpp is not started: only its bytes matter)."""
    path = tmp_path / "sweeps" / "qwen.gguf"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    return path


def test_the_weights_are_hashed_once_per_version_of_the_file(tmp_path, gguf, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    hashed = []
    real = bundled.sha256_file
    monkeypatch.setattr(bundled, "sha256_file", lambda p: hashed.append(p) or real(p))
    expected = hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert [weights_sha256(gguf) for _ in range(3)] == [expected] * 3
    assert len(hashed) == 1  # the next runs and replicas read the cache
    gguf.write_bytes(gguf.read_bytes() + b"changed")
    assert weights_sha256(gguf) == hashlib.sha256(gguf.read_bytes()).hexdigest() != expected
    assert len(hashed) == 2


def test_dry_run_prints_the_llama_cpp_command_line_with_its_weights(tmp_path, gguf, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = sweep_with(tmp_path, {"engine": "llama_cpp", "model": "qwen.gguf", "n_ctx": 4096})  # relative to the sweep
    dry_run(path, tmp_path, "--json")
    (server,) = json.loads(capsys.readouterr().out)["servers"]
    sha = hashlib.sha256(gguf.read_bytes()).hexdigest()
    assert server["engine"] == "llama_cpp" and server["gpus_per_replica"] == 0
    assert server["weights"] == {"name": "qwen.gguf", "sha256": sha}
    argv = server["argv"]
    assert argv[1:3] == ["-m", "orchestrator.serving.llama_server"]
    assert argv[argv.index("--model") + 1] == str(gguf.resolve())
    assert argv[argv.index("--model_alias") + 1] == "qwen2.5-0.5b-instruct"
    assert "--chat_format" not in argv  # the file's own template
    dry_run(path, tmp_path)
    text = capsys.readouterr().out
    assert f"qwen: 1 replica(s) on CPU serving qwen.gguf (sha256 {sha})" in text
    assert server["command"] in text.splitlines()


def test_the_bundled_model_is_served_only_by_name_and_its_episodes_say_which_file(tmp_path):
    sweep = load_sweep(sweep_with(tmp_path, {"engine": "llama_cpp", "model": "bundled:smollm2-135m-instruct"},
                                  model="openai/gemma-3-270m"))
    (entry,) = sweep.models
    assert entry.serving == "llama_cpp"  # before its servers report what they serve
    served = sweep.with_weights({"qwen": Weights("gemma-3-270m-q4_k_m.gguf", BUNDLED_SHA256)})
    (spec,) = {e.model.serving for e in served.episodes()}
    assert spec == f"llama_cpp model=gemma-3-270m-q4_k_m.gguf sha256={BUNDLED_SHA256}"
    assert served.resolved()["models"][0]["weights"] == {"name": "gemma-3-270m-q4_k_m.gguf", "sha256": BUNDLED_SHA256}
    # the weights change no episode id: the entry's own words do
    assert [e.episode_id for e in served.episodes()] == [e.episode_id for e in sweep.episodes()]
