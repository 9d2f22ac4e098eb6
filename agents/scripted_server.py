"""A scripted OpenAI- and Anthropic-compatible chat server on 127.0.0.1, for tests and benches.

It speaks ``POST /v1/chat/completions``, Anthropic's ``POST /v1/messages`` and ``GET /v1/models``
over real HTTP, so the agent is exercised exactly as against a provider: retries, faults, usage,
prompt caching and cost accounting.

Where the replies come from (``mode``):

- ``script``: the items of ``script`` in order, one per request; the last one repeats. An item is
  a reply text, a fault name (see ``FAULTS``), or a dict with any of ``reply``, ``reasoning``,
  ``finish_reason``, ``fault``, ``retry_after``, ``latency``, ``usage``.
- ``actions``: ``ACTION: <name>`` for each name of ``actions`` in turn (after a short reasoning).
- ``oracle``: the optimal action for the state shown in the request. The maze is the one named
  by the ``X-Scripted-Maze`` header, else the server's ``maze``, else the maze among ``mazes``
  (a set, folder or list; default: every named set) whose walls match the request's last text
  map or last image. The state is read from the last text map, or, with image-only prompts, by
  matching the last image against frames of the maze's reachable states (built once per maze).
- ``garbage``: prose that names no action on its last line.

How it behaves as a provider (``persona``, docs/providers.md): ``openai`` (the default for
``/v1/chat/completions``: reasoning in ``reasoning_content``, every count reported), ``moonshot``
(Kimi K2.x: thinks unless ``thinking: {type: disabled}``, refuses the sampling values it fixes,
ignores fields it does not know, reports cached tokens at the top level of ``usage`` and no
reasoning count), ``vllm`` (reads the limits of the ``vllm serve`` command line it was "served"
with, ``vllm_argv``, and refuses over-limit requests with vLLM's status and message; the chat
template's ``enable_thinking``; reasoning apart with a reasoning parser, inline in ``<think>``
without; cached tokens only under ``--enable-prompt-tokens-details``) and ``llama-cpp`` (no
thinking switch; ignores unknown fields). ``/v1/messages`` always answers as Anthropic does,
by model: Claude 4.7+ refuses ``budget_tokens`` and any sampling parameter and leaves thinking
text out unless ``display: summarized`` is asked; older Claude thinks within ``budget_tokens``
below ``max_tokens``. Each recorded request holds what the persona applied (``applied``:
thinking, effort, thinking budget, output cap), which tests compare with what gridbench recorded.

Per-request headers override the script: ``X-Scripted-Reply`` (reply text), ``X-Scripted-Fault``
(a fault name). Every request is recorded (path, headers, parsed body, whether it was answered)
in ``requests``, with the step number the prompt asks about: counting the answered ones per
maze and step is how tests prove that no call was paid for twice.

``on_request(request)`` is called for each chat request before it is answered; returning
``"drop"`` closes the connection unanswered (a test kills a process there). ``capacity``: more
requests than this at once are refused with 429 and ``Retry-After: retry_after`` (a provider's
rate limit). Anthropic requests report ``cache_read_input_tokens`` for the longest part of the
prompt up to a ``cache_control`` marker that was sent before, as Anthropic's prompt cache does.

Use it as a context manager (``with ScriptedServer(script=[...]) as srv: srv.url``) or as a
process: ``python -m agents.scripted_server --port 0 --mode oracle --maze example`` prints its
URL on the first line of stdout and serves until terminated.
"""

from __future__ import annotations

import argparse
import base64
import functools
import io
import itertools
import json
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used, so that a bare server starts without them
    import numpy as np

    from env.maze import Maze
    from env.state import MazeState

FAULTS = (
    "429", "500", "503", "hang", "malformed", "empty_choices", "length", "401", "400", "context_length",
)
MODES = ("script", "actions", "oracle", "garbage")
PERSONAS = ("openai", "moonshot", "vllm", "llama-cpp")

_GARBAGE = (
    "I am not sure what to do here. The maze is interesting.",
    "Let me think about the colours in the picture. There is a lot of black.",
    "The answer depends on several factors that I cannot see.",
    "```\nno idea\n```",
)
_ERROR_BODIES = {
    "429": (429, "rate_limit_error", "rate_limit_exceeded", "Rate limit reached for requests"),
    "500": (500, "server_error", None, "The server had an error while processing your request"),
    "503": (503, "server_error", None, "The engine is currently overloaded, please try again later"),
    "400": (400, "invalid_request_error", None, "Invalid value for 'messages': unsupported content part"),
    "context_length": (
        400, "invalid_request_error", "context_length_exceeded",
        "This model's maximum context length is 8192 tokens. However, your messages resulted in "
        "9000 tokens. Please reduce the length of the messages.",
    ),
}


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names in lower case
    body: Any
    received_at: float = field(default_factory=time.time)
    answered: bool = False  # a completion was sent back (what a provider bills)
    wire: Any = None  # the body as it came (``body`` is an Anthropic request in the OpenAI shape)
    applied: dict[str, Any] | None = None  # what the persona applied: thinking, effort, budget, output cap

    @property
    def step(self) -> int | None:
        """The step the prompt asks about (``before step N``), None when it names none."""
        found = _STEP.findall(_request_text(self.body or {}))
        return int(found[-1]) if found else None

    def images(self) -> list[str]:
        """The data URIs of every image part in the request."""
        out = []
        for m in (self.body or {}).get("messages", []):
            if isinstance(m.get("content"), list):
                out += [p["image_url"]["url"] for p in m["content"] if p.get("type") == "image_url"]
        return out


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: dozens of episodes connecting at once would
    # overflow it, and each dropped SYN costs its client a 1 s retransmit
    request_queue_size = 256


