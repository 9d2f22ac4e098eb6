"""An OpenAI-compatible server gridbench or its user serves: vLLM (with a reasoning parser or
without) and llama.cpp (llama-cpp-python's server).

Its requests go through the lean OpenAI-compatible client (``agents.openai_compat``) when the
run serves the model, through litellm (``hosted_vllm/...``) otherwise. A served model's family is
named by what its servers speak (``orchestrator.serving``) or by the entry's ``provider:``; a
``hosted_vllm/`` string alone means vLLM without a reasoning parser. Every fact is in
docs/providers.md with its source.
"""

from __future__ import annotations

from agents.providers.api import ProviderAPI
from agents.providers.family import Control, ProviderFamily, Switch

TEMPLATE_ON = {"chat_template_kwargs": {"enable_thinking": True}}
TEMPLATE_OFF = {"chat_template_kwargs": {"enable_thinking": False}}
VLLM_CACHED = "usage.prompt_tokens_details.cached_tokens, only when served with --enable-prompt-tokens-details"
VLLM_REASONING = ProviderFamily(
    name="vllm-reasoning", title="vLLM with a reasoning parser",
    switch=Switch(on=TEMPLATE_ON, off=TEMPLATE_OFF),
    budget=Control(("thinking_token_budget",), minimum=1, with_thinking=True),
    output_cap="max_completion_tokens", constrains_by="structured_outputs",
    litellm_extra_body=("chat_template_kwargs", "thinking_token_budget", "structured_outputs"),
    reasoning_text="message.reasoning (message.reasoning_content before vLLM 0.16)",
    reasoning_tokens="usage.completion_tokens_details.reasoning_tokens",
    cached_tokens=VLLM_CACHED, prior="qwen",
)
VLLM = ProviderFamily(
    name="vllm", title="vLLM without a reasoning parser",
    switch=Switch(on=TEMPLATE_ON, off=TEMPLATE_OFF),
    output_cap="max_completion_tokens", constrains_by="structured_outputs", inline_reasoning=True,
    litellm_extra_body=("chat_template_kwargs", "structured_outputs"),
    reasoning_text="inline in message.content (<think> ... </think>); the reply parser skips it",
    reasoning_tokens="not reported: counted as output",
    cached_tokens=VLLM_CACHED, prior="qwen",
)
LLAMA_CPP = ProviderFamily(
    name="llama-cpp", title="llama.cpp (llama-cpp-python's server)",
    switch=None, constrains_by="grammar", litellm_extra_body=("grammar",),
    reasoning_text="none",
    reasoning_tokens="not reported",
    cached_tokens="not reported",
)


class ServedAPI(ProviderAPI):
    name = "served"
    families = (VLLM_REASONING, VLLM, LLAMA_CPP)

    def family(self, prefix: str, name: str) -> ProviderFamily | None:
        return VLLM if prefix == "hosted_vllm" else None


API = ServedAPI()
