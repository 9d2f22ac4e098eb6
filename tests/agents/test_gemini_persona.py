"""The scripted server as Google's Gemini API (testing/personas.py ``GeminiPersona``, testing/batch_fakes.py
Gemini Batch Mode), driven the way the real clients drive it: litellm's ``gemini/`` models for
``generateContent`` and the google-genai SDK's async client for the Files API and batches."""

from __future__ import annotations

import asyncio
import io
import json
import os
import urllib.error
import urllib.request

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm  # noqa: E402
from google import genai  # noqa: E402
from google.genai import types  # noqa: E402

from agents.litellm_transport import litellm_module  # noqa: E402
from testing.personas import GEMINI_MODELS, gemini_model  # noqa: E402
from testing.scripted_server import PERSONAS, ScriptedServer  # noqa: E402

litellm_module()  # litellm as gridbench sets it up (no debug banners, no tokenizer downloads)
KEY = "gem-test-key-0123"
PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAAB"
       "JRU5ErkJggg==")
SYSTEM = "You walk a maze one action at a time. " * 12


def messages(text="Where now?", detail="high"):
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": [{"type": "text", "text": text},
                                         {"type": "image_url", "image_url": {"url": PNG, "detail": detail}}]}]


def complete(srv, model="gemini-3.8-flash", **kwargs):
    return asyncio.run(litellm.acompletion(model=f"gemini/{model}", messages=kwargs.pop("messages", messages()),
                                           api_base=srv.gemini_url, api_key=KEY, num_retries=0, **kwargs))