class ScriptedServer:
    def __init__(
        self,
        script: list[str | dict[str, Any]] | None = None,
        *,
        mode: str | None = None,
        actions: list[str] | None = None,
        maze: Maze | str | None = None,
        mazes: str | Sequence[Maze | str] | None = None,
        latency: float = 0.0,
        reasoning: str | None = "I look at the maze and decide.",
        reasoning_tokens: int | None = None,
        report_reasoning_tokens: bool = True,
        model: str = "scripted",
        host: str = "127.0.0.1",
        port: int = 0,
        hang_s: float = 600.0,
        seed: int = 0,
        on_request: Callable[[RecordedRequest], object] | None = None,
        capacity: int | None = None,
        retry_after: float = 1.0,
        persona: str = "openai",
        vllm_argv: Sequence[str] | None = None,
    ):
        """``persona``: how ``/v1/chat/completions`` behaves (``PERSONAS``); ``vllm_argv``: the
        ``vllm serve`` command line the ``vllm`` persona was served with."""
        self.mode = mode or ("actions" if actions else "script")
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        self.script = list(script or ["ACTION: forward"])
        self.actions = list(actions or [])
        self.maze = maze
        self.mazes = mazes
        self._by_walls: dict[tuple[str, ...], list[Maze]] | None = None
        self.latency = latency
        self.reasoning = reasoning
        self.reasoning_tokens = reasoning_tokens
        self.report_reasoning_tokens = report_reasoning_tokens
        self.model = model
        self.hang_s = hang_s
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._counter = itertools.count()
        self._stop = threading.Event()
        self._seed = seed
        self._frame_index: dict[tuple[str, int], dict[bytes, MazeState]] = {}
        self.on_request = on_request
        self.capacity = capacity
        self.retry_after = retry_after
        self._busy = 0
        self._cache: set[str] = set()
        self._prompts: list[str] = []
        if persona not in PERSONAS:
            raise ValueError(f"persona must be one of {PERSONAS}, got {persona!r}")
        self.persona: Persona = (VLLMPersona(vllm_argv or ["vllm", "serve", model]) if persona == "vllm"
                                 else {"openai": Persona, "moonshot": MoonshotPersona,
                                       "llama-cpp": LlamaCppPersona}[persona]())
        self._httpd = _Server((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ---- lifecycle ------------------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """The OpenAI-style base URL (ends in ``/v1``): pass it as ``api_base``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedServer:
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-server", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()  # releases hanging handlers
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.endswith(("/chat/completions", "/messages"))]

    # ---- replies ---------------------------------------------------------------------------
    def _next_item(self, index: int, body: dict, headers: dict[str, str]) -> dict[str, Any]:
        if headers.get("x-scripted-fault"):
            return {"fault": headers["x-scripted-fault"]}
        if headers.get("x-scripted-reply"):
            return {"reply": headers["x-scripted-reply"]}
        if self.mode == "script":
            item = self.script[min(index, len(self.script) - 1)]
            if isinstance(item, str):
                return {"fault": item} if item in FAULTS else {"reply": item}
            return dict(item)
        if self.mode == "actions":
            name = self.actions[index % len(self.actions)]
            return {"reply": f"I will go with {name} now.\nACTION: {name}"}
        if self.mode == "garbage":
            return {"reply": _GARBAGE[index % len(_GARBAGE)]}
        return {"reply": self._oracle_reply(body, headers)}

    def _oracle_reply(self, body: dict, headers: dict[str, str]) -> str:
        from agents.builtin import OracleAgent
        from env.sets import resolve_maze
        from env.state import ACTIONS

        spec = headers.get("x-scripted-maze") or self.maze
        candidates = [resolve_maze(spec)] if spec is not None else self._candidates(body)
        state = None
        for maze in candidates:
            state = _state_from_text(maze, body) or self._state_from_image(maze, body)
            if state is not None:
                break
        if state is None:
            return "I cannot see where I am."
        text = _request_text(body)
        if "FINAL_OUTPUT" not in text:
            action = ACTIONS[OracleAgent.choose(maze, state)]
            return f"The shortest way on is {action}.\nACTION: {action}"
        # the study style's sentinel: one action, or the whole rest of the plan when the request
        # asks for a sub-goal or a trajectory; absolute moves when its action list has them
        tokens = _study_tokens(maze, state, cardinal="MOVE_NORTH" in text)
        if "SUB_GOAL" not in text and "<action>, <action>" not in text:
            tokens = tokens[:1]
        head = "SUB_GOAL: the goal\n" if "SUB_GOAL" in text else ""
        return f"The shortest way on.\n{head}FINAL_OUTPUT: {', '.join(tokens)}"

    def _candidates(self, body: dict) -> list[Maze]:
        """Mazes whose walls match the last text map or image of the request."""
        with self._lock:
            if self._by_walls is None:
                from env.sets import NAMED_SETS, resolve_mazes, set_dir

                spec = self.mazes if self.mazes is not None else [
                    n for n in NAMED_SETS if set_dir(n).is_dir() and any(set_dir(n).glob("*.json"))]
                self._by_walls = {}
                for maze in resolve_mazes(spec):
                    self._by_walls.setdefault(tuple(maze.grid), []).append(maze)
        walls = _walls_from_text(body)
        if walls is not None:
            return self._by_walls.get(walls, [])
        pixels = _last_image(body)
        if pixels is None:
            return []
        return [m for grid, ms in self._by_walls.items() for m in ms if _walls_match_image(grid, pixels)]

    def _state_from_image(self, maze: Maze, body: dict) -> MazeState | None:
        from env.render import render_state

        pixels = _last_image(body)
        if pixels is None or not _walls_match_image(maze.grid, pixels):
            return None
        tile = pixels.shape[1] // maze.width
        key = (maze.checksum, tile)
        with self._lock:
            index = self._frame_index.get(key)
            if index is None:
                # every state the oracle knows, keyed by its frame's pixels: built once per maze
                index = {render_state(maze, s, tile).tobytes(): s for s in _reachable_states(maze)}
                self._frame_index[key] = index
        return index.get(pixels.tobytes())

    # ---- HTTP ------------------------------------------------------------------------------
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out in two writes: with Nagle on, the body waits for the
            # client's delayed ACK (40 ms on Linux), more than a fast model takes to answer
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                return None  # tests and benches read stdout; keep it clean

            def _send(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (extra or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:  # noqa: N802
                server.requests.append(RecordedRequest(self.path, {k.lower(): v for k, v in self.headers.items()}, None))
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": server.model, "object": "model", "created": 0, "owned_by": "gridbench"}]})
                else:
                    self._send(404, {"error": {"message": "not found", "type": "not_found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = None
                headers = {k.lower(): v for k, v in self.headers.items()}
                anthropic = self.path.rstrip("/").endswith("/messages")
                record = RecordedRequest(self.path, headers, _openai_shape(body) if anthropic else body, wire=body)
                with server._lock:
                    server.requests.append(record)
                    index = next(server._counter)
                if not (anthropic or self.path.rstrip("/").endswith("/chat/completions")) or not isinstance(body, dict):
                    self._send(404 if body is not None else 400,
                               {"error": {"message": "unsupported request", "type": "invalid_request_error"}})
                    return
                if server.on_request is not None and server.on_request(record) == "drop":
                    self.close_connection = True
                    return
                persona = ANTHROPIC if anthropic else server.persona
                rejection = persona.refusal(body)
                if rejection is not None:
                    self._send(*rejection)
                    return
                record.applied = persona.applied(body)
                with server._lock:
                    server._busy += 1
                    refused = server.capacity is not None and server._busy > server.capacity
                try:
                    if refused:
                        self._fault("429", {"retry_after": server.retry_after}, headers, body)
                        return
                    try:
                        item = server._next_item(index, record.body, headers)
                    except Exception as err:  # a broken script answers 500 instead of dropping the line
                        self._send(500, {"error": {"message": f"scripted server: {err!r}", "type": "server_error"}})
                        return
                    delay = item.get("latency", server.latency)
                    if delay:
                        server._stop.wait(delay)
                    fault = item.get("fault")
                    if fault:
                        self._fault(fault, item, headers, record.body)
                        return
                    reply = server._completion(index, record.body, item)
                    self._send(200, persona.answer(server, body, reply))
                    record.answered = True
                finally:
                    with server._lock:
                        server._busy -= 1

            def _fault(self, fault: str, item: dict, headers: dict[str, str], request: dict) -> None:
                if fault == "hang":
                    server._stop.wait(item.get("hang_s", server.hang_s))
                    self.close_connection = True
                    return
                if fault == "malformed":
                    self._send(200, b'{"id": "chatcmpl-broken", "choices": [{"index": 0, "mess')
                    return
                if fault == "empty_choices":
                    body = server._completion(0, request, {"reply": ""})
                    body["choices"] = []
                    self._send(200, body)
                    return
                if fault == "length":
                    self._send(200, server._completion(0, request, {"reply": "", "finish_reason": "length"}))
                    return
                if fault == "401":
                    # real providers echo (part of) the key back: the agent must scrub it
                    token = headers.get("authorization", "").removeprefix("Bearer ").strip()
                    self._send(401, {"error": {
                        "message": f"Incorrect API key provided: {token}. You can find your API key "
                                   "in your account settings.",
                        "type": "invalid_request_error", "code": "invalid_api_key"}})
                    return
                if fault not in _ERROR_BODIES:
                    self._send(500, {"error": {"message": f"unknown scripted fault {fault!r}", "type": "server_error"}})
                    return
                status, kind, code, message = _ERROR_BODIES[fault]
                extra = {"Retry-After": str(item.get("retry_after", 1))} if status == 429 else None
                self._send(status, {"error": {"message": message, "type": kind, "code": code}}, extra)

        return Handler

    def shared_prefix_tokens(self, body: dict) -> int:
        """Tokens of the longest start this request's prompt shares with an earlier one: what an
        automatic prefix cache (Moonshot's, vLLM's) serves from cache; remembers this prompt."""
        text = _request_text(body)
        with self._lock:
            shared = max((len(os.path.commonprefix([text, before])) for before in self._prompts), default=0)
            self._prompts.append(text)
        return shared // 4

    def cached_prefix(self, key: str | None) -> bool:
        """Whether a prompt prefix was sent before (this server's prompt cache); remembers it."""
        if key is None:
            return False
        with self._lock:
            seen = key in self._cache
            self._cache.add(key)
        return seen

    def _completion(self, index: int, body: dict, item: dict[str, Any]) -> dict[str, Any]:
        reply = item.get("reply", "")
        reasoning = item.get("reasoning", self.reasoning)
        prompt_tokens = _count_prompt_tokens(body)
        reasoning_tokens = self.reasoning_tokens
        if reasoning_tokens is None:
            reasoning_tokens = _approx_tokens(reasoning or "")
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": _approx_tokens(reply) + reasoning_tokens,
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if self.report_reasoning_tokens:
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
        usage.update(item.get("usage", {}))
        message: dict[str, Any] = {"role": "assistant", "content": reply}
        if reasoning:
            message["reasoning_content"] = reasoning
        return {
            "id": f"chatcmpl-scripted-{index}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.model),
            "choices": [{"index": 0, "message": message, "finish_reason": item.get("finish_reason", "stop")}],
            "usage": usage,
        }


# ---- personas ------------------------------------------------------------------------------------
# Each behaves as its provider documents (docs/providers.md lists the sources), on its own: none
# reads gridbench's provider table, so a test against it cannot agree with gridbench by construction.

Refusal = tuple[int, dict[str, Any]]


class Persona:
    """An OpenAI-compatible server that takes every field and reports every count."""

    def refusal(self, body: dict) -> Refusal | None:
        return None

    def applied(self, body: dict) -> dict[str, Any]:
        return {"thinking": None, "reasoning_effort": body.get("reasoning_effort"), "thinking_budget": None,
                "max_output_tokens": body.get("max_completion_tokens") or body.get("max_tokens")}

    def answer(self, server: ScriptedServer, body: dict, completion: dict[str, Any]) -> dict[str, Any]:
        return completion


def _openai_error(status: int, message: str, kind: str = "invalid_request_error") -> Refusal:
    return status, {"error": {"message": message, "type": kind, "code": None}}


class LlamaCppPersona(Persona):
    """llama-cpp-python's server: no thinking switch, no reasoning, no token details; fields it
    does not know are ignored (its request model does not forbid them)."""

    def applied(self, body: dict) -> dict[str, Any]:
        return {"thinking": None, "reasoning_effort": None, "thinking_budget": None,
                "max_output_tokens": body.get("max_tokens")}

    def answer(self, server: ScriptedServer, body: dict, completion: dict[str, Any]) -> dict[str, Any]:
        completion["choices"][0]["message"].pop("reasoning_content", None)
        usage = completion["usage"]
        usage.pop("completion_tokens_details", None)
        usage["completion_tokens"] = _approx_tokens(completion["choices"][0]["message"]["content"] or "")
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return completion


class MoonshotPersona(Persona):
    """Kimi K2.5 / K2.6: thinks unless ``thinking.type`` is ``disabled``; temperature, top_p, n and
    the penalties are fixed (a request giving another value is refused); fields it does not know,
    such as ``reasoning_effort``, are ignored; cached tokens at the top level of ``usage``, no
    reasoning count."""

    FIXED = {"top_p": 0.95, "n": 1, "presence_penalty": 0.0, "frequency_penalty": 0.0}

    @staticmethod
    def thinks(body: dict) -> bool:
        thinking = body.get("thinking")
        return not (isinstance(thinking, dict) and thinking.get("type") == "disabled")

    def refusal(self, body: dict) -> Refusal | None:
        temperature = 1.0 if self.thinks(body) else 0.6
        if "temperature" in body and body["temperature"] != temperature:
            return _openai_error(400, f"invalid temperature: only {temperature:g} is allowed for this model")
        for name, value in self.FIXED.items():
            if name in body and body[name] != value:
                return _openai_error(400, f"invalid {name}: only {value:g} is allowed for this model")
        return None

    def applied(self, body: dict) -> dict[str, Any]:
        return {"thinking": self.thinks(body), "reasoning_effort": None, "thinking_budget": None,
                "max_output_tokens": body.get("max_tokens")}

    def answer(self, server: ScriptedServer, body: dict, completion: dict[str, Any]) -> dict[str, Any]:
        message, usage = completion["choices"][0]["message"], completion["usage"]
        reasoning = message.get("reasoning_content") if self.thinks(body) else None
        if not reasoning:
            message.pop("reasoning_content", None)
        usage.pop("completion_tokens_details", None)
        usage["completion_tokens"] = _approx_tokens(message["content"] or "") + _approx_tokens(reasoning or "")
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        usage["cached_tokens"] = server.shared_prefix_tokens(body)
        return completion


class VLLMPersona(Persona):
    """A vLLM server as ``vllm serve`` with these flags runs it: the model under its served name,
    ``--limit-mm-per-prompt`` and ``--max-model-len`` enforced with vLLM's HTTP 400 and message,
    the chat template's ``enable_thinking`` (on by default, as Qwen3's template has it),
    ``thinking_token_budget`` only with a reasoning parser, reasoning in ``message.reasoning``
    with a parser and inline in ``<think>`` without, reasoning tokens only with a parser, cached
    prompt tokens only under ``--enable-prompt-tokens-details``."""

    def __init__(self, argv: Sequence[str]):
        args = list(argv)

        def flag(name: str) -> str | None:
            return args[args.index(name) + 1] if name in args else None

        self.served = flag("--served-model-name") or args[2]
        limits = flag("--limit-mm-per-prompt")
        self.images = json.loads(limits).get("image", 1) if limits else 1  # vLLM's default: one per modality
        length = flag("--max-model-len")
        self.max_model_len = int(length) if length else None
        self.parser = flag("--reasoning-parser")
        self.token_details = "--enable-prompt-tokens-details" in args

    @staticmethod
    def thinks(body: dict) -> bool:
        kwargs = body.get("chat_template_kwargs")
        return not (isinstance(kwargs, dict) and kwargs.get("enable_thinking") is False)

    def refusal(self, body: dict) -> Refusal | None:
        def error(message: str, status: int = 400, kind: str = "BadRequestError") -> Refusal:
            return status, {"error": {"message": message, "type": kind, "param": None, "code": status}}

        if body.get("model") != self.served:
            return error(f"The model `{body.get('model')}` does not exist.", 404, "NotFoundError")
        images = len(RecordedRequest("", {}, body).images())
        if images > self.images:
            return error(f"At most {self.images} image(s) may be provided in one prompt.")
        if body.get("thinking_token_budget") is not None and not self.parser:
            return error("thinking_token_budget is set but reasoning_config is not configured. Please set "
                         "--reasoning-parser and/or --reasoning-config to use thinking_token_budget.")
        cap = body.get("max_completion_tokens") or body.get("max_tokens") or 0
        prompt = _vision_prompt_tokens(body)
        if self.max_model_len is not None and prompt + cap > self.max_model_len:
            return error(f"This model's maximum context length is {self.max_model_len} tokens. However, your "
                         f"prompt contains {prompt} input tokens and you requested {cap} output tokens. Please "
                         "reduce the length of the input prompt or the number of requested output tokens.")
        return None

    def applied(self, body: dict) -> dict[str, Any]:
        thinks = self.thinks(body)
        budget = body.get("thinking_token_budget") if thinks else None
        return {"thinking": thinks, "reasoning_effort": body.get("reasoning_effort"), "thinking_budget": budget,
                "max_output_tokens": body.get("max_completion_tokens") or body.get("max_tokens")}

    def answer(self, server: ScriptedServer, body: dict, completion: dict[str, Any]) -> dict[str, Any]:
        message, usage = completion["choices"][0]["message"], completion["usage"]
        reasoning = message.pop("reasoning_content", None) if self.thinks(body) else None
        message.pop("reasoning_content", None)
        budget = body.get("thinking_token_budget")
        if reasoning and budget is not None:
            reasoning = reasoning[:4 * budget]
        usage.pop("completion_tokens_details", None)
        usage["prompt_tokens"] = _vision_prompt_tokens(body)
        usage["completion_tokens"] = _approx_tokens(message["content"] or "") + _approx_tokens(reasoning or "")
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if reasoning and self.parser:
            message["reasoning"] = reasoning
            usage["completion_tokens_details"] = {"reasoning_tokens": _approx_tokens(reasoning)}
        elif reasoning:
            message["content"] = f"<think>\n{reasoning}\n</think>\n\n{message['content']}"
        if self.token_details:
            usage["prompt_tokens_details"] = {"cached_tokens": server.shared_prefix_tokens(body)}
        return completion


CLAUDE_SAMPLING = ("temperature", "top_p", "top_k")


class AnthropicPersona(Persona):
    """Anthropic's Messages API, by model. Claude 4.7 and later: adaptive thinking only
    (``thinking.type: enabled`` with a budget is refused), no sampling parameters, thinking text
    only under ``display: summarized`` (else the block comes back empty, with a signature).
    Before 4.7: thinking within ``budget_tokens`` (at least 1024, below ``max_tokens``), and no
    temperature while thinking. Thinking off when ``thinking`` is left out or disabled. Usage
    counts cache reads and writes apart from ``input_tokens`` and reasons in
    ``output_tokens_details.thinking_tokens``; the prompt up to the last ``cache_control`` marker
    is cached as Anthropic's prompt cache does."""

    @staticmethod
    def version(model: Any) -> tuple[int, int]:
        m = re.search(r"claude-(?:opus|sonnet|haiku)-(\d+)(?:[-.](\d{1,2}))?(?!\d)", str(model))
        return (int(m.group(1)), int(m.group(2) or 0)) if m else (0, 0)

    @staticmethod
    def thinking(body: dict) -> dict[str, Any]:
        value = body.get("thinking")
        return value if isinstance(value, dict) and value.get("type") in ("adaptive", "enabled") else {}

    def refusal(self, body: dict) -> Refusal | None:
        def error(message: str) -> Refusal:
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}

        version, thinking = self.version(body.get("model")), self.thinking(body)
        effort = (body.get("output_config") or {}).get("effort")
        if version >= (4, 7):
            for name in CLAUDE_SAMPLING:
                if name in body:
                    return error(f"`{name}` is deprecated for this model.")
            if thinking.get("type") == "enabled":
                return error('"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" '
                             'and "output_config.effort" to control thinking behavior.')
            if effort is not None and effort not in ("low", "medium", "high", "xhigh", "max"):
                return error("output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'")
            return None
        if thinking.get("type") == "adaptive" and version < (4, 6):
            return error("adaptive thinking is not supported on this model")
        if thinking.get("type") == "enabled":
            budget = thinking.get("budget_tokens")
            if not isinstance(budget, int) or budget < 1024:
                return error("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
            if budget >= body.get("max_tokens", 0):
                return error("`max_tokens` must be greater than `thinking.budget_tokens`")
            if body.get("temperature", 1) != 1 or "top_k" in body:
                return error("`temperature` may only be set to 1 when thinking is enabled.")
        return None

    def applied(self, body: dict) -> dict[str, Any]:
        thinking = self.thinking(body)
        return {"thinking": bool(thinking), "reasoning_effort": (body.get("output_config") or {}).get("effort"),
                "thinking_budget": thinking.get("budget_tokens") if thinking.get("type") == "enabled" else None,
                "max_output_tokens": body.get("max_tokens")}

    def answer(self, server: ScriptedServer, body: dict, completion: dict[str, Any]) -> dict[str, Any]:
        message = completion["choices"][0]["message"]
        thinking = self.thinking(body)
        reasoning = message.get("reasoning_content") if thinking else None
        content: list[dict[str, Any]] = []
        if reasoning:
            shown = thinking.get("type") == "enabled" or thinking.get("display") == "summarized"
            content.append({"type": "thinking", "thinking": reasoning if shown else "", "signature": "scripted"})
        content.append({"type": "text", "text": message.get("content") or ""})
        prompt = completion["usage"]["prompt_tokens"]
        # Anthropic reads the longest marked prefix it has cached and writes the rest up to the last marker
        prefixes = _cache_prefixes(body)
        seen = [tokens for key, tokens in prefixes if server.cached_prefix(key)]
        read = max(seen, default=0)
        written = prefixes[-1][1] - read if prefixes else 0
        thought = _approx_tokens(reasoning or "")
        usage: dict[str, Any] = {
            # Anthropic counts cached tokens apart from input_tokens
            "input_tokens": prompt - read - written, "output_tokens": _approx_tokens(message.get("content") or "") + thought,
            "cache_read_input_tokens": read, "cache_creation_input_tokens": written}
        if reasoning:
            usage["output_tokens_details"] = {"thinking_tokens": thought}
        return {
            "id": completion["id"].replace("chatcmpl", "msg"), "type": "message", "role": "assistant",
            "model": body.get("model", server.model), "content": content,
            "stop_reason": {"length": "max_tokens"}.get(completion["choices"][0]["finish_reason"], "end_turn"),
            "stop_sequence": None, "usage": usage,
        }


ANTHROPIC = AnthropicPersona()


def _vision_prompt_tokens(body: dict) -> int:
    """Prompt tokens as a Qwen-VL model counts images (one token per 28 x 28 pixels), text at 4
    characters a token."""
    total = 0
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            total += _approx_tokens(content)
            continue
        for p in content if isinstance(content, list) else []:
            if p.get("type") == "image_url":
                head = base64.b64decode(p["image_url"]["url"].split(",", 1)[1][:64])
                width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
                total += -(-width // 28) * -(-height // 28)
            else:
                total += _approx_tokens(p.get("text", ""))
    return total


def _openai_shape(body: Any) -> Any:
    """An Anthropic Messages body in the OpenAI chat shape the reply logic reads (text parts and
    image parts as data URIs; the system prompt as a first message)."""
    if not isinstance(body, dict):
        return body
    messages: list[dict[str, Any]] = []
    system = body.get("system")
    if system:
        text = system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system)
        messages.append({"role": "system", "content": text})
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, list):
            parts = []
            for b in content:
                if b.get("type") == "image":
                    src = b.get("source", {})
                    parts.append({"type": "image_url", "image_url": {
                        "url": f"data:{src.get('media_type', 'image/png')};base64,{src.get('data', '')}"}})
                elif b.get("type") == "text":
                    parts.append({"type": "text", "text": b.get("text", "")})
            content = parts
        messages.append({"role": m.get("role"), "content": content})
    return {**{k: v for k, v in body.items() if k not in ("messages", "system")}, "messages": messages}


def _cache_prefixes(body: dict) -> list[tuple[str, int]]:
    """The prompt up to and including each block marked ``cache_control`` (as canonical JSON),
    with its tokens by the server's count, in order; empty when nothing is marked."""
    blocks: list[Any] = []
    marked: list[int] = []
    system = body.get("system")
    for b in system if isinstance(system, list) else []:
        blocks.append(b)
        if isinstance(b, dict) and b.get("cache_control"):
            marked.append(len(blocks))
    for m in body.get("messages", []):
        content = m.get("content")
        for b in content if isinstance(content, list) else [{"type": "text", "text": content}]:
            blocks.append({"role": m.get("role"), **b})
            if isinstance(b, dict) and b.get("cache_control"):
                marked.append(len(blocks))
    return [(json.dumps(blocks[:end], sort_keys=True),
             sum(85 if b.get("type") == "image" else _approx_tokens(b.get("text", "")) for b in blocks[:end]))
            for end in marked]


def _last_image(body: dict) -> np.ndarray | None:
    import numpy as np
    from PIL import Image

    uris = RecordedRequest("", {}, body).images()
    if not uris:
        return None
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(uris[-1].split(",", 1)[1]))).convert("RGB"))


