"""Served models in sweep files: the quickstart's bundled model, per-model mazes and protocol."""

import pytest
import yaml

from env.errors import BadInput
from orchestrator.serving.bundled import BUNDLED_MODEL, BUNDLED_SPEC
from orchestrator.sweep import SWEEPS_DIR, parse_sweep

QUICKSTART = SWEEPS_DIR / "quickstart.yaml"
BUNDLED = {"engine": "llama_cpp", "model": BUNDLED_SPEC}  # the bundled model, asked for by name


def quickstart(mazes=("example",)):
    data = yaml.safe_load(QUICKSTART.read_text())
    data["mazes"] = list(mazes)  # the eval set is built separately; the entry under test is the model's
    return parse_sweep(data, "sweeps/quickstart.yaml")


def test_quickstart_serves_the_bundled_model_text_only_without_thinking_with_constrained_replies():
    sweep = quickstart()
    served = next(m for m in sweep.models if m.serve is not None)
    assert served.model == BUNDLED_MODEL and served.serve.engine == "llama_cpp"
    assert served.serve.model == BUNDLED_SPEC  # the bundled GGUF, by name
    assert served.mazes is not None and 1 <= len(served.mazes) <= 5
    mine = [e for e in sweep.episodes() if e.model.name == served.name]
    assert len(mine) == len(served.mazes)
    for e in mine:
        p = e.condition.protocol
        assert p.observation == "text" and not p.thinking and p.max_output_tokens <= 64
        # every reply is an answer line (llama.cpp's grammar), and the cap holds the longest one
        assert p.constrain == "action" and served.config.family.name == "llama-cpp"
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
        ({"serve": {**BUNDLED, "n_ctx": 1}}, "models[0].serve.n_ctx"),
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

    assert ids(BUNDLED) == ids({**BUNDLED, "replicas": 2, "startup_timeout_s": 30})
    assert ids(BUNDLED) != ids({**BUNDLED, "n_ctx": 4096})


def test_a_llama_cpp_model_must_take_the_text_observation():
    data = {"name": "t", "mazes": ["example"], "protocol": {"observation": "image+text"},
            "models": [{"name": "g", "model": "openai/g", "serve": BUNDLED}]}
    with pytest.raises(BadInput, match="reads text only") as err:
        parse_sweep(data, "t.yaml")
    assert str(err.value).startswith("t.yaml: models[0].protocol.observation:")
    data["models"][0]["protocol"] = {"observation": "text"}
    assert parse_sweep(data, "t.yaml").episodes()[0].condition.protocol.observation == "text"


def test_vllm_limits_come_from_the_largest_request_the_sweep_renders():
    """The image limit counts the worked example's frames, the history and the current frame (the
    study's issue: a final turn holds 12 images, not history_frames + 1 = 4); max_model_len holds
    the longest prompt and the output cap."""
    from agents.prompt import icl_episode
    from orchestrator.sweep import load_sweep

    example_frames = len(icl_episode()[1])
    sweep = load_sweep("gridbench-main", mazes="example")
    qwen = next(m for m in sweep.models if m.serve is not None)
    spec = sweep.serve_spec(qwen)
    assert spec.limit_mm_per_prompt == {"image": example_frames + 3 + 1, "video": 0} == {"image": 12, "video": 0}
    assert spec.max_model_len is not None and spec.max_model_len > 64000 and spec.max_model_len % 1024 == 0
    data = yaml.safe_load((SWEEPS_DIR / "gridbench-main.yaml").read_text())
    data["mazes"] = ["example"]
    data["models"][2]["serve"]["limit_mm_per_prompt"] = {"image": 4}
    with pytest.raises(BadInput) as err:
        parse_sweep(data, "sweeps/main.yaml")
    assert err.value.field == "models[2].serve.limit_mm_per_prompt"
    assert "condition 'default' sends 12 images in one request, more than the 4 allowed" in err.value.message
    data["models"][2]["serve"] = {"engine": "vllm", "max_model_len": 32768}
    with pytest.raises(BadInput) as err:
        parse_sweep(data, "sweeps/main.yaml")
    assert err.value.field == "models[2].serve.max_model_len" and "output cap of 64000" in err.value.message
    # no images without the image observation, and a multi-turn conversation keeps history_frames of them
    data["models"][2]["serve"] = {"engine": "vllm"}
    data["conditions"] = [{"name": "baseline"}, {"name": "text", "observation": "text"},
                          {"name": "history-0", "history_frames": 0}]
    from orchestrator.serving.limits import images_per_request

    s = parse_sweep(data, "sweeps/main.yaml")
    assert [images_per_request(s.mazes[0], c.protocol) for c in s.conditions] == [12, 0, example_frames + 1]
    multi = s.conditions[0].protocol.model_copy(update={"conversation": "multi"})
    assert images_per_request(s.mazes[0], multi) == 12
    # the study's cells: its final one sends the last 3 frames and the current one; its ablation
    # adds the one-shot example's picture, and its multi-turn chat keeps 3 past queries' frames
    study = load_sweep("main", mazes="example")
    assert {images_per_request(study.mazes[0], c.protocol) for c in study.conditions} == {4}
    ablation = load_sweep("ablation", mazes="example")
    counts = {c.name: images_per_request(ablation.mazes[0], c.protocol) for c in ablation.conditions}
    assert counts["cond_prompt.standard"] == counts["hist_multiturn"] == 5
    assert counts["ctx_current"] == counts["ctx_text_summary"] == 2 and counts["icl_zero_shot"] == 4
