"""Sweep files: one-line errors naming file and field, episode ids, the shipped sweeps."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from env.errors import BadInput
from orchestrator.sweep import SWEEPS_DIR, episode_id, find_sweep, load_sweep, model_conditions, parse_sweep

ORACLE = {"name": "oracle", "model": "builtin/oracle"}

BAD = [
    # (what changes in a valid sweep, text the one-line error must contain)
    ({"models": [{"name": "x", "model": "nosuchprovider/some-model"}]}, "models[0].model: unknown model prefix 'nosuchprovider'"),
    ({"models": [{"name": "x", "model": "builtin/genius"}]}, "unknown built-in agent 'genius'"),
    ({"models": [{"name": "x", "model": "claude-without-prefix"}]}, "models[0].model: 'claude-without-prefix' has no provider prefix"),
    ({"conditions": [{"name": "same"}, {"name": "again"}]}, "conditions[1]: conditions 'same' and 'again' both change nothing"),
    ({"conditions": [{"name": "two", "thinking": False, "prompt": "detailed"}]}, "changes 2 fields (prompt, thinking)"),
    ({"conditions": [{"name": "base"}, {"name": "noop", "prompt": "minimal"}]}, "'base' and 'noop' both change nothing"),
    ({"conditions": [{"name": "x", "models": {"nobody": {"thinking": False}}}]}, "conditions[0].models.nobody: no model"),
    ({"conditions": [{"name": "x", "models": {"oracle": {"promt": "minimal"}}}]}, "conditions[0].models.oracle.promt:"),
    ({"conditions": [{"name": "baseline", "thinking": False}]}, "conditions[0].thinking: `baseline` is the sweep's protocol"),
    ({"conditions": [{"name": "x", "colour": "red"}]}, "conditions[0].colour: unknown protocol field"),
    ({"conditions": [{"name": "x", "prompt": "verbose"}]}, "conditions[0].prompt:"),
    ({"protocol": {"history_frames": 12}}, "protocol.history_frames:"),
    ({"protocol": {"preset": "fancy"}}, "protocol.preset: unknown preset 'fancy'"),
    ({"mazes": "nosuchset"}, "mazes:"),
    ({"models": [{**ORACLE, "max_concurrency": -2}]}, "models[0].max_concurrency: must be a whole number >= 1 (got -2)"),
    ({"models": [ORACLE, {**ORACLE}]}, "models[1].name: 'oracle' is used twice"),
    ({"models": [ORACLE, {"name": "o2", "model": "builtin/oracle"}]}, "models[1]: the same model as models[0]"),
    ({"conditions": [{"name": "a", "thinking": False}, {"name": "a", "prompt": "detailed"}]}, "conditions[1].name: 'a' is used twice"),
    ({"conditions": [{"name": "a", "thinking": False}, {"name": "b", "thinking": False}]}, "condition 'b' is the same as 'a'"),
    ({"colour": "red"}, "t.yaml: colour: unknown key"),
    ({"models": [{**ORACLE, "temperature": 0}]}, "models[0].temperature: unknown key"),
    ({"models": [{"name": "x", "model": "openai/gpt-4o", "params": {"api_key": "sk-abc"}}]}, "models[0].params.api_key: not allowed here"),
    ({"models": [{"name": "x", "model": "openai/gpt-4o", "api_key_env": "sk-live-abc123"}]}, "models[0].api_key_env: must be the NAME"),
    ({"models": [{"name": "x", "model": "openai/gpt-4o", "api_base": "ftp://x"}]}, "models[0].api_base: must be an http(s):// URL"),
    ({"models": [{"name": "x", "model": "hosted_vllm/q", "serve": {"engine": "tensorrt"}}]}, "models[0].serve.engine"),
    ({"repeats": 0}, "repeats: must be a whole number >= 1"),
    ({"models": [{"name": "x", "model": "openai/gpt-4o", "client": "requests"}]}, "models[0].client: must be one of auto, litellm, openai"),
    ({"models": [{"name": "x", "model": "openai/gpt-4o", "client": "openai"}]}, "models[0].client: openai needs an OpenAI-compatible endpoint"),
    ({"models": [{**ORACLE, "client": "litellm"}]}, "models[0].client: only models that are called have a client"),
    ({"models": []}, "models: must be a non-empty list"),
]


@pytest.mark.parametrize("change,message", BAD, ids=[m[:40] for _, m in BAD])
def test_bad_sweeps_fail_with_one_line_naming_file_and_field(tmp_path, maze_dir, sweep_dict, change, message):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(sweep_dict(maze_dir, **change)))
    with pytest.raises(BadInput) as err:
        load_sweep(path)
    line = str(err.value)
    assert "\n" not in line and line.startswith(str(path)) and message in line
    assert "sk-live" not in line and "sk-abc" not in line


def test_cli_bad_sweep_is_exit_2_one_line_and_writes_nothing(tmp_path, maze_dir, sweep_dict):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(sweep_dict(maze_dir, conditions=[{"name": "x", "thinking": False, "seed": 3}])))
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(path), "--out", str(tmp_path / "res")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "conditions[0]" in r.stderr
    assert not (tmp_path / "res").exists()
    path.write_text("name: x\nmodels: [builtin/oracle\n")
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(path), "--dry-run"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "not valid YAML" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_dry_run_prints_the_matrix(tmp_path, maze_dir, sweep_dict):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(sweep_dict(maze_dir, conditions=[{"name": "baseline"}, {"name": "hot", "temperature": 2.0}])))
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(path), "--dry-run", "--model", "oracle",
                        "--model", "random", "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "6 mazes, 2 models, 2 conditions" in r.stdout and "explorer" not in r.stdout
    assert "temperature: 2.0" in r.stdout
    assert "24" in r.stdout and not (tmp_path / "t").exists()


def test_episode_ids_are_content_hashes(maze_dir, sweep_dict):
    a = parse_sweep(sweep_dict(maze_dir), "a.yaml")
    renamed = sweep_dict(maze_dir)
    renamed["models"] = [{**m, "name": m["name"] + "-x", "max_concurrency": 3} for m in renamed["models"]]
    b = parse_sweep(renamed, "b.yaml")
    assert [e.episode_id for e in a.episodes()] == [e.episode_id for e in b.episodes()]
    ids = {e.episode_id for e in a.episodes()}
    assert len(ids) == 18
    spec = a.episodes()[0]
    changed = spec.condition.protocol.model_copy(update={"history_frames": 0})
    assert episode_id(spec.maze, spec.model, changed, 0) != spec.episode_id
    assert episode_id(spec.maze, spec.model, spec.condition.protocol, 1) != spec.episode_id
    twice = parse_sweep(sweep_dict(maze_dir, repeats=2), "c.yaml")
    assert len({e.episode_id for e in twice.episodes()}) == 36


def test_client_auto_is_the_lean_openai_client_for_self_hosted_models_only(maze_dir, sweep_dict):
    url = "http://127.0.0.1:8000/v1"
    models = [
        ORACLE,
        {"name": "hosted", "model": "anthropic/claude-opus-4-8"},
        {"name": "vllm", "model": "hosted_vllm/q", "api_base": url},
        {"name": "vllm-env", "model": "hosted_vllm/q2"},  # endpoint from litellm's environment variable
        {"name": "served", "model": "openai/smollm2", "serve": {"engine": "llama_cpp", "model": "bundled:smollm2-135m-instruct"}},
        {"name": "proxy", "model": "openai/gpt-4o", "api_base": url},
        {"name": "forced", "model": "openai/gpt-4o-mini", "api_base": url, "client": "openai"},
        {"name": "kept", "model": "hosted_vllm/q3", "api_base": url, "client": "litellm"},
    ]
    sweep = parse_sweep(sweep_dict(maze_dir, models=models, protocol={"observation": "text"}), "c.yaml")
    assert {m.name: m.config.client for m in sweep.models} == {
        "oracle": None, "hosted": "litellm", "vllm": "openai", "vllm-env": "litellm", "served": "openai",
        "proxy": "litellm", "forced": "openai", "kept": "litellm",
    }
    assert sweep.resolved()["models"][2]["client"] == "openai"  # the manifest says which client ran
    # the client changes how a request travels, not what it asks: episode ids stay
    same = parse_sweep(sweep_dict(maze_dir, models=[{**m, "client": "litellm"} for m in models[1:3]]), "d.yaml")
    other = parse_sweep(sweep_dict(maze_dir, models=models[1:3]), "e.yaml")
    assert [e.episode_id for e in same.episodes()] == [e.episode_id for e in other.episodes()]


def test_shipped_sweeps_resolve_by_name_and_have_the_study_shape(maze_dir):
    assert {p.stem for p in SWEEPS_DIR.glob("*.yaml")} >= {
        "main", "ablation", "ablation-equal-caps", "gridbench-main", "gridbench-ablation", "quickstart"}
    shapes = {}
    for name in ("main", "ablation", "gridbench-main", "gridbench-ablation", "quickstart"):
        data = yaml.safe_load((SWEEPS_DIR / f"{name}.yaml").read_text())
        # the maze sets ship apart; the shape does not depend on them
        data["mazes"] = str(maze_dir)
        shapes[name] = parse_sweep(data, f"{name}.yaml")
    main, ablation, quick = shapes["main"], shapes["ablation"], shapes["quickstart"]
    # the study's final cell: its style, minimal prompt, image only, summary and last 3, watchdog 30
    assert len(main.models) == 3 and [c.name for c in main.conditions] == ["default"]
    p = main.protocol
    assert (p.style, p.prompt, p.observation, p.context, p.icl_example, p.stall_window, p.max_output_tokens) == (
        "study", "minimal", "image", "summary+recent", False, 30, 64000)
    assert {m.model.split("/")[0] for m in main.models} == {"anthropic", "moonshot", "hosted_vllm"}
    # Qwen served as the study served it: no reasoning parser
    assert [(m.serve.engine, m.serve.reasoning_parser) for m in main.models if m.serve] == [("vllm", None)]
    # the study's twelve conditions: the baseline, ten single-field changes, the thinking one
    assert len(ablation.conditions) == 12 and ablation.conditions[0].is_baseline
    assert ablation.conditions[0].name == "cond_prompt.standard"
    one_field = [c for c in ablation.conditions if c.changed]
    assert len(one_field) == 10 and len({c.changed for c in one_field}) == 7  # the study's seven axes
    thinking = ablation.conditions[-1]
    assert thinking.name == "baseline_thinking" and not thinking.changed and set(thinking.models) == {
        "claude", "kimi", "qwen"}
    assert 15 * len(ablation.models) * len(ablation.conditions) == 540
    assert (ablation.protocol.prompt, ablation.protocol.observation, ablation.protocol.max_output_tokens) == (
        "standard", "image+text", 4096)
    # gridbench's own ablation keeps its twelve one-field conditions
    own = shapes["gridbench-ablation"]
    assert len(own.conditions) == 12 and own.conditions[0].name == "baseline" and own.protocol.style == "gridbench"
    assert len({c.changed for c in own.conditions[1:]}) == 7
    # the built-in agents plus the bundled local model served by llama.cpp (tests/serving covers it)
    assert {m.model for m in quick.models} >= {"builtin/oracle", "builtin/random", "builtin/explorer"}
    assert [m.serve.engine for m in quick.models if m.serve] == ["llama_cpp"]
    with pytest.raises(BadInput, match="no such sweep"):
        load_sweep("no-such-sweep")
    assert find_sweep("ablation") == SWEEPS_DIR / "ablation.yaml"  # names resolve without a path


def test_the_ablation_gives_each_model_the_studys_settings_per_condition():
    ablation = load_sweep("ablation")
    settings = {(m.name, c.name): (c.protocol.thinking, c.protocol.effort, c.protocol.max_output_tokens)
                for m in ablation.models for c in model_conditions(m, ablation.conditions)}
    for cond in ablation.conditions[:-1]:
        assert settings[("claude", cond.name)] == (True, "low", 4096)
        assert settings[("kimi", cond.name)] == (False, None, 4096)
        assert settings[("qwen", cond.name)] == (False, None, 4096)
    # baseline_thinking: thinking on, with the study's unequal caps
    assert settings[("claude", "baseline_thinking")] == (True, "xhigh", 8192)
    assert settings[("kimi", "baseline_thinking")] == (True, None, 16384)
    assert settings[("qwen", "baseline_thinking")] == (True, None, 4096)
    equal = load_sweep("ablation-equal-caps")
    caps = {m.name: c.protocol.max_output_tokens for m in equal.models for c in model_conditions(m, equal.conditions)}
    assert set(caps.values()) == {16384} and len(equal.episodes()) == 45


def test_shipped_main_and_ablation_are_150_and_540_episodes_on_the_shipped_sets():
    main, ablation = load_sweep("main"), load_sweep("ablation")
    assert len(main.mazes) == 50 and len(main.episodes()) == 150
    assert len(ablation.mazes) == 15 and len(ablation.episodes()) == 540
    # the study's own mazes, under its rules
    assert {m.ruleset for m in (*main.mazes, *ablation.mazes)} == {"multinet-r1"}
    assert len({e.episode_id for e in ablation.episodes()}) == 540


def test_a_model_entry_is_resolved_once_into_what_the_agent_servers_and_estimate_receive(maze_dir, sweep_dict, monkeypatch):
    """The provider family of a served model is what its servers speak, decided by the serve spec
    (agents/ knows no engine); the concurrency default is filled in one place; the placeholder key
    goes only to an endpoint of the entry's own or one the run started."""
    from agents.model import NO_KEY
    from orchestrator.estimate import price_of
    from orchestrator.sweep import DEFAULT_LLM_CONCURRENCY, ModelEntry

    bundled = {"engine": "llama_cpp", "model": "bundled:smollm2-135m-instruct"}
    models = [
        ORACLE,
        {"name": "llama", "model": "openai/smollm2", "serve": bundled},
        {"name": "vllm", "model": "hosted_vllm/Qwen/Qwen3-8B", "serve": {"engine": "vllm"}, "max_concurrency": 9},
        {"name": "parser", "model": "hosted_vllm/Qwen/Qwen3-8B-AWQ", "serve": {"engine": "vllm", "reasoning_parser": "qwen3"}},
        {"name": "own", "model": "hosted_vllm/Qwen/Qwen3-8B-FP8", "serve": {"engine": "vllm"}, "provider": "vllm-reasoning"},
        {"name": "hosted", "model": "openai/gpt-4o", "price": {"input": 1e-6, "output": 2e-6}},
    ]
    sweep = parse_sweep(sweep_dict(maze_dir, models=models, protocol={"observation": "text"}), "c.yaml")
    by = {m.name: m for m in sweep.models}
    assert {n: m.config.family.name for n, m in by.items() if n != "oracle"} == {
        "llama": "llama-cpp", "vllm": "vllm", "parser": "vllm-reasoning", "own": "vllm-reasoning", "hosted": "generic"}
    assert {n: m.max_concurrency for n, m in by.items()} == {
        "oracle": None, "llama": DEFAULT_LLM_CONCURRENCY, "vllm": 9, "parser": DEFAULT_LLM_CONCURRENCY,
        "own": DEFAULT_LLM_CONCURRENCY, "hosted": DEFAULT_LLM_CONCURRENCY}
    # an entry built in code gets the same default as one read from a file
    assert ModelEntry(config=by["hosted"].config).max_concurrency == DEFAULT_LLM_CONCURRENCY
    # the run's server gets the placeholder, a hosted model's own variable is left to its client
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert by["llama"].config.api_key() is None and by["llama"].config.api_key("http://127.0.0.1:8401/v1") == NO_KEY
    assert by["hosted"].config.api_key() is None
    assert [price_of(by[n])[1] for n in ("llama", "hosted")] == ["self-hosted", "sweep price"]