WALL_RGB = (100, 100, 100)  # Minigrid's wall grey


def _walls_match_image(grid: tuple[str, ...], pixels: np.ndarray) -> bool:
    """Does the frame show exactly these walls? A wall tile is grey at three inner points."""
    height, width = len(grid), len(grid[0])
    if pixels.shape[0] % height or pixels.shape[1] % width or pixels.shape[0] // height != pixels.shape[1] // width:
        return False
    t = pixels.shape[1] // width
    for y, row in enumerate(grid):
        for x, ch in enumerate(row):
            wall = all(tuple(pixels[y * t + int(f * t), x * t + int(f * t)]) == WALL_RGB for f in (0.25, 0.5, 0.75))
            if wall != (ch == "#"):
                return False
    return True


def _walls_from_text(body: dict) -> tuple[str, ...] | None:
    """The wall layout of the last text map in the request, in maze-file form."""
    blob = _request_text(body)
    at = blob.rfind("You are at (")
    if at < 0:
        return None
    rows: list[str] = []
    for line in reversed(blob[:at].splitlines()):
        m = _MAP_ROW.match(line)
        if m:
            rows.append(m.group(2))
            if m.group(1) == "0":
                break
        elif rows:
            break
    if not rows:
        return None
    return tuple("".join("#" if ch == "#" else "." for ch in row) for row in reversed(rows))