def post(srv, path, body, headers=None):
    """A raw request on the Gemini route: (status, parsed body or raw bytes)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(srv.root_url + path, data=data, headers={"Content-Type": "application/json",
                                                                           **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as err:
        status, raw = err.code, err.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw


def get(srv, path, headers=None):
    req = urllib.request.Request(srv.root_url + path, headers=headers or {"x-goog-api-key": KEY})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def generate(thinking=None, **generation):
    config = {**generation, **({"thinkingConfig": thinking} if thinking is not None else {})}
    return {"contents": [{"role": "user", "parts": [{"text": "Where now?"}]}], "generationConfig": config}


def test_litellm_reads_the_answer_thoughts_and_usage_and_the_cache():
    """A Gemini 3 answer through litellm: the thought summary as ``reasoning_content``, thoughts as
    reasoning tokens inside the completion tokens, the implicit cache's hit as cached tokens on the
    second call (its prompt shares the first's start); the request recorded in both shapes."""
    with ScriptedServer(script=[{"reply": "ACTION: left", "reasoning": "Left is two steps shorter."}],
                        api_key=KEY) as srv:
        first = complete(srv, reasoning_effort="high", max_tokens=4000)
        second = complete(srv, reasoning_effort="high", max_tokens=4000)
        requests = srv.chat_requests
    message = second.choices[0].message
    assert message.content == "ACTION: left" and message.reasoning_content == "Left is two steps shorter."
    thoughts = (len("Left is two steps shorter.") + 3) // 4
    usage = second.usage
    assert usage.completion_tokens_details.reasoning_tokens == thoughts
    assert usage.completion_tokens == thoughts + 3  # candidatesTokenCount leaves the thoughts out
    assert usage.prompt_tokens == (len(SYSTEM.strip()) + 3) // 4 + 3 + 1120  # an image at Gemini 3's high resolution
    assert not first.usage.prompt_tokens_details.cached_tokens and usage.prompt_tokens_details.cached_tokens > 0
    assert len(requests) == 2 and all(r.answered for r in requests)
    wire, shaped = requests[0].wire, requests[0].body
    assert "generationConfig" in wire or "generation_config" in wire
    assert shaped["model"] == "gemini-3.8-flash" and shaped["messages"][0]["role"] == "system"
    assert requests[0].images() == [PNG]
    assert requests[0].applied == {"thinking": True, "reasoning_effort": "high", "thinking_budget": None,
                                   "max_output_tokens": 4000, "constraint": None,
                                   "media_resolution": "MEDIA_RESOLUTION_HIGH"}


def test_defaults_and_budgets_are_applied_as_each_generation_takes_them():
    with ScriptedServer(script=["ACTION: left"]) as srv:
        complete(srv, model="gemini-4-argon")  # no thinkingConfig: the model's default level
        complete(srv, model="gemini-2.5-flash", thinking={"type": "enabled", "budget_tokens": 2048})
        complete(srv, model="gemini-2.5-flash", reasoning_effort="none")  # budget 0: off
        complete(srv, model="gemini-2.5-flash-lite", messages=[{"role": "user", "content": "hi"}])
        applied = [r.applied for r in srv.chat_requests]
    assert [(a["thinking"], a["reasoning_effort"], a["thinking_budget"]) for a in applied] == [
        (True, "medium", None), (True, None, 2048), (False, None, None), (False, None, None)]
    assert applied[1]["media_resolution"] == "MEDIA_RESOLUTION_HIGH"  # Gemini 2.5: the request-wide setting


@pytest.mark.parametrize("model, thinking, generation, message", [
    ("gemini-3.8-flash", {"thinkingLevel": "low", "thinkingBudget": 1024}, {}, "one of thinking budget and thinking level"),
    ("gemini-3.8-flash", {"thinkingLevel": "minimal"}, {}, "MINIMAL is not supported"),
    ("gemini-2.5-pro", {"thinkingLevel": "high"}, {}, "not supported for this model"),
    ("gemini-2.5-pro", {"thinkingBudget": 0}, {}, "only works in thinking mode"),
    ("gemini-2.5-pro", {"thinkingBudget": 40000}, {}, "between 128 and 32768"),
    ("gemini-2.5-flash-lite", {"thinkingBudget": 100}, {}, "between 512 and 24576"),
    ("gemini-3.1-pro-preview", {"thinkingBudget": 0}, {}, "only works in thinking mode"),
    ("gemini-4-argon", {"thinkingBudget": 2048}, {}, "Use thinking level"),
    ("gemini-3.8-flash", None, {"maxOutputTokens": 70000}, "maxOutputTokens value of 70000"),
    ("gemini-3.8-flash", None, {"temperature": 2.5}, "temperature value of 2.5"),
    ("gemini-3.8-flash", None, {"max_tokens": 10}, 'Unknown name "max_tokens"'),
    ("gemini-3.8-flash", {"effort": "high"}, {}, 'Unknown name "effort"'),
    ("gemini-3.8-flash", None, {"mediaResolution": "HIGH"}, "media_resolution"),
])
def test_the_contract_is_refused_in_googles_error_shape(model, thinking, generation, message):
    with ScriptedServer(script=["ACTION: left"]) as srv:
        status, body = post(srv, f"/v1beta/models/{model}:generateContent", generate(thinking, **generation))
        assert not srv.chat_requests[0].answered and srv.chat_requests[0].applied is None
    assert status == 400 and body["error"]["status"] == "INVALID_ARGUMENT" and body["error"]["code"] == 400
    assert message in body["error"]["message"]


def test_a_refusal_reaches_litellm_as_a_bad_request_and_an_unknown_model_as_not_found():
    with ScriptedServer(script=["ACTION: left"]) as srv:
        with pytest.raises(litellm.BadRequestError, match="between 128 and 32768"):
            complete(srv, model="gemini-2.5-pro", thinking={"type": "enabled", "budget_tokens": 64})
        status, body = post(srv, "/v1beta/models/gemini-9-ultra:generateContent", generate())
        assert status == 404 and body["error"]["status"] == "NOT_FOUND"
        # per-part media resolution is Gemini 3's; snake_case fields are Google's JSON too
        status, body = post(srv, "/v1alpha/models/gemini-2.5-flash:generateContent", {
            "contents": [{"role": "user", "parts": [{"inline_data": {"mime_type": "image/png", "data": "AA=="},
                                                     "media_resolution": {"level": "MEDIA_RESOLUTION_LOW"}}]}]})
        assert status == 400 and "Per-part" in body["error"]["message"]


@pytest.mark.parametrize("fault, status, error, litellm_status, google_status", [
    ("429", 429, litellm.RateLimitError, 429, "RESOURCE_EXHAUSTED"),
    # litellm reads Google's "overloaded" 503 as an internal server error, status 500
    ("503", 503, litellm.InternalServerError, 500, "UNAVAILABLE"),
    ("500", 500, litellm.InternalServerError, 500, "INTERNAL"),
])
def test_faults_come_back_in_googles_shape_and_map_to_litellms_errors(fault, status, error, litellm_status,
                                                                      google_status):
    with ScriptedServer(script=[{"fault": fault, "retry_after": 3}]) as srv:
        with pytest.raises(error) as raised:
            complete(srv)
        assert raised.value.status_code == litellm_status
        got, body = post(srv, "/v1beta/models/gemini-3.8-flash:generateContent", generate())
    assert got == status and body["error"]["status"] == google_status and body["error"]["code"] == status
    if fault == "429":
        assert body["error"]["details"] == [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}]


