"""Served models in sweep files: the quickstart's bundled model, per-model mazes and protocol."""

import pytest
import yaml

from env.errors import BadInput
from orchestrator.sweep import SWEEPS_DIR, parse_sweep

QUICKSTART = SWEEPS_DIR / "quickstart.yaml"


def quickstart(mazes=("example",)):
    data = yaml.safe_load(QUICKSTART.read_text())
    data["mazes"] = list(mazes)  # the eval set is built separately; the entry under test is the model's
    return parse_sweep(data, "sweeps/quickstart.yaml")


def test_quickstart_serves_the_bundled_model_text_only_without_thinking():
    sweep = quickstart()
    gemma = next(m for m in sweep.models if m.serve is not None)
    assert gemma.model == "openai/gemma-3-270m" and gemma.serve.engine == "llama_cpp"
    assert gemma.serve.model is None  # the bundled GGUF
    assert gemma.mazes is not None and 1 <= len(gemma.mazes) <= 5
    mine = [e for e in sweep.episodes() if e.model.name == gemma.name]
    assert len(mine) == len(gemma.mazes)
    for e in mine:
        p = e.condition.protocol
        assert p.observation == "text" and not p.thinking and p.max_output_tokens <= 64
    # the built-in agents keep the sweep's own protocol
    oracle = next(e for e in sweep.episodes() if e.model.name == "oracle")
    assert oracle.condition.protocol == sweep.protocol


def test_a_model_runs_only_its_own_mazes_and_the_cli_maze_override_wins():
    data = {
        "name": "t", "mazes": ["example"],
        "models": [{"name": "oracle", "model": "builtin/oracle"},
                   {"name": "r", "model": "builtin/random", "mazes": ["example"], "protocol": {"seed": 3}}],
    }
    sweep = parse_sweep(data, "t.yaml")
    by_model = {e.model.name: e for e in sweep.episodes()}
    assert by_model["r"].condition.protocol.seed == 3 and by_model["oracle"].condition.protocol.seed == 0
    assert by_model["r"].episode_id != by_model["oracle"].episode_id
    assert sweep.resolved()["episodes"] == 2
    assert parse_sweep(data, "t.yaml", mazes="example").models[1].mazes is None


@pytest.mark.parametrize(
    "entry, field",
    [
        ({"protocol": {"colour": 1}}, "models[0].protocol.colour"),
        ({"protocol": {"observation": "smell"}}, "models[0].protocol.observation"),
        ({"protocol": {"preset": "gridbench-baseline"}}, "models[0].protocol"),
        ({"mazes": ["no-such-maze"]}, "models[0].mazes"),
        ({"serve": {"engine": "llama_cpp", "n_ctx": 1}}, "models[0].serve.n_ctx"),
    ],
)
def test_bad_model_entry_names_the_field(entry, field):
    data = {"name": "t", "mazes": ["example"], "models": [{"name": "m", "model": "openai/x", **entry}]}
    with pytest.raises(BadInput) as err:
        parse_sweep(data, "t.yaml")
    assert str(err.value).startswith(f"t.yaml: {field}"), str(err.value)


def test_serving_settings_that_cannot_change_answers_keep_episode_ids():
    def ids(serve):
        data = {"name": "t", "mazes": ["example"], "protocol": {"observation": "text"},
                "models": [{"name": "m", "model": "openai/x", "serve": serve}]}
        return [e.episode_id for e in parse_sweep(data, "t.yaml").episodes()]

    assert ids({"engine": "llama_cpp"}) == ids({"engine": "llama_cpp", "replicas": 2, "startup_timeout_s": 30})
    assert ids({"engine": "llama_cpp"}) != ids({"engine": "llama_cpp", "n_ctx": 4096})


def test_a_llama_cpp_model_must_take_the_text_observation():
    data = {"name": "t", "mazes": ["example"], "protocol": {"observation": "image+text"},
            "models": [{"name": "g", "model": "openai/g", "serve": {"engine": "llama_cpp"}}]}
    with pytest.raises(BadInput, match="reads text only") as err:
        parse_sweep(data, "t.yaml")
    assert str(err.value).startswith("t.yaml: models[0].protocol.observation:")
    data["models"][0]["protocol"] = {"observation": "text"}
    assert parse_sweep(data, "t.yaml").episodes()[0].condition.protocol.observation == "text"