def _reachable_states(maze: Maze, cap: int = 200_000) -> list[MazeState]:
    from env.state import ACTIONS, initial_state, step

    start = initial_state(maze)
    seen = {start}
    frontier = [start]
    while frontier and len(seen) < cap:
        nxt = []
        for s in frontier:
            for a in range(len(ACTIONS) - 1):  # `done` changes nothing
                n, _ = step(maze, s, a)
                if n not in seen:
                    seen.add(n)
                    nxt.append(n)
        frontier = nxt
    return list(seen)


def _study_tokens(maze: Maze, state: MazeState, cardinal: bool) -> list[str]:
    """The oracle's plan from ``state`` in the study style's tokens: its egocentric ones, or
    absolute moves (the turns before a forward folded into the heading it moves in)."""
    from agents.actions import token_of
    from env.oracle import solve
    from env.state import FORWARD, LEFT, PICKUP, RIGHT

    plan = solve(maze, start=state).plan
    if not cardinal:
        return [token_of(a) for a in plan]
    heading, out = state.dir, []
    for a in plan:
        if a in (LEFT, RIGHT):
            heading = (heading + (1 if a == RIGHT else -1)) % 4
        elif a == FORWARD:
            out.append(("MOVE_EAST", "MOVE_SOUTH", "MOVE_WEST", "MOVE_NORTH")[heading])
        else:
            out.append("PICKUP" if a == PICKUP else "INTERACT")
    return out


