"""Every rule an agent or a model server could reject an episode for is checked when the sweep is
loaded (or, for what depends on the machine, before the run starts), never inside the actors:
a bad entry is one line from `--dry-run`, not a sweep of error episodes.

The test reads the source for every ``raise BadInput`` of the agents and the serving code that
runs outside sweep loading, and shows, for each, the entry that would reach it and that loading
refuses it first. A new such rule without a case here fails the test."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from env.errors import BadInput
from orchestrator.sweep import parse_sweep

ROOT = Path(__file__).resolve().parents[2]
# the modules that are the loading itself: their rules are what load runs
LOADING = {"agents/model.py", "agents/protocol.py", "agents/providers/__init__.py", "agents/providers/family.py",
           "orchestrator/serving/spec.py"}
MAZES = str(ROOT / "tests" / "orchestrator" / "mazes")


def raise_sites() -> set[tuple[str, str]]:
    """(file, function) of every ``raise BadInput(...)`` outside the loading modules."""
    out = set()
    for folder in ("agents", "orchestrator/serving"):
        for path in (ROOT / folder).rglob("*.py"):
            where = str(path.relative_to(ROOT))
            if where in LOADING:
                continue
            for fn in ast.walk(ast.parse(path.read_text())):
                if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                    for node in ast.walk(fn):
                        if (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)
                                and getattr(node.exc.func, "id", "") == "BadInput"):
                            out.add((where, fn.name))
    return out


def sweep(**entry) -> dict:
    return {"name": "t", "mazes": MAZES, "models": [{"name": "m", **entry}]}


# site -> (a model entry that would reach it, the field loading names)
AT_LOAD = {
    ("agents/builtin.py", "make_builtin"): ({"model": "builtin/wizard"}, "models[0].model"),
    ("agents/llm.py", "__init__"): ({"model": "hosted_vllm/q", "client": "openai"}, "models[0].client"),
}
# checked before a run starts (they depend on the machine, not the file): see the test below
AT_START = {
    ("agents/model.py", "api_key"),
    ("orchestrator/serving/placement.py", "plan_replicas"),
}


def test_every_rule_outside_loading_has_a_case():
    sites = raise_sites()
    assert sites <= set(AT_LOAD) | AT_START, sorted(sites - set(AT_LOAD) - AT_START)


@pytest.mark.parametrize("site", sorted(AT_LOAD))
def test_loading_refuses_what_an_actor_would(site):
    entry, field = AT_LOAD[site]
    with pytest.raises(BadInput) as err:
        parse_sweep(sweep(**entry), "t.yaml")
    assert err.value.field == field


@pytest.mark.parametrize("entry, field", [
    # the examples: they used to pass --dry-run and fail every episode in the actors
    ({"model": "openai/x", "params": {"num_retries": 3}}, "models[0].params.num_retries"),
    ({"model": "openai/x", "params": {"timeout": -1}}, "models[0].params.timeout"),
    ({"model": "openai/x", "params": {"retries": "many"}}, "models[0].params.retries"),
    ({"model": "openai/x", "price": {"input": 1e-6}}, "models[0].price.output"),
    ({"model": "openai/x", "client": "httpx"}, "models[0].client"),
    # a setting the provider cannot honour: refused at load, never sent and recorded as applied
    ({"model": "anthropic/claude-opus-4-8", "protocol": {"thinking_budget": 8000}}, "models[0].protocol.thinking_budget"),
    ({"model": "anthropic/claude-opus-4-8", "protocol": {"temperature": 0.5}}, "models[0].protocol.temperature"),
    ({"model": "anthropic/claude-opus-4-8", "params": {"top_k": 5}}, "models[0].params.top_k"),
    ({"model": "moonshot/kimi-k2.6", "protocol": {"effort": "high"}}, "models[0].protocol.effort"),
    ({"model": "openai/o3", "protocol": {"thinking": False}}, "models[0].protocol.thinking"),
    ({"model": "hosted_vllm/q", "protocol": {"thinking_budget": 4096}}, "models[0].protocol.thinking_budget"),
    ({"model": "openai/x", "params": {"max_tokens": 5}}, "models[0].params.max_tokens"),
    ({"model": "openai/x", "thinking": {"mode": "adaptive"}}, "models[0].thinking"),
    ({"model": "anthropic/c", "serve": {"engine": "llama_cpp", "model": "bundled:smollm2-135m-instruct"}}, "models[0].model"),
    ({"model": "builtin/oracle", "price": {"input": 0, "output": 0}}, "models[0].price"),
    ({"model": "openai/x", "max_cost": 0}, "models[0].max_cost"),
])
def test_rules_an_agent_relied_on_are_load_errors(entry, field):
    with pytest.raises(BadInput) as err:
        parse_sweep(sweep(**entry), "t.yaml")
    assert err.value.field == field


def test_a_provider_refusal_names_the_field_where_the_setting_comes_from():
    """From a condition, the sweep's protocol or the model's own fields: the line names that one,
    and the model entry and condition."""
    data = {"name": "t", "mazes": MAZES, "protocol": {"thinking_budget": 4096},
            "models": [{"name": "kimi", "model": "moonshot/kimi-k2.6"}]}
    with pytest.raises(BadInput) as err:
        parse_sweep(data, "t.yaml")
    assert err.value.field == "protocol.thinking_budget" and "kimi (moonshot/kimi-k2.6)" in err.value.message
    data = {"name": "t", "mazes": MAZES, "models": [{"name": "gpt", "model": "openai/gpt-5"}],
            "conditions": [{"name": "baseline"}, {"name": "off", "thinking": False}]}
    with pytest.raises(BadInput) as err:
        parse_sweep(data, "t.yaml")
    assert err.value.field == "conditions[1].thinking" and "condition 'off'" in err.value.message


def test_a_missing_key_stops_the_run_before_ray_starts(monkeypatch, tmp_path):
    import yaml

    from app.cli import main

    monkeypatch.delenv("GRIDBENCH_NO_SUCH_KEY", raising=False)
    path = tmp_path / "keys.yaml"
    path.write_text(yaml.safe_dump(sweep(model="openai/x", api_key_env="GRIDBENCH_NO_SUCH_KEY")))
    s = parse_sweep(yaml.safe_load(path.read_text()), str(path))
    with pytest.raises(BadInput) as err:
        s.check_keys()
    assert err.value.field == "models[0].api_key_env" and "GRIDBENCH_NO_SUCH_KEY" in err.value.message
    with pytest.raises(SystemExit) as code:
        main(["run", str(path), "--out", str(tmp_path / "out")])
    assert code.value.code == 2 and not (tmp_path / "out").exists()
    main(["run", str(path), "--out", str(tmp_path / "out"), "--dry-run"])  # a dry run needs no key
