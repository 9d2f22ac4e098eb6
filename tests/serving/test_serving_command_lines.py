"""The vLLM and llama.cpp command lines and the replica placement, without a GPU or a server."""

import json

import pytest

from agents.model import request_name
from env.errors import BadInput
from orchestrator.serving.command_lines import llama_cpp_command, vllm_command
from orchestrator.serving.placement import (
    NodeCapacity,
    ReplicaBalancer,
    place_replica,
    plan_models,
    plan_replicas,
)
from orchestrator.serving.spec import parse_serve


def flag(cmd: list[str], name: str) -> str:
    return cmd[cmd.index(name) + 1]


def test_vllm_command_carries_every_setting():
    spec = parse_serve({
        "engine": "vllm", "tensor_parallel_size": 2, "replicas": 2, "max_model_len": 32768,
        "reasoning_parser": "deepseek_r1", "seed": 7, "gpu_memory_utilization": 0.85,
        "extra_args": ["--dtype", "bfloat16"],
    }).resolved(images=12, max_model_len=99999, max_concurrency=32)
    cmd = vllm_command("hosted_vllm/Qwen/Qwen2.5-VL-72B-Instruct", spec, host="10.0.0.5", port=8401)
    assert cmd[:3] == ["vllm", "serve", "Qwen/Qwen2.5-VL-72B-Instruct"]
    assert flag(cmd, "--served-model-name") == "Qwen/Qwen2.5-VL-72B-Instruct"
    assert flag(cmd, "--tensor-parallel-size") == "2"
    assert flag(cmd, "--distributed-executor-backend") == "mp"
    assert flag(cmd, "--max-model-len") == "32768"
    assert json.loads(flag(cmd, "--limit-mm-per-prompt")) == {"image": 12, "video": 0}
    assert "--enable-prompt-tokens-details" in cmd  # else vLLM reports no cached tokens
    assert flag(cmd, "--reasoning-parser") == "deepseek_r1"
    assert "--enable-prefix-caching" in cmd and "--no-enable-prefix-caching" not in cmd
    assert flag(cmd, "--max-num-seqs") == "16"  # 32 episodes over 2 replicas
    assert flag(cmd, "--seed") == "7"
    assert flag(cmd, "--generation-config") == "vllm"
    assert flag(cmd, "--gpu-memory-utilization") == "0.85"
    assert flag(cmd, "--dtype") == "bfloat16"
    assert flag(cmd, "--host") == "10.0.0.5" and flag(cmd, "--port") == "8401"
    assert "0.0.0.0" not in cmd


def test_vllm_command_leaves_out_what_is_unset_and_can_turn_caching_off():
    spec = parse_serve({"engine": "vllm", "enable_prefix_caching": False}).resolved(images=1, max_concurrency=3)
    cmd = vllm_command("hosted_vllm/small", spec, host="127.0.0.1", port=8400)
    assert "--max-model-len" not in cmd and "--reasoning-parser" not in cmd
    assert "--distributed-executor-backend" not in cmd  # one GPU: vLLM's single-process default
    assert "--no-enable-prefix-caching" in cmd
    assert json.loads(flag(cmd, "--limit-mm-per-prompt")) == {"image": 1, "video": 0}


def test_vllm_command_needs_a_resolved_spec():
    with pytest.raises(ValueError, match="resolve"):
        vllm_command("hosted_vllm/m", parse_serve({"engine": "vllm"}), host="127.0.0.1", port=8400)


def test_llama_cpp_command():
    spec = parse_serve({"engine": "llama_cpp", "model": "bundled:smollm2-135m-instruct", "n_ctx": 4096, "n_threads": 2})
    cmd = llama_cpp_command("openai/gemma-3-270m", spec, model_path="m.gguf", host="127.0.0.1", port=8400, python="py")
    assert cmd[:3] == ["py", "-m", "orchestrator.serving.llama_server"]
    assert flag(cmd, "--model") == "m.gguf" and flag(cmd, "--model_alias") == "gemma-3-270m"
    assert flag(cmd, "--n_ctx") == "4096" and flag(cmd, "--n_threads") == "2"
    assert flag(cmd, "--seed") == "0"
    assert "--chat_format" not in cmd  # the GGUF's own chat template
    bundled = llama_cpp_command("openai/g", spec, model_path="m", host="127.0.0.1", port=1, chat_format="gemma")
    assert flag(bundled, "--chat_format") == "gemma"


def test_served_name_strips_the_litellm_route():
    assert request_name("hosted_vllm/Qwen/Qwen2.5-VL-7B-Instruct") == "Qwen/Qwen2.5-VL-7B-Instruct"
    assert request_name("openai/gemma-3-270m") == "gemma-3-270m"