def _approx_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def _count_prompt_tokens(body: dict) -> int:
    """A deterministic stand-in for a tokenizer: 4 characters a token, 85 tokens an image."""
    total = 0
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            total += _approx_tokens(content)
        elif isinstance(content, list):
            for p in content:
                total += 85 if p.get("type") == "image_url" else _approx_tokens(p.get("text", ""))
    return total


_MAP_ROW = re.compile(r"^\s*(\d+) (\S+)$")
_STEP = re.compile(r"before step (\d+)")


@functools.cache
def _object_patterns(skin: str) -> tuple[re.Pattern, re.Pattern, re.Pattern, re.Pattern]:
    """How the text projection writes, in ``skin``'s words (env.skins), a key on the floor, a door
    and its state, a switch and its state, and the key carried."""
    from env.skins import SKINS

    sk = SKINS[skin]
    key, door, switch = (re.escape(sk.noun(kind)) for kind in ("key", "door", "switch"))
    doors = "|".join(re.escape(sk.door_state(code)) for code in range(3))
    switches = "|".join(re.escape(sk.switch_state(on)) for on in (True, False))
    return (re.compile(rf"(\w+) {key} at \((\d+), (\d+)\)"),
            re.compile(rf"{door} at \((\d+), (\d+)\): ({doors})"),
            re.compile(rf"{switch} at \((\d+), (\d+)\): ({switches})"),
            re.compile(rf"Inventory: a (\w+) {key}\."))


