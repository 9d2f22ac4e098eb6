"""The ``serve:`` mapping: defaults, derived values and one-line errors naming the field."""

import pytest
from pydantic import ValidationError

from env.errors import BadInput
from orchestrator.serving.spec import ServeSpec, parse_serve


def test_vllm_defaults_are_derived_from_the_sweep():
    spec = parse_serve({"engine": "vllm", "tensor_parallel_size": 2, "replicas": 2})
    assert spec.limit_mm_per_prompt is None and spec.max_num_seqs is None
    done = spec.resolved(images=12, max_model_len=70656, max_concurrency=32)
    assert done.limit_mm_per_prompt == {"image": 12, "video": 0} and done.max_model_len == 70656
    assert done.max_num_seqs == 16
    # an explicit value is never overridden
    fixed = parse_serve({"engine": "vllm", "max_num_seqs": 5, "limit_mm_per_prompt": {"image": 9},
                         "max_model_len": 4096})
    done = fixed.resolved(images=1, max_model_len=99999, max_concurrency=100)
    assert (done.max_num_seqs, done.limit_mm_per_prompt, done.max_model_len) == (5, {"image": 9}, 4096)


BUNDLED = {"engine": "llama_cpp", "model": "bundled:smollm2-135m-instruct"}


def test_llama_cpp_serves_the_bundled_model_only_when_asked_by_name_on_loopback():
    spec = parse_serve(BUNDLED)
    assert spec.model == "bundled:smollm2-135m-instruct" and spec.host == "127.0.0.1" and spec.replicas == 1
    assert spec.resolved(images=4, max_concurrency=4) == spec
    # no weights named: refused, never the bundled model under the entry's name
    with pytest.raises(BadInput) as err:
        parse_serve({"engine": "llama_cpp"}, "s.yaml")
    assert str(err.value) == (
        "s.yaml: serve.model: missing: the weights to serve, a GGUF file's path or bundled:smollm2-135m-instruct for "
        "the bundled SmolLM2-135M-Instruct (llama.cpp serves any file under this entry's model name)")
    with pytest.raises(ValidationError):
        ServeSpec(engine="llama_cpp")
    with pytest.raises(BadInput, match=r"^serve: serve\.model: no bundled model is named 'llama-3'"):
        parse_serve({"engine": "llama_cpp", "model": "bundled:llama-3"})


def test_spec_is_frozen_and_hashable():
    spec = parse_serve({**BUNDLED, "n_ctx": 4096})
    with pytest.raises(ValidationError):
        spec.n_ctx = 1  # type: ignore[misc]
    assert hash(spec) == hash(parse_serve({**BUNDLED, "n_ctx": 4096}))
    assert isinstance(parse_serve(spec), ServeSpec)


@pytest.mark.parametrize(
    "mapping, field, words",
    [
        ({"engine": "vllm", "n_ctx": 4096}, "serve.n_ctx", "does not apply to engine vllm"),
        ({**BUNDLED, "tensor_parallel_size": 2}, "serve.tensor_parallel_size", "does not apply"),
        ({"engine": "sglang"}, "serve.engine", "'vllm' or 'llama_cpp'"),
        ({}, "serve.engine", "missing"),
        ({**BUNDLED, "host": "0.0.0.0"}, "serve.host", "every interface"),
        ({**BUNDLED, "host": "::"}, "serve.host", "every interface"),
        ({**BUNDLED, "host": "localhost-ish"}, "serve.host", "IP address"),
        ({"engine": "vllm", "colour": 1}, "serve.colour", "unknown serve field"),
        ({"engine": "vllm", "replicas": "2"}, "serve.replicas", "integer"),
        ({"engine": "vllm", "replicas": 0}, "serve.replicas", "greater than or equal to 1"),
        ({"engine": "vllm", "port_range": [9000, 8000]}, "serve.port_range", "low <= high"),
        ({"engine": "vllm", "replicas": 3, "port_range": [9000, 9001]}, "serve", "fewer ports than replicas"),
        ({"engine": "vllm", "limit_mm_per_prompt": {"img": 1}}, "serve.limit_mm_per_prompt", "unknown modality"),
        ({"engine": "vllm", "gpu_memory_utilization": 1.5}, "serve.gpu_memory_utilization", "less than or equal"),
        ({"engine": "vllm", "enable_prefix_caching": "yes"}, "serve.enable_prefix_caching", "boolean"),
    ],
)
def test_bad_serve_mapping_is_one_line_naming_the_field(mapping, field, words):
    with pytest.raises(BadInput) as err:
        parse_serve(mapping, "sweeps/x.yaml: models[1]")
    line = str(err.value)
    assert "\n" not in line
    assert line.startswith(f"sweeps/x.yaml: models[1]: {field}: "), line
    assert words in line


def test_serve_must_be_a_mapping():
    with pytest.raises(BadInput, match="serve is a mapping"):
        parse_serve("vllm", "s.yaml")


def test_identity_ignores_what_cannot_change_an_answer():
    a = parse_serve({"engine": "vllm", "replicas": 1, "port_range": [9000, 9100], "max_restarts": 0})
    b = parse_serve({"engine": "vllm", "replicas": 4, "startup_timeout_s": 60, "gpu_memory_utilization": 0.5})
    assert a.identity() == b.identity()
    assert a.identity() != parse_serve({"engine": "vllm", "seed": 1}).identity()
    assert a.identity() != parse_serve({"engine": "vllm", "max_model_len": 4096}).identity()