def nodes(*gpus: int) -> list[NodeCapacity]:
    return [NodeCapacity(f"n{i}", g, 16.0) for i, g in enumerate(gpus)]


def test_replicas_spread_over_nodes_and_never_split_tensor_parallelism():
    spec = parse_serve({"engine": "vllm", "tensor_parallel_size": 4, "replicas": 4})
    # two 8-GPU nodes: two 4-GPU replicas each, alternating as free GPUs allow
    assert sorted(plan_replicas(spec, nodes(8, 8))) == ["n0", "n0", "n1", "n1"]
    assert plan_replicas(spec, nodes(8, 8))[:2] == ["n0", "n1"]


def test_placement_refuses_tensor_parallelism_across_nodes():
    # 3 + 3 GPUs hold six GPUs but no node holds a whole tp=4 replica
    spec = parse_serve({"engine": "vllm", "tensor_parallel_size": 4})
    with pytest.raises(BadInput, match="need 4 GPUs on one node") as err:
        plan_replicas(spec, nodes(3, 3), source="sweeps/qwen.yaml")
    assert str(err.value).startswith("sweeps/qwen.yaml: serve.replicas:")
    too_many = parse_serve({"engine": "vllm", "tensor_parallel_size": 2, "replicas": 5})
    with pytest.raises(BadInput, match="holds 4 such replica"):
        plan_replicas(too_many, nodes(4, 4))


def test_two_served_models_never_plan_on_the_same_gpus():
    big = parse_serve({"engine": "vllm", "tensor_parallel_size": 2, "replicas": 2})
    small = parse_serve({"engine": "vllm", "tensor_parallel_size": 1, "replicas": 2})
    plans = plan_models({"big": big, "small": small}, nodes(3, 3))
    assert sorted(plans["big"]) == ["n0", "n1"] and sorted(plans["small"]) == ["n0", "n1"]
    with pytest.raises(BadInput, match="^models.small: serve.replicas"):
        plan_models({"big": big, "small": parse_serve({"engine": "vllm", "replicas": 3})}, nodes(3, 3))
    # llama.cpp replicas take no GPU from anyone
    cpu = parse_serve({"engine": "llama_cpp", "model": "bundled:smollm2-135m-instruct"})
    assert plan_models({"cpu": cpu, "big": big}, nodes(2, 2))["big"] == ["n0", "n1"]


def test_llama_cpp_replicas_need_no_gpu():
    spec = parse_serve({"engine": "llama_cpp", "model": "bundled:smollm2-135m-instruct", "replicas": 3})
    assert plan_replicas(spec, [NodeCapacity("a", 0, 2.0), NodeCapacity("b", 0, 8.0)]) == ["b", "a", "b"]
    with pytest.raises(BadInput, match="no alive Ray node"):
        plan_replicas(spec, [])


def test_a_replica_placed_again_goes_to_the_least_loaded_node_that_holds_it():
    cpu = parse_serve({"engine": "llama_cpp", "model": "bundled:smollm2-135m-instruct"})
    # the head of 0 CPUs never hosts a llama.cpp server; of the others, the one serving fewest
    head, a, b = NodeCapacity("head", 0, 0.0), NodeCapacity("a", 0, 2.0), NodeCapacity("b", 0, 8.0)
    assert place_replica(cpu, [head, a, b], {}) == "b"
    assert place_replica(cpu, [head, a, b], {"b": 1}) == "a"
    assert place_replica(cpu, [head], {}) is None
    # a vLLM replica needs tensor_parallel_size free GPUs of one node
    tp2 = parse_serve({"engine": "vllm", "tensor_parallel_size": 2})
    assert place_replica(tp2, nodes(2, 4), {"n1": 1}, {"n1": 2}) == "n0"
    assert place_replica(tp2, nodes(2, 3), {"n0": 1, "n1": 1}, {"n0": 2, "n1": 2}) is None


def test_balancer_picks_the_least_loaded_replica_within_its_cap():
    b = ReplicaBalancer(replicas=2, per_replica=2)
    picks = [b.acquire() for _ in range(4)]
    assert picks == [0, 1, 0, 1]
    assert b.acquire() is None  # both full: the episode waits
    b.release(1)
    assert b.acquire() == 1
    b.release(0)
    b.release(0)
    assert b.acquire(healthy=[False, True]) is None  # replica 1 is full, 0 is down
    assert b.acquire(healthy=[True, True]) == 0
    with pytest.raises(ValueError):
        ReplicaBalancer(replicas=1, per_replica=1).release(0)