def _request_text(body: dict) -> str:
    texts = []
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [p.get("text", "") for p in content if p.get("type") == "text"]
    return "\n".join(texts)


def _state_from_text(maze: Maze, body: dict) -> MazeState | None:
    """The state shown by the last text map in the request (the layout of env.text.text_projection)."""
    from env.oracle import distance_table
    from env.skins import skin_of
    from env.state import MazeState
    from env.text import AGENT_GLYPHS

    blob = _request_text(body)
    at = blob.rfind("You are at (")
    if at < 0:
        return None
    above = blob[:at].splitlines()
    rows: dict[int, str] = {}
    objects_line = ""
    for line in reversed(above):
        if not objects_line and line.startswith("Objects: ") and not rows:
            objects_line = line
        m = _MAP_ROW.match(line)
        if m and len(m.group(2)) == maze.width:
            rows.setdefault(int(m.group(1)), m.group(2))
            if len(rows) == maze.height:
                break
    if len(rows) != maze.height:
        return None
    pos = direction = None
    for y, row in rows.items():
        for x, ch in enumerate(row):
            if ch in AGENT_GLYPHS:
                pos, direction = (x, y), AGENT_GLYPHS.index(ch)
    if pos is None or direction is None:
        return None
    key_at, door_pattern, switch_pattern, carried_pattern = _object_patterns(maze.skin)
    skin = skin_of(maze)
    door_words = [skin.door_state(code) for code in range(3)]
    floor_keys = [(c, (int(x), int(y))) for c, x, y in key_at.findall(objects_line)]
    door_at = {(int(x), int(y)): door_words.index(st) for x, y, st in door_pattern.findall(objects_line)}
    switch_at = {(int(x), int(y)): st == skin.switch_state(True) for x, y, st in switch_pattern.findall(objects_line)}
    doors = tuple(door_at.get(d.pos, 0) for d in maze.doors)
    switches = tuple(switch_at.get(s.pos, False) for s in maze.switches)
    carried = carried_pattern.search(blob[at:])
    table = distance_table(maze)
    # keys of one colour look alike: take any assignment of key identities the oracle knows
    n = len(maze.keys)
    carry_options = [i for i in range(n) if carried and maze.keys[i].color == carried.group(1)] or [-1]
    for carrying in carry_options:
        floor = [i for i in range(n) if i != carrying]
        if len(floor) != len(floor_keys):
            continue
        for cells in itertools.permutations(floor_keys):
            if any(maze.keys[i].color != colour for i, (colour, _) in zip(floor, cells, strict=True)):
                continue
            keys: list[tuple[int, int] | None] = [None] * n
            for i, (_, cell) in zip(floor, cells, strict=True):
                keys[i] = cell
            state = MazeState(pos, direction, carrying, tuple(keys), doors, switches)
            if table.action_distance(state) is not None:
                return state
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m agents.scripted_server", description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--mode", choices=MODES, default=None)
    ap.add_argument("--script", help="JSON list of script items, or @file.json")
    ap.add_argument("--actions", help="comma-separated action names, sent in turn")
    ap.add_argument("--maze", help="maze for --mode oracle (file, id or set/id)")
    ap.add_argument("--mazes", help="for --mode oracle without --maze: a set or folder to recognise mazes from")
    ap.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    ap.add_argument("--model", default="scripted")
    ap.add_argument("--persona", choices=PERSONAS, default="openai", help="how /v1/chat/completions behaves")
    args = ap.parse_args(argv)
    script = None
    if args.script:
        text = open(args.script[1:]).read() if args.script.startswith("@") else args.script
        script = json.loads(text)
    actions = args.actions.split(",") if args.actions else None
    srv = ScriptedServer(script, mode=args.mode, actions=actions, maze=args.maze, mazes=args.mazes,
                         latency=args.latency, model=args.model, port=args.port, persona=args.persona)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    srv.start()
    print(srv.url, flush=True)
    try:
        while not stop.wait(1.0):
            pass
    finally:
        srv.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