def test_length_malformed_and_blocked_answers():
    with ScriptedServer(script=["length", "malformed", "empty_choices"]) as srv:
        path = "/v1beta/models/gemini-3.8-flash:generateContent"
        status, body = post(srv, path, generate())
        assert status == 200 and body["candidates"][0]["finishReason"] == "MAX_TOKENS"
        assert isinstance(post(srv, path, generate())[1], bytes)
        status, body = post(srv, path, generate())
        assert status == 200 and "candidates" not in body and body["promptFeedback"]["blockReason"] == "OTHER"


def test_a_wrong_or_missing_key_is_refused_before_anything_else():
    with ScriptedServer(script=["ACTION: left"], api_key=KEY) as srv:
        path = "/v1beta/models/gemini-3.8-flash:generateContent"
        status, body = post(srv, path, generate(), {"x-goog-api-key": "nope"})
        assert status == 400 and body["error"]["message"] == "API key not valid. Please pass a valid API key."
        assert body["error"]["details"][0]["reason"] == "API_KEY_INVALID"
        status, body = post(srv, path, generate())
        assert status == 403 and body["error"]["status"] == "PERMISSION_DENIED"
        assert get(srv, "/v1beta/models", {"x-goog-api-key": "nope"})[0] == 400
        assert post(srv, path + f"?key={KEY}", generate())[0] == 200  # the key as a query parameter
        assert post(srv, path, generate(), {"x-goog-api-key": KEY})[0] == 200
        assert [r.answered for r in srv.chat_requests] == [False, False, True, True]
        with pytest.raises(litellm.AuthenticationError, match="API key not valid"):
            asyncio.run(litellm.acompletion(model="gemini/gemini-3.8-flash", messages=messages(),
                                            api_base=srv.gemini_url, api_key="wrong", num_retries=0))


def test_models_list_pages_as_google_pages_it():
    with ScriptedServer(persona="gemini", api_key=KEY) as srv:
        status, first = get(srv, "/v1beta/models")
        assert status == 200 and len(first["models"]) == 5 and first["nextPageToken"]
        names, token = [m["name"] for m in first["models"]], first["nextPageToken"]
        while token:
            page = get(srv, f"/v1beta/models?pageToken={token}")[1]
            names += [m["name"] for m in page["models"]]
            token = page.get("nextPageToken")
        assert all(n.startswith("models/gemini-") for n in names) and len(names) == len(set(names)) > 5
        assert "models/gemini-4-argon" in names and "models/gemini-3.1-pro-preview" in names
        assert all(gemini_model(n) is not None for n in names)
        assert get(srv, "/v1beta/models/gemini-3.8-flash")[1]["outputTokenLimit"] == 65536
        # persona "gemini": Google's listing on the OpenAI-style path too; the SDK's pager reads every page
        assert get(srv, "/v1/models")[1]["models"] == first["models"]
        client = genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=srv.root_url, api_version="v1beta"))

        async def listed():
            return [m.name async for m in await client.aio.models.list(config={"page_size": 4})]

        assert asyncio.run(listed()) == names
    assert "gemini" in PERSONAS and len(GEMINI_MODELS) > len(names) - 1


