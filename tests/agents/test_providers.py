"""The provider table: which family a model gets, that docs/providers.md covers every family, and
that usage is read from every shape the providers give it."""

from pathlib import Path

import pytest

from agents.openai_compat import usage_of
from agents.providers import FAMILIES, family_for
from agents.usage import Usage


@pytest.mark.parametrize("model, served, family", [
    ("anthropic/claude-opus-4-8", {}, "anthropic-adaptive"),
    ("anthropic/claude-opus-4-7-20260416", {}, "anthropic-adaptive"),
    ("anthropic/claude-sonnet-5", {}, "anthropic-5"),
    ("anthropic/claude-opus-5-5", {}, "anthropic-5"),
    ("openai/gpt-6-astra", {}, "openai-reasoning-6"),
    ("openai/gpt-5.6-terra", {}, "openai-reasoning"),
    ("bedrock/anthropic.claude-opus-4-8-v1:0", {}, "anthropic-adaptive"),
    ("anthropic/claude-opus-4-1-20250805", {}, "anthropic-budget"),
    ("anthropic/claude-opus-4-6", {}, "anthropic-budget"),
    ("anthropic/claude-3-7-sonnet-20250219", {}, "anthropic-budget"),
    ("moonshot/kimi-k2.6", {}, "moonshot-kimi-k2"),
    ("moonshot/kimi-k2.5-preview", {}, "moonshot-kimi-k2"),
    ("moonshot/moonshot-v1-8k", {}, "generic"),
    ("openai/gpt-5", {}, "openai-reasoning"),
    ("openai/o3-mini", {}, "openai-reasoning"),
    ("openai/gpt-4o", {}, "generic"),
    ("hosted_vllm/Qwen/Qwen3.6-27B", {}, "vllm"),
    ("openai/gpt-5", {"provider": "vllm-reasoning"}, "vllm-reasoning"),
    ("gemini/gemini-4-argon", {}, "gemini-3"),
    ("gemini/gemini-3.8-flash", {}, "gemini-3"),
    ("gemini/gemini-3.1-pro-preview", {}, "gemini-3"),
    ("gemini/gemini-3.6-flash", {}, "gemini-3-minimal"),
    ("gemini/gemini-3.1-flash-lite", {}, "gemini-3-minimal"),
    ("gemini/gemini-3-pro-preview", {}, "gemini-3-pro"),
    ("gemini/gemini-2.5-pro", {}, "generic"),
])
def test_a_model_gets_its_family(model, served, family):
    assert family_for(model, **served).name == family


def test_docs_list_every_family_with_its_facts():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "providers.md").read_text()
    for f in FAMILIES:
        assert f"`{f.name}`" in doc, f.name
        assert f"`{f.output_cap}`" in doc
    assert "1,097" in doc and "20,714" in doc and "15,769" in doc and "165 A100-hours" in doc


@pytest.mark.parametrize("usage, expected", [
    # OpenAI, and vLLM with a reasoning parser and --enable-prompt-tokens-details
    ({"prompt_tokens": 100, "completion_tokens": 40, "completion_tokens_details": {"reasoning_tokens": 30},
      "prompt_tokens_details": {"cached_tokens": 64}}, Usage(tokens_in=100, tokens_out=40, tokens_reasoning=30,
                                                            tokens_cached=64)),
    # Moonshot: cached tokens at the top level, no reasoning count
    ({"prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140, "cached_tokens": 50},
     Usage(tokens_in=100, tokens_out=40, tokens_cached=50)),
    # llama.cpp: the counts and nothing more
    ({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}, Usage(tokens_in=7, tokens_out=3)),
    (None, Usage()),
])
def test_usage_is_read_from_every_shape(usage, expected):
    assert usage_of(usage) == expected


def test_moonshots_adapter_reads_the_balance_as_moonshot_documents_it(monkeypatch):
    """``GET {base}/users/me/balance`` with the key as a bearer token: ``data.available_balance``,
    which counts the vouchers alone while the cash is owed (negative); USD on the international
    platform, CNY on the China platform (api.moonshot.cn); a refused key is a ``ListingError``
    whose text holds no key; only the adapters that read a balance say so."""
    from agents.model import ModelConfig
    from agents.providers import APIS, ListingError, api_of
    from agents.providers import moonshot as adapter
    from testing.scripted_server import ScriptedServer

    assert [api.name for api in APIS if api.reads_balance] == ["moonshot"]
    monkeypatch.setenv("GRIDBENCH_KIMI_KEY", "sk-kimi-0123456789")
    with ScriptedServer(persona="moonshot", api_key="sk-kimi-0123456789", balance=-2.5, voucher=3.25) as srv:
        config = ModelConfig.for_model("moonshot/kimi-k2.6", api_base=srv.url, api_key_env="GRIDBENCH_KIMI_KEY")
        api = api_of(config.family)
        balance = api.balance(config, config.api_key())
        assert (balance.amount, balance.currency, balance.where) == (3.25, "USD", f"{srv.url}/users/me/balance")
        assert srv.requests[-1].headers["authorization"] == "Bearer sk-kimi-0123456789"
        srv.balance = 10.0
        assert api.balance(config, config.api_key()).shown() == "$13.25"
        with pytest.raises(ListingError) as refused:
            api.balance(config, "sk-wrong-0123456789")
        assert (refused.value.kind, refused.value.detail) == ("refused", "HTTP 401")
    answer = {"code": 0, "data": {"available_balance": 49.58894, "voucher_balance": 46.58893,
                                  "cash_balance": 3.00001}, "scode": "0x0", "status": True}
    asked = []
    monkeypatch.setattr(adapter, "get_json", lambda url, key: asked.append((url, key)) or answer)
    monkeypatch.setenv("MOONSHOT_API_KEY", "sk-from-litellms-variable")
    china = ModelConfig.for_model("moonshot/kimi-k2.6", api_base="https://api.moonshot.cn/v1")
    assert api.balance(china, None).shown() == "49.59 CNY"
    assert api.balance(ModelConfig.for_model("moonshot/kimi-k2.6"), None).currency == "USD"
    assert asked == [("https://api.moonshot.cn/v1/users/me/balance", "sk-from-litellms-variable"),
                     ("https://api.moonshot.ai/v1/users/me/balance", "sk-from-litellms-variable")]
