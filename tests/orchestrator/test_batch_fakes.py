"""The scripted server's provider batches speak the providers' protocols: the official
``anthropic`` and ``openai`` SDKs create, poll, read and cancel batches against them, and the
gridbench side (each adapter's ``batches``, ``agents.providers``) reads every outcome the providers document."""

from __future__ import annotations

import asyncio
import json
import time

import anthropic
import openai
import pytest

from agents.model import ModelConfig
from agents.providers import api_of
from testing.scripted_server import ScriptedServer

CLAUDE = "claude-opus-4-8"


def _params(text: str) -> dict:
    return {"model": CLAUDE, "max_tokens": 64, "messages": [{"role": "user", "content": text}]}


def test_anthropic_sdk_creates_polls_and_reads_a_message_batch():
    with ScriptedServer(script=["ACTION: left", "ACTION: right"], batch_latency=0.3) as srv:
        client = anthropic.Anthropic(api_key="k", base_url=srv.url.removesuffix("/v1"), max_retries=0)
        batch = client.messages.batches.create(requests=[
            {"custom_id": "one", "params": _params("a")}, {"custom_id": "two", "params": _params("b")}])
        assert batch.processing_status == "in_progress" and batch.results_url is None
        assert batch.request_counts.processing == 2  # counts stay "processing" until the whole batch ends
        while (batch := client.messages.batches.retrieve(batch.id)).processing_status != "ended":
            time.sleep(0.05)
        assert batch.request_counts.succeeded == 2 and batch.results_url.startswith("http://127.0.0.1")
        results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
        assert {k: r.type for k, r in results.items()} == {"one": "succeeded", "two": "succeeded"}
        texts = sorted(r.message.content[-1].text for r in results.values())  # type: ignore[union-attr]
        assert texts == ["ACTION: left", "ACTION: right"]


def test_anthropic_batches_refuse_a_bad_custom_id_and_answer_a_bad_request_as_errored():
    with ScriptedServer(script=["ACTION: left"]) as srv:
        client = anthropic.Anthropic(api_key="k", base_url=srv.url.removesuffix("/v1"), max_retries=0)
        with pytest.raises(anthropic.BadRequestError):
            client.messages.batches.create(requests=[{"custom_id": "no spaces", "params": _params("a")}])
        bad = {**_params("b"), "temperature": 0.5}  # Claude 4.7+ takes no temperature: validated after submission
        batch = client.messages.batches.create(requests=[
            {"custom_id": "good", "params": _params("a")}, {"custom_id": "bad", "params": bad}])
        results = {r.custom_id: r.result for r in client.messages.batches.results(
            client.messages.batches.retrieve(batch.id).id)}
        assert results["good"].type == "succeeded" and results["bad"].type == "errored"
        assert results["bad"].error.error.type == "invalid_request_error"  # type: ignore[union-attr]


def test_anthropic_expired_and_cancelled_batches():
    with ScriptedServer(script=["ACTION: left"], batch_fates=["expire", "ok"], batch_latency=5) as srv:
        client = anthropic.Anthropic(api_key="k", base_url=srv.url.removesuffix("/v1"), max_retries=0)
        expiring = client.messages.batches.create(requests=[
            {"custom_id": f"r{i}", "params": _params(str(i))} for i in range(4)])
        cancelled = client.messages.batches.create(requests=[{"custom_id": "c", "params": _params("c")}])
        assert client.messages.batches.cancel(cancelled.id).processing_status in ("canceling", "ended")
        ended = client.messages.batches.retrieve(cancelled.id)
        assert ended.processing_status == "ended" and ended.request_counts.canceled == 1
        srv.batches.batches[expiring.id].ends = time.time()  # its 24 hours are up
        kinds = [r.result.type for r in client.messages.batches.results(expiring.id)]
        assert kinds == ["succeeded", "expired", "succeeded", "expired"]