def test_oracle_mode_answers_a_gemini_request(example_maze):
    """The reply logic reads a Gemini body (system instruction, text and inline images) as it reads
    an OpenAI one: the oracle walks the example maze to its goal through litellm's gemini/ route."""
    import env
    from agents import Protocol, Turn, build_messages, parse_action
    from agents.types import PastStep
    from env.oracle import solve

    protocol = Protocol(observation="image", icl_example=False, history_frames=1)
    state, history = env.initial_state(example_maze), []
    with ScriptedServer(mode="oracle", maze="example") as srv:
        for n in range(1, 40):
            sent = build_messages(Turn(example_maze, protocol, n, state, tuple(history), 57))
            action, status = parse_action(complete(srv, messages=sent).choices[0].message.content)
            assert status == "exact"
            nxt, event = env.step(example_maze, state, action)
            history.append(PastStep(n, action, event, state, nxt))
            state = nxt
            if event == "goal":
                break
        assert srv.chat_requests[-1].step == n
    assert event == "goal" and n == solve(example_maze).optimal_actions


def batch_line(key, text, thinking=None):
    request = {"contents": [{"role": "user", "parts": [{"text": text}]}],
               "generationConfig": {"thinkingConfig": {"includeThoughts": True, **(thinking or {})}}}
    return json.dumps({"key": key, "request": request})


async def run_batch(client, data: bytes, model="gemini-3.8-flash", poll_s=0.02):
    uploaded = await client.aio.files.upload(file=io.BytesIO(data),
                                             config=types.UploadFileConfig(mime_type="jsonl", display_name="lines"))
    job = await client.aio.batches.create(model=model, src=uploaded.name, config={"display_name": "gridbench"})
    created = job.state
    while not job.done:
        await asyncio.sleep(poll_s)
        job = await client.aio.batches.get(name=job.name)
    return uploaded, created, job


def sdk_client(srv):
    return genai.Client(api_key=KEY, http_options=types.HttpOptions(base_url=srv.root_url, api_version="v1beta"))


def test_the_sdk_runs_a_whole_batch_through_the_files_api_and_cancels_another():
    """Upload (resumable), create, poll until done, download the results, cancel a second batch;
    a line the persona refuses is that line's error, the batch still succeeds."""
    lines = [batch_line("ep0-s1", "Where now?"), batch_line("ep1-s1", "And now?", {"thinkingLevel": "minimal"}),
             batch_line("ep2-s1", "Next?", {"thinkingLevel": "high"})]
    with ScriptedServer(script=[{"reply": "ACTION: left", "reasoning": "Shorter."}], api_key=KEY,
                        batch_latency=0.15) as srv:
        client = sdk_client(srv)

        async def flow():
            uploaded, created, job = await run_batch(client, "\n".join(lines).encode())
            results = await client.aio.files.download(file=job.dest.file_name)
            other = await client.aio.batches.create(
                model="gemini-3.8-flash", src=[{"contents": [{"role": "user", "parts": [{"text": "x"}]}]}],
                config={"display_name": "to cancel"})
            await client.aio.batches.cancel(name=other.name)
            return uploaded, created, job, results, await client.aio.batches.get(name=other.name)

        uploaded, created, job, results, cancelled = asyncio.run(flow())
        submitted = list(srv.batches.submitted)
        paths = [r.path.split("?")[0] for r in srv.requests]
        assert not srv.chat_requests  # a batch's lines are no synchronous calls
    assert uploaded.name.startswith("files/") and uploaded.size_bytes == len("\n".join(lines).encode())
    assert created == types.JobState.JOB_STATE_PENDING and job.state == types.JobState.JOB_STATE_SUCCEEDED
    assert job.dest.file_name.startswith("files/batch-")
    out = {line["key"]: line for line in map(json.loads, results.decode().splitlines())}
    assert set(out) == {"ep0-s1", "ep1-s1", "ep2-s1"}
    parts = out["ep0-s1"]["response"]["candidates"][0]["content"]["parts"]
    assert parts == [{"text": "Shorter.", "thought": True}, {"text": "ACTION: left"}]
    assert out["ep0-s1"]["response"]["usageMetadata"]["thoughtsTokenCount"] == 2
    assert out["ep1-s1"]["error"]["code"] == 3 and "MINIMAL" in out["ep1-s1"]["error"]["message"]
    assert "response" in out["ep2-s1"]
    assert cancelled.state == types.JobState.JOB_STATE_CANCELLED and cancelled.dest is None
    assert [(api, key) for api, _, key in submitted] == [("gemini", "ep0-s1"), ("gemini", "ep1-s1"),
                                                         ("gemini", "ep2-s1"), ("gemini", "0")]
    assert {batch for _, batch, _ in submitted[:3]} == {job.name}
    assert paths[:3] == ["/upload/v1beta/files", "/upload/v1beta/files",
                         "/v1beta/models/gemini-3.8-flash:batchGenerateContent"]


