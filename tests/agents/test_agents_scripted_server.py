import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

import env
from agents import PRESETS, Protocol, Turn, build_messages, parse_action
from env.oracle import solve
from testing.scripted_server import FAULTS, ScriptedServer

ROOT = Path(__file__).resolve().parents[2]


def post(url, body, headers=None, timeout=10):
    req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def chat(text="hello"):
    return {"model": "scripted", "messages": [{"role": "user", "content": text}]}


def test_models_and_scripted_replies_in_order():
    with ScriptedServer(script=["ACTION: left", {"reply": "ACTION: right", "reasoning": "why not"}]) as srv:
        with urllib.request.urlopen(srv.url + "/models", timeout=10) as r:
            assert json.loads(r.read())["data"][0]["id"] == "scripted"
        replies = []
        for _ in range(3):
            status, _, raw = post(srv.url, chat(), {"X-Test": "yes"})
            body = json.loads(raw)
            assert status == 200
            replies.append(body["choices"][0]["message"]["content"])
        assert replies == ["ACTION: left", "ACTION: right", "ACTION: right"]  # the last item repeats
        assert body["choices"][0]["message"]["reasoning_content"] == "why not"
        usage = body["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
        assert usage["completion_tokens_details"]["reasoning_tokens"] == 2
        assert len(srv.chat_requests) == 3 and srv.chat_requests[0].headers["x-test"] == "yes"


@pytest.mark.parametrize("fault, status", [
    ("429", 429), ("500", 500), ("503", 503), ("401", 401), ("400", 400), ("context_length", 400),
])
def test_error_faults(fault, status):
    with ScriptedServer(script=[{"fault": fault, "retry_after": 3}]) as srv:
        got, headers, raw = post(srv.url, chat(), {"Authorization": "Bearer sk-fake-123456789"})
        assert got == status
        error = json.loads(raw)["error"]
        assert error["message"]
        if fault == "429":
            assert headers["Retry-After"] == "3"
        if fault == "401":
            assert "sk-fake-123456789" in error["message"]  # echoed, like real providers
        if fault == "context_length":
            assert error["code"] == "context_length_exceeded"


def test_200_faults():
    with ScriptedServer(script=["malformed", "empty_choices", "length"]) as srv:
        _, _, raw = post(srv.url, chat())
        with pytest.raises(json.JSONDecodeError):
            json.loads(raw)
        assert json.loads(post(srv.url, chat())[2])["choices"] == []
        choice = json.loads(post(srv.url, chat())[2])["choices"][0]
        assert choice["finish_reason"] == "length" and choice["message"]["content"] == ""


def test_hang_is_released_by_close():
    srv = ScriptedServer(script=["hang"], hang_s=60).start()
    with pytest.raises((TimeoutError, urllib.error.URLError)):
        post(srv.url, chat(), timeout=0.5)
    srv.close()  # must not wait for the 60 s hang


def test_header_overrides_and_garbage():
    with ScriptedServer(mode="garbage") as srv:
        body = json.loads(post(srv.url, chat())[2])
        assert parse_action(body["choices"][0]["message"]["content"]) == (None, "invalid")
        body = json.loads(post(srv.url, chat(), {"X-Scripted-Reply": "ACTION: done"})[2])
        assert body["choices"][0]["message"]["content"] == "ACTION: done"
        assert post(srv.url, chat(), {"X-Scripted-Fault": "503"})[0] == 503
    assert set(FAULTS) >= {"429", "500", "503", "hang", "malformed", "empty_choices", "length", "401", "400",
                           "context_length"}


@pytest.mark.parametrize("which", [{"maze": "example"}, {"mazes": "hand"}, {}, {"maze": "neutral"}],
                         ids=["maze", "mazes", "named-sets", "reskinned-maze"])
@pytest.mark.parametrize("observation", ["text", "image"])
def test_oracle_mode_reads_the_state_from_the_prompt(observation, which, example_maze, tmp_path):
    """From the text map or the frame, in either skin (the neutral one names and draws everything
    differently)."""
    from agents.types import PastStep
    from env.skins import with_skin

    if which.get("maze") == "neutral":
        example_maze = with_skin(example_maze, "neutral")
        which = {"maze": str(env.save_maze(example_maze, tmp_path / "neutral.json"))}
    protocol = Protocol(observation=observation, icl_example=False, history_frames=1)
    state, history = env.initial_state(example_maze), []

    with ScriptedServer(mode="oracle", **which) as srv:
        for n in range(1, 30):
            messages = build_messages(Turn(example_maze, protocol, n, state, tuple(history), 57))
            body = json.loads(post(srv.url, {"model": "scripted", "messages": messages})[2])
            action, status = parse_action(body["choices"][0]["message"]["content"])
            assert status == "exact"
            nxt, event = env.step(example_maze, state, action)
            history.append(PastStep(n, action, event, state, nxt))
            state = nxt
            if event == "goal":
                break
    assert event == "goal" and n == solve(example_maze).optimal_actions


def test_subprocess_prints_its_url_and_serves():
    proc = subprocess.Popen([sys.executable, "-m", "testing.scripted_server", "--port", "0",
                             "--actions", "pickup,toggle"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        contents = [json.loads(post(url, chat())[2])["choices"][0]["message"]["content"] for _ in range(3)]
        assert [parse_action(c)[0] for c in contents] == [3, 4, 3]
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0


def test_preset_prompt_round_trips_through_the_server(example_maze):
    messages = build_messages(Turn(example_maze, PRESETS["gridbench-baseline"], 1, env.initial_state(example_maze), (), 57))
    with ScriptedServer() as srv:
        post(srv.url, {"model": "scripted", "messages": messages})
        (req,) = srv.chat_requests
        assert req.body["messages"] == messages and len(req.images()) >= 2


def test_latency_delays_each_reply():
    import time

    with ScriptedServer(script=["ACTION: left"], latency=0.3) as srv:
        t0 = time.perf_counter()
        post(srv.url, chat())
        assert time.perf_counter() - t0 >= 0.3