def test_openai_sdk_uploads_a_file_runs_a_batch_and_reads_its_output_and_error_files():
    with ScriptedServer(script=["ACTION: left"], batch_fates=["error"], batch_latency=0.2) as srv:
        client = openai.OpenAI(api_key="k", base_url=srv.url, max_retries=0)
        lines = [{"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
                  "body": {"model": "gpt-5", "messages": [{"role": "user", "content": str(i)}]}} for i in range(3)]
        upload = client.files.create(file=("in.jsonl", "".join(json.dumps(x) + "\n" for x in lines).encode()),
                                     purpose="batch")
        with pytest.raises(openai.BadRequestError):  # OpenAI takes only a 24 h window
            client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                  completion_window="48h")  # type: ignore[arg-type]
        batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                      completion_window="24h")
        assert batch.status == "in_progress"
        while (batch := client.batches.retrieve(batch.id)).status not in ("completed", "failed", "expired"):
            time.sleep(0.05)
        assert batch.status == "completed" and batch.request_counts.failed == 1  # type: ignore[union-attr]
        output = [json.loads(x) for x in client.files.content(batch.output_file_id).text.splitlines()]
        errors = [json.loads(x) for x in client.files.content(batch.error_file_id).text.splitlines()]
        assert sorted(x["custom_id"] for x in output) == ["r1", "r2"]
        assert output[0]["response"]["body"]["choices"][0]["message"]["content"] == "ACTION: left"
        assert errors[0]["custom_id"] == "r0" and errors[0]["response"]["status_code"] == 500


@pytest.mark.parametrize("model", ["anthropic/claude-opus-4-8", "moonshot/kimi-k2.6"])
def test_gridbench_reads_each_outcome_a_provider_documents(model):
    """Submitted through the entry's api_base; an expired batch leaves every other request unprocessed."""
    with ScriptedServer(script=["ACTION: left"], batch_fates=["expire"], batch_latency=0.1,
                        persona="moonshot") as srv:
        config = ModelConfig.for_model(model, api_base=srv.url, tier="batch")
        body = _params("x") if model.startswith("anthropic/") else {
            "model": "kimi-k2.6", "messages": [{"role": "user", "content": "x"}]}

        async def go():
            batches = api_of(config.family).batches(config)
            try:
                batch = await batches.submit({"a": body, "b": body, "c": body})
                while not await batches.ended(batch):
                    await asyncio.sleep(0.05)
                return batch, await batches.outcomes(batch)
            finally:
                await batches.aclose()

        batch, outcomes = asyncio.run(go())
        assert {k: o.kind for k, o in outcomes.items()} == {"a": "succeeded", "b": "expired", "c": "succeeded"}
        assert [c for api_, b, c in srv.batches.submitted if b == batch] == ["a", "b", "c"]


def test_a_batch_holds_no_more_requests_nor_bytes_than_its_tier_allows():
    """``Tier.max_requests`` and ``Tier.max_bytes`` both bound a round's batch (Moonshot documents
    only a file size): the waiting requests go in order until the next would pass either; a
    request larger than a whole batch still goes alone, for the provider to refuse by name."""
    from agents.providers import Tier
    from orchestrator.batching import LINE_OVERHEAD, Waiting, next_batch

    loop = asyncio.new_event_loop()
    try:
        def waiting(sizes: list[int]) -> dict[str, Waiting]:
            return {f"r{i}": Waiting("e", {"x": "a" * n}, loop.create_future()) for i, n in enumerate(sizes)}

        line = len(json.dumps({"x": ""}, separators=(",", ":"))) + LINE_OVERHEAD  # a request's bytes beyond its text
        five = waiting([1000] * 5)
        assert list(next_batch(five, Tier("batch", 0.6, max_bytes=3 * (1000 + line)))) == ["r0", "r1", "r2"]
        assert list(next_batch(five, Tier("batch", 0.5, max_requests=2, max_bytes=10**9))) == ["r0", "r1"]
        assert len(next_batch(five, Tier("batch", 0.5))) == 5
        assert list(next_batch(waiting([5000, 10]), Tier("batch", 0.6, max_bytes=100))) == ["r0"]
    finally:
        loop.close()