@pytest.mark.parametrize("fate", ["expire", "error"])
def test_batch_fates(fate):
    """``expire``: the batch expires whole, with no results; ``error``: its first line comes back
    as the overloaded model's error, the rest answered."""
    with ScriptedServer(script=["ACTION: left"], api_key=KEY, batch_latency=0.05, batch_fates=[fate]) as srv:
        client = sdk_client(srv)

        async def flow():
            _, _, job = await run_batch(client, "\n".join(batch_line(f"k{i}", "hi") for i in range(3)).encode())
            results = await client.aio.files.download(file=job.dest.file_name) if job.dest else None
            return job, results

        job, results = asyncio.run(flow())
        assert len(srv.batches.submitted) == 3
    if fate == "expire":
        assert job.state == types.JobState.JOB_STATE_EXPIRED and job.dest is None and results is None
    else:
        assert job.state == types.JobState.JOB_STATE_SUCCEEDED
        lines = [json.loads(line) for line in results.decode().splitlines()]
        assert lines[0] == {"key": "k0", "error": {"code": 14, "message": "The model is overloaded. Please try again later."}}
        assert all("response" in line for line in lines[1:])


def test_inline_batches_answer_inline_and_unknown_models_and_files_are_not_found():
    with ScriptedServer(script=["ACTION: left"], api_key=KEY) as srv:
        client = sdk_client(srv)

        async def flow():
            job = await client.aio.batches.create(
                model="gemini-2.5-flash",
                src=[{"contents": [{"role": "user", "parts": [{"text": "x"}]}]},
                     {"contents": [{"role": "user", "parts": [{"text": "y"}]}],
                      "config": {"thinking_config": {"thinking_budget": 0}}}])
            return await client.aio.batches.get(name=job.name)

        job = asyncio.run(flow())
        headers = {"x-goog-api-key": KEY}
        assert post(srv, "/v1beta/models/gemini-0:batchGenerateContent",
                    {"batch": {"inputConfig": {"fileName": "files/x"}}}, headers)[0] == 404
        assert post(srv, "/v1beta/models/gemini-3.8-flash:batchGenerateContent",
                    {"batch": {"inputConfig": {"fileName": "files/none"}}}, headers)[0] == 404
    assert job.state == types.JobState.JOB_STATE_SUCCEEDED
    answers = job.dest.inlined_responses
    assert len(answers) == 2 and all(a.response.text == "ACTION: left" for a in answers)
    assert answers[1].response.usage_metadata.thoughts_token_count is None  # budget 0: 2.5 Flash did not think
