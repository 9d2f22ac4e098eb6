"""A scripted OpenAI-, Anthropic- and Gemini-compatible chat server on 127.0.0.1, for tests and
benches (not installed with gridbench: ``testing/`` is the test suite's and the benches' own).

It speaks ``POST /v1/chat/completions``, Anthropic's ``POST /v1/messages``, Google's ``POST
.../models/{model}:generateContent`` and ``GET /v1/models`` (Google's ``GET /v1beta/models``),
and as Moonshot the account's ``GET /v1/users/me/balance``, over real HTTP, so the agent is exercised exactly as against a provider: retries, faults, usage,
prompt caching and cost accounting.

Where the replies come from (``mode``):

- ``script``: the items of ``script`` in order, one per request; the last one repeats. An item is
  a reply text, a fault name (see ``FAULTS``), or a dict with any of ``reply``, ``reasoning``,
  ``finish_reason``, ``fault``, ``retry_after``, ``latency``, ``usage``.
- ``actions``: ``ACTION: <name>`` for each name of ``actions`` in turn (after a short reasoning).
- ``oracle``: the optimal action for the state shown in the request. The maze is the one named
  by the ``X-Scripted-Maze`` header, else the server's ``maze``, else the maze among ``mazes``
  (a set, folder or list; default: every named set) whose walls match the request's last text
  map or last image. The state is the one whose text projection, frame (2D, or 3D from any
  camera), or study-style description the request shows last, among the states the oracle's
  sweep reaches (``testing.reading``).
- ``never-toggle``, ``colour-blind``, ``mirror-blind``, ``text-blind``: as ``oracle``, the answer of
  an agent with that one defect (``testing.defects``): it never toggles a switch, it cannot tell
  colours apart, it cannot tell a maze from its mirror image (it needs its source among ``mazes``),
  it cannot read the text map (shown no frame, it answers ``done``).
- ``garbage``: prose that names no action on its last line.

How it behaves as a provider (``persona``, docs/providers.md, ``testing.personas``): ``openai`` (the default for
``/v1/chat/completions``: reasoning in ``reasoning_content``, every count reported),
``openai-reasoning`` (OpenAI's reasoning models: ``max_completion_tokens`` only, no sampling but
the default, the model's effort levels, image ``detail`` and ``service_tier`` checked, reasoning
counted but never returned), ``moonshot``
(Kimi K2.x: thinks unless ``thinking: {type: disabled}``, refuses the sampling values it fixes,
ignores fields it does not know, reports cached tokens at the top level of ``usage`` and no
reasoning count; answers ``GET /v1/users/me/balance`` as Moonshot documents it, from the
settable ``balance`` (cash) and ``voucher``: ``available_balance`` is the voucher plus the cash
when that is not negative), ``vllm`` (reads the limits of the ``vllm serve`` command line it was "served"
with, ``vllm_argv``, and refuses over-limit requests with vLLM's status and message; the chat
template's ``enable_thinking``; reasoning apart with a reasoning parser, inline in ``<think>``
without; cached tokens only under ``--enable-prompt-tokens-details``) and ``llama-cpp`` (no
thinking switch; ignores unknown fields). ``/v1/messages`` always answers as Anthropic does,
by model: Claude 5 cannot turn thinking off and thinks at effort medium unless told; Claude 4.7+ refuses ``budget_tokens`` and any sampling parameter and leaves thinking
text out unless ``display: summarized`` is asked; older Claude thinks within ``budget_tokens``
below ``max_tokens``. ``.../models/{model}:generateContent`` (with or without ``/v1beta`` or
``/v1alpha``; ``gemini_url`` is litellm's ``api_base`` for it, ``root_url`` the google-genai SDK's
``base_url``) always answers as Google's Gemini API does (``testing.personas.GeminiPersona``, by
model: thinking levels or budgets as each generation takes them, Google's error body, thought
summaries under ``includeThoughts``, ``usageMetadata`` with the implicit cache's hits), its
request recorded in the OpenAI shape with Google's own body in ``wire``; persona ``gemini`` makes
the whole server Google's (its model listing, paged, and its key errors on every path). Each
recorded request holds what the persona applied (``applied``: thinking, effort, thinking budget,
output cap; Gemini's also the media resolution), which tests compare with what gridbench recorded.

``api_key``: the one key the server takes. A request without it (``Authorization: Bearer <key>``, or
Anthropic's ``x-api-key`` header) is refused with 401 before anything else, its model
listing included, with the body the provider sends (OpenAI's echoes part of the key it got). On
the Gemini API's routes the key is ``x-goog-api-key`` or ``?key=``, and a wrong one is Google's
400 ``API_KEY_INVALID`` (none at all, its 403); faults come back in Google's shape there too.

Per-request headers override the script: ``X-Scripted-Reply`` (reply text), ``X-Scripted-Fault``
(a fault name). Every request is recorded (path, headers, parsed body, whether it was answered)
in ``requests``, with the step number the prompt asks about: counting the answered ones per
maze and step is how tests prove that no call was paid for twice.

``on_request(request)`` is called for each chat request before it is answered; returning
``"drop"`` closes the connection unanswered (a test kills a process there). ``capacity``: more
requests than this at once are refused with 429 and ``Retry-After: retry_after`` (a provider's
rate limit). Anthropic requests report ``cache_read_input_tokens`` for the longest part of the
prompt up to a ``cache_control`` marker that was sent before, as Anthropic's prompt cache does.

Provider batches (``testing.batch_fakes``): Anthropic's Message Batches, OpenAI's (and
Moonshot's) files and batches endpoints, and Gemini's Batch Mode through its Files API, each
request answered by the script when its batch ends
(``batch_latency`` seconds after it was created; ``batch_fates``: ``ok``, ``expire``, ``error``).
The flex tier: ``flex_unavailable`` requests with ``service_tier: "flex"`` are refused first with
OpenAI's 429 "Resource Unavailable" (nothing answered, nothing billed); answers echo the tier.

Use it as a context manager (``with ScriptedServer(script=[...]) as srv: srv.url``) or as a
process: ``python -m testing.scripted_server --port 0 --mode oracle --maze example`` prints its
URL on the first line of stdout and serves until terminated.
"""

from __future__ import annotations

import argparse
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
from urllib import parse as urllib_parse

from testing.batch_fakes import BatchFakes, Reply
from testing.defects import DEFECTS, defect_plan
from testing.personas import (
    ANTHROPIC,
    GEMINI,
    GEMINI_LISTED_NAMES,
    GEMINI_MODELS,
    GOOGLE_STATUS,
    LlamaCppPersona,
    MoonshotPersona,
    OpenAIReasoningPersona,
    Persona,
    VLLMPersona,
    approx_tokens,
    count_prompt_tokens,
    gemini_openai_shape,
    google_error,
    google_key_error,
    openai_shape,
)
from testing.reading import (
    MazeStates,
    last_image,
    plan_tokens,
    request_images,
    request_text,
    step_asked,
    study_tokens,
    walls_from_text,
    walls_match_image,
)

if TYPE_CHECKING:  # imported where used, so that a bare server starts without them
    from env.maze import Maze

FAULTS = (
    "429", "insufficient_quota", "500", "503", "hang", "malformed", "empty_choices", "length", "401", "400", "context_length",
)
MODES = ("script", "actions", "oracle", *DEFECTS, "garbage")
PERSONAS = ("openai", "openai-reasoning", "moonshot", "vllm", "llama-cpp", "gemini")
# Gemini's generateContent, under any API version (v1beta, v1alpha) or none: the model is the path's
GEMINI_CALL = re.compile(r"(?:^|/)models/([^/:?]+):generateContent$")
GEMINI_PAGE_SIZE = 5  # the fake's default models.list page (Google's is 50): small enough to page

_GARBAGE = (
    "I am not sure what to do here. The maze is interesting.",
    "Let me think about the colours in the picture. There is a lot of black.",
    "The answer depends on several factors that I cannot see.",
    "```\nno idea\n```",
)
_ERROR_BODIES = {
    "429": (429, "rate_limit_error", "rate_limit_exceeded", "Rate limit reached for requests"),
    "insufficient_quota": (429, "insufficient_quota", "insufficient_quota",
                           "You exceeded your current quota, please check your plan and billing details."),
    "500": (500, "server_error", None, "The server had an error while processing your request"),
    "503": (503, "server_error", None, "The engine is currently overloaded, please try again later"),
    "400": (400, "invalid_request_error", None, "Invalid value for 'messages': unsupported content part"),
    "context_length": (
        400, "invalid_request_error", "context_length_exceeded",
        "This model's maximum context length is 8192 tokens. However, your messages resulted in "
        "9000 tokens. Please reduce the length of the messages.",
    ),
}
# the same faults as the Gemini API answers them: (HTTP status, message)
_GOOGLE_FAULTS = {
    "429": (429, "Resource has been exhausted (e.g. check quota)."),
    "insufficient_quota": (429, "You exceeded your current quota, please check your plan and billing details."),
    "500": (500, "An internal error has occurred. Please retry or report in "
                 "https://developers.generativeai.google/guide/troubleshooting"),
    "503": (503, "The model is overloaded. Please try again later."),
    "400": (400, "Request contains an invalid argument."),
    "context_length": (400, "The input token count (9000) exceeds the maximum number of tokens allowed (8192)."),
}


def gemini_path(path: str) -> str | None:
    """The model a Gemini ``generateContent`` path names, None for any other path."""
    m = GEMINI_CALL.search(path.split("?", 1)[0].rstrip("/"))
    return m.group(1) if m else None


def google_route(path: str, headers: dict[str, str]) -> bool:
    """Whether a request is the Gemini API's: its paths (a version ``v1beta``/``v1alpha``, the
    upload and download roots, ``:generateContent``) or its key (``x-goog-api-key``, ``?key=``)."""
    bare, _, query = path.partition("?")
    return (gemini_path(path) is not None or bare.endswith(":batchGenerateContent")
            or re.match(r"/(upload/|download/)?v1(beta|alpha)\b", bare) is not None
            or "x-goog-api-key" in headers or re.search(r"(^|&)key=", query) is not None)


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
        """The step the prompt asks about, None when it names none."""
        return step_asked(self.body or {})

    def images(self) -> list[str]:
        """The data URIs of every image part in the request."""
        return request_images(self.body or {})


class _Server(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: dozens of episodes connecting at once would
    # overflow it, and each dropped SYN costs its client a 1 s retransmit
    request_queue_size = 256
    scripted: ScriptedServer  # the server whose script answers


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
        api_key: str | None = None,
        batch_latency: float = 0.0,
        batch_fates: Sequence[str] = ("ok",),
        flex_unavailable: int = 0,
        balance: float = 100.0,
        voucher: float = 0.0,
    ):
        """``persona``: how ``/v1/chat/completions`` behaves (``PERSONAS``; ``gemini``: as ``openai``,
        with Google's model listing and key errors on every path); ``vllm_argv``: the ``vllm serve``
        command line the ``vllm`` persona was served with."""
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
        self._states: dict[str, MazeStates] = {}  # maze checksum -> its states, by text and by frame
        self.on_request = on_request
        self.capacity = capacity
        self.retry_after = retry_after
        self._busy = 0
        self._cache: set[str] = set()
        self._prompts: list[str] = []
        self.api_key = api_key
        if persona not in PERSONAS:
            raise ValueError(f"persona must be one of {PERSONAS}, got {persona!r}")
        self.persona: Persona = (VLLMPersona(vllm_argv or ["vllm", "serve", model]) if persona == "vllm"
                                 else {"openai": Persona, "openai-reasoning": OpenAIReasoningPersona, "moonshot": MoonshotPersona,
                                       "llama-cpp": LlamaCppPersona, "gemini": Persona}[persona]())
        self.google = persona == "gemini"  # Google's model listing and key errors on every path
        self.moonshot = persona == "moonshot"  # Moonshot's balance endpoint
        self.balance, self.voucher = balance, voucher  # the account's cash and vouchers (persona moonshot)
        self.batches = BatchFakes(self, batch_latency, list(batch_fates))
        self.flex_unavailable = flex_unavailable
        self._httpd = _Server((host, port), _Handler)
        self._httpd.scripted = self
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

    @property
    def gemini_url(self) -> str:
        """Gemini's versioned base URL (ends in ``/v1beta``): litellm's ``api_base`` for ``gemini/`` models."""
        return f"http://127.0.0.1:{self.port}/v1beta"

    @property
    def root_url(self) -> str:
        """The server with no path: the google-genai SDK's ``base_url`` (it adds the version itself)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ScriptedServer:
        # shutdown() waits for the serve loop's next poll: at the default 0.5 s, every server a test
        # closes cost it up to half a second
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02},
                                        name="scripted-server", daemon=True)
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
        return [r for r in self.requests
                if r.path.split("?", 1)[0].endswith(("/chat/completions", "/messages", ":generateContent"))]

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
        """The oracle's answer, or (a defect's mode) the answer of an agent with that defect."""
        from agents.builtin import OracleAgent
        from env.sets import resolve_maze
        from env.state import ACTIONS

        spec = headers.get("x-scripted-maze") or self.maze
        candidates = [resolve_maze(spec)] if spec is not None else self._candidates(body)
        state = None
        for maze in candidates:
            with self._lock:
                shown = self._states.setdefault(maze.checksum, MazeStates(maze))
            state = shown.from_text(body) or shown.from_image(body) or shown.from_study_text(body)
            if state is not None:
                break
        if state is None:
            return "I cannot see where I am."
        text = request_text(body)
        plan = (defect_plan(self.mode, maze, state, step_asked(body), self._known, bool(request_images(body)))
                if self.mode in DEFECTS else None)
        if "FINAL_OUTPUT" not in text:
            action = ACTIONS[plan[0] if plan is not None else OracleAgent.choose(maze, state)]
            return f"The shortest way on is {action}.\nACTION: {action}"
        # the study style's sentinel: one action, or the whole rest of the plan when the request
        # asks for a sub-goal or a trajectory; absolute moves when its action list has them
        cardinal = "MOVE_NORTH" in text
        tokens = (plan_tokens(state, plan, cardinal) if plan is not None
                  else study_tokens(maze, state, cardinal=cardinal))
        if "SUB_GOAL" not in text and "<action>, <action>" not in text:
            tokens = tokens[:1]
        head = "SUB_GOAL: the goal\n" if "SUB_GOAL" in text else ""
        return f"The shortest way on.\n{head}FINAL_OUTPUT: {', '.join(tokens)}"

    def _mazes_by_walls(self) -> dict[tuple[str, ...], list[Maze]]:
        """The mazes the server recognises (``mazes``), by their walls."""
        with self._lock:
            if self._by_walls is None:
                from env.sets import NAMED_SETS, resolve_mazes, set_dir

                spec = self.mazes if self.mazes is not None else [
                    n for n in NAMED_SETS if set_dir(n).is_dir() and any(set_dir(n).glob("*.json"))]
                self._by_walls = {}
                for maze in resolve_mazes(spec):
                    self._by_walls.setdefault(tuple(maze.grid), []).append(maze)
            return self._by_walls

    def _candidates(self, body: dict) -> list[Maze]:
        """Mazes whose walls match the last text map or image of the request; for a 3D frame (no
        wall grid to read), every maze whose 3D frame at resolution ``grid`` has its size."""
        by_walls = self._mazes_by_walls()
        walls = walls_from_text(body)
        if walls is not None:
            return by_walls.get(walls, [])
        pixels = last_image(body)
        if pixels is None:
            return []
        flat = [m for grid, ms in by_walls.items() for m in ms if walls_match_image(grid, pixels)]
        if flat or pixels.shape[0] != pixels.shape[1]:
            return flat
        from env.render3d.cameras import frame_side

        return [m for ms in by_walls.values() for m in ms if frame_side("grid", m.width, m.height) == pixels.shape[0]]

    def _known(self, checksum: str) -> Maze | None:
        """The maze of this checksum among those the server recognises, None when it has none."""
        return next((m for ms in self._mazes_by_walls().values() for m in ms if m.checksum == checksum), None)

    def shared_prefix_tokens(self, body: dict) -> int:
        """Tokens of the longest start this request's prompt shares with an earlier one: what an
        automatic prefix cache (Moonshot's, vLLM's) serves from cache; remembers this prompt."""
        text = request_text(body)
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

    def balance_answer(self) -> dict[str, Any]:
        """Moonshot's ``GET /v1/users/me/balance``: cash may be negative (owed), and then the
        available balance is the vouchers alone."""
        cash, voucher = float(self.balance), float(self.voucher)
        return {"code": 0, "data": {"available_balance": voucher + max(cash, 0.0), "voucher_balance": voucher,
                                    "cash_balance": cash}, "scode": "0x0", "status": True}

    def take_flex_refusal(self) -> bool:
        with self._lock:
            if self.flex_unavailable <= 0:
                return False
            self.flex_unavailable -= 1
            return True

    def answer_now(self, anthropic: bool, wire: dict) -> tuple[int, dict[str, Any]]:
        """A chat request answered without HTTP, as a batch processes it: (status, body)."""
        body = openai_shape(wire) if anthropic else wire
        persona = ANTHROPIC if anthropic else self.persona
        with self._lock:
            index = next(self._counter)
        refusal = persona.refusal(wire)
        if refusal is not None:
            return refusal
        item = self._next_item(index, body, {})
        fault = item.get("fault")
        if fault:
            status, kind, _code, message = _ERROR_BODIES.get(fault, (500, "api_error", None, f"scripted {fault}"))
            return status, {"error": {"type": kind, "message": message}}
        return 200, persona.answer(self, wire, self._completion(index, body, item))

    def answer_gemini_now(self, model: str, wire: dict) -> tuple[int, dict[str, Any]]:
        """A Gemini request answered without HTTP, as a batch processes it: (status, body), an
        error in Google's shape."""
        native = {**wire, "model": wire.get("model") or f"models/{model}"}
        body = gemini_openai_shape(native)
        with self._lock:
            index = next(self._counter)
        refusal = GEMINI.refusal(native)
        if refusal is not None:
            return refusal
        item = self._next_item(index, body, {})
        fault = item.get("fault")
        if fault:
            status, message = _GOOGLE_FAULTS.get(fault, (500, f"scripted {fault}"))
            return google_error(status, message)
        return 200, GEMINI.answer(self, native, self._completion(index, body, item))

    def gemini_models(self) -> list[dict[str, Any]]:
        """The Gemini API's model listing: its current models (``GEMINI_MODELS``), as ``Model`` resources."""
        out = []
        for m in GEMINI_MODELS:
            if not m.listed:
                continue
            name = GEMINI_LISTED_NAMES.get(m.id, m.id)
            out.append({"name": f"models/{name}", "baseModelId": m.id, "version": "001", "displayName": m.display,
                        "description": f"{m.display} (scripted)", "inputTokenLimit": 1_048_576,
                        "outputTokenLimit": m.output_limit,
                        "supportedGenerationMethods": ["generateContent", "countTokens", "createCachedContent",
                                                       "batchGenerateContent"],
                        "temperature": 1.0, "topP": 0.95, "topK": 64, "maxTemperature": 2.0, "thinking": True})
        return out

    def _completion(self, index: int, body: dict, item: dict[str, Any]) -> dict[str, Any]:
        reply = item.get("reply", "")
        reasoning = item.get("reasoning", self.reasoning)
        prompt_tokens = count_prompt_tokens(body)
        reasoning_tokens = self.reasoning_tokens
        if reasoning_tokens is None:
            reasoning_tokens = approx_tokens(reasoning or "")
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": approx_tokens(reply) + reasoning_tokens,
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


class _Handler(BaseHTTPRequestHandler):
    """One HTTP exchange with the scripted server (``self.server.scripted``)."""

    protocol_version = "HTTP/1.1"
    # headers and body go out in two writes: with Nagle on, the body waits for the
    # client's delayed ACK (40 ms on Linux), more than a fast model takes to answer
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return None  # tests and benches read stdout; keep it clean

    def _send(self, status: int, payload: Any, extra: dict[str, str] | None = None,
              content_type: str = "application/json") -> None:
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def _send_batch(self, reply: tuple[int, Any, str] | Reply) -> None:
        """A batch or file endpoint's answer, with its own headers where it has some."""
        self._send(reply[0], reply[1], reply.headers if isinstance(reply, Reply) else None, content_type=reply[2])

    def _refused_key(self, headers: dict[str, str]) -> bool:
        """Answer 401 when the server takes one key and the request does not carry it (the Gemini
        API's own answer, a 400 or 403, to a request on its routes)."""
        expected = self.server.scripted.api_key
        if expected is None:
            return False
        query = self.path.partition("?")[2]
        if self.server.scripted.google or google_route(self.path, headers):
            if "upload_id=" in query:  # a resumable upload's URL is its own credential
                return False
            params = urllib_parse.parse_qs(query)
            # Google's OpenAI-compatible paths take the key as a bearer token
            sent = (headers.get("x-goog-api-key") or next(iter(params.get("key") or []), None)
                    or headers.get("authorization", "").removeprefix("Bearer ").strip() or None)
            if sent == expected:
                return False
            self._send(*google_key_error(sent))
            return True
        # Anthropic's requests (its model listing included) carry the key in x-api-key
        anthropic = "x-api-key" in headers
        sent = headers["x-api-key"] if anthropic else headers.get("authorization", "").removeprefix("Bearer ").strip()
        if sent == expected:
            return False
        if anthropic:
            self._send(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
        else:
            self._fault("401", {}, headers, {})
        return True

    def do_GET(self) -> None:  # noqa: N802
        scripted = self.server.scripted
        headers = {k.lower(): v for k, v in self.headers.items()}
        scripted.requests.append(RecordedRequest(self.path, headers, None))
        if self._refused_key(headers):
            return
        batch = scripted.batches.handle("GET", self.path, b"", headers)
        bare = self.path.split("?", 1)[0].rstrip("/")
        if batch is not None:
            self._send_batch(batch)
        elif scripted.google or google_route(self.path, headers):
            self._google_models(bare)
        elif scripted.moonshot and bare.endswith("/v1/users/me/balance"):
            self._send(200, scripted.balance_answer())
        elif bare.endswith("/models"):
            self._send(200, {"object": "list", "data": [
                {"id": scripted.model, "object": "model", "created": 0, "owned_by": "gridbench"}]})
        else:
            self._send(404, {"error": {"message": "not found", "type": "not_found"}})

    def _google_models(self, bare: str) -> None:
        """``models.list`` (``pageSize``, ``pageToken``, ``nextPageToken``) and ``models.get``, as
        the Gemini API answers them."""
        models = self.server.scripted.gemini_models()
        m = re.search(r"/models/([^/:]+)$", bare)
        if m:
            found = next((x for x in models if x["name"] == f"models/{m.group(1)}"), None)
            if found is None:
                self._send(*google_error(404, f"models/{m.group(1)} is not found for API version v1beta."))
            else:
                self._send(200, found)
            return
        if not bare.endswith("/models"):
            self._send(*google_error(404, "Method not found."))
            return
        params = urllib_parse.parse_qs(self.path.partition("?")[2])
        try:
            size = min(int(next(iter(params.get("pageSize") or []), 0)) or GEMINI_PAGE_SIZE, 1000)
            token = (params.get("pageToken") or [""])[0]
            start = int(token.removeprefix("page-")) if token else 0
        except ValueError:
            self._send(*google_error(400, "Invalid page token or page size."))
            return
        page: dict[str, Any] = {"models": models[start:start + size]}
        if start + size < len(models):
            page["nextPageToken"] = f"page-{start + size}"
        self._send(200, page)

    def do_DELETE(self) -> None:  # noqa: N802
        scripted = self.server.scripted
        headers = {k.lower(): v for k, v in self.headers.items()}
        scripted.requests.append(RecordedRequest(self.path, headers, None))
        if self._refused_key(headers):
            return
        self._send_batch(scripted.batches.handle("DELETE", self.path, b"", headers) or (
            404, {"error": {"message": "not found", "type": "not_found"}}, "application/json"))

    def do_POST(self) -> None:  # noqa: N802
        scripted = self.server.scripted
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        batch_request = RecordedRequest(self.path, headers, None)
        if scripted.batches.handles(self.path):
            scripted.requests.append(batch_request)
            if self._refused_key(headers):
                return
            self._send_batch(scripted.batches.handle("POST", self.path, raw, headers) or (404, {}, "application/json"))
            return
        gemini_model = gemini_path(self.path)
        if gemini_model is not None:
            self._gemini(gemini_model, body, headers)
            return
        anthropic = self.path.rstrip("/").endswith("/messages")
        record = RecordedRequest(self.path, headers, openai_shape(body) if anthropic else body, wire=body)
        with scripted._lock:
            scripted.requests.append(record)
            index = next(scripted._counter)
        if self._refused_key(headers):
            return
        if not (anthropic or self.path.rstrip("/").endswith("/chat/completions")) or not isinstance(body, dict):
            self._send(404 if body is not None else 400,
                       {"error": {"message": "unsupported request", "type": "invalid_request_error"}})
            return
        if scripted.on_request is not None and scripted.on_request(record) == "drop":
            self.close_connection = True
            return
        persona = ANTHROPIC if anthropic else scripted.persona
        if body.get("service_tier") == "flex" and scripted.take_flex_refusal():
            # OpenAI's answer when flex capacity is short: a 429 that is not a rate limit, not billed
            self._send(429, {"error": {"message": "Resource Unavailable", "type": "resource_unavailable",
                                       "code": "resource_unavailable"}})
            return
        rejection = persona.refusal(body)
        if rejection is not None:
            self._send(*rejection)
            return
        record.applied = persona.applied(body)
        self._within_capacity(persona, index, record, body, headers)

    def _gemini(self, model: str, body: Any, headers: dict[str, str]) -> None:
        """``models/{model}:generateContent``, answered as the Gemini API does (``GEMINI``): the
        recorded ``body`` in the OpenAI shape, ``wire`` the request as it came."""
        scripted = self.server.scripted
        native = {**body, "model": body.get("model") or f"models/{model}"} if isinstance(body, dict) else body
        record = RecordedRequest(self.path, headers, gemini_openai_shape(native, model), wire=body)
        with scripted._lock:
            scripted.requests.append(record)
            index = next(scripted._counter)
        if self._refused_key(headers):
            return
        if not isinstance(native, dict):
            self._send(*google_error(400, "Invalid JSON payload received."))
            return
        if scripted.on_request is not None and scripted.on_request(record) == "drop":
            self.close_connection = True
            return
        rejection = GEMINI.refusal(native)
        if rejection is not None:
            self._send(*rejection)
            return
        record.applied = GEMINI.applied(native)
        self._within_capacity(GEMINI, index, record, native, headers, google=True)

    def _within_capacity(self, persona: Persona, index: int, record: RecordedRequest, body: dict,
                         headers: dict[str, str], google: bool = False) -> None:
        """Answer the request, or refuse it with the provider's 429 while ``capacity`` requests
        are already being answered."""
        scripted = self.server.scripted
        with scripted._lock:
            scripted._busy += 1
            refused = scripted.capacity is not None and scripted._busy > scripted.capacity
        try:
            if refused:
                self._fault("429", {"retry_after": scripted.retry_after}, headers, record.body if google else body,
                            google=google)
            else:
                self._answer(persona, index, record, body, google=google)
        finally:
            with scripted._lock:
                scripted._busy -= 1

    def _answer(self, persona: Persona, index: int, record: RecordedRequest, body: dict, google: bool = False) -> None:
        """The script's next item for this request: a completion as ``persona`` sends it, or a fault."""
        scripted = self.server.scripted
        try:
            item = scripted._next_item(index, record.body, record.headers)
        except Exception as err:  # a broken script answers 500 instead of dropping the line
            if google:
                self._send(*google_error(500, f"scripted server: {err!r}"))
            else:
                self._send(500, {"error": {"message": f"scripted server: {err!r}", "type": "server_error"}})
            return
        delay = item.get("latency", scripted.latency)
        if delay:
            scripted._stop.wait(delay)
        fault = item.get("fault")
        if fault:
            self._fault(fault, item, record.headers, record.body, google=google)
            return
        reply = scripted._completion(index, record.body, item)
        answer = persona.answer(scripted, body, reply)
        # marked before it goes out: a client that reads the record as soon as its answer arrives
        # must find it answered (a provider bills an answer it sent, read or not)
        record.answered = True
        self._send(200, answer)

    def _fault(self, fault: str, item: dict, headers: dict[str, str], request: dict, google: bool = False) -> None:
        scripted = self.server.scripted
        if fault == "hang":
            scripted._stop.wait(item.get("hang_s", scripted.hang_s))
            self.close_connection = True
            return
        if google:
            self._google_fault(fault, item, request)
            return
        if fault == "malformed":
            self._send(200, b'{"id": "chatcmpl-broken", "choices": [{"index": 0, "mess')
            return
        if fault == "empty_choices":
            body = scripted._completion(0, request, {"reply": ""})
            body["choices"] = []
            self._send(200, body)
            return
        if fault == "length":
            self._send(200, scripted._completion(0, request, {"reply": "", "finish_reason": "length"}))
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


    def _google_fault(self, fault: str, item: dict, request: dict) -> None:
        """A fault as the Gemini API answers it: Google's error body (a 429 with a ``RetryInfo``
        detail, no ``Retry-After`` header), a cut body, a prompt blocked with no candidate, a reply
        stopped at ``MAX_TOKENS``, an unknown key's 400."""
        scripted = self.server.scripted
        model = str(request.get("model") or scripted.model)
        if fault == "malformed":
            self._send(200, b'{"candidates": [{"content": {"parts": [{"te')
            return
        if fault == "empty_choices":
            self._send(200, {"promptFeedback": {"blockReason": "OTHER"}, "modelVersion": model,
                             "usageMetadata": {"promptTokenCount": count_prompt_tokens(request),
                                               "totalTokenCount": count_prompt_tokens(request)}})
            return
        if fault == "length":
            prompt = count_prompt_tokens(request)
            self._send(200, {"candidates": [{"content": {"parts": [{"text": ""}], "role": "model"},
                                             "finishReason": "MAX_TOKENS", "index": 0}],
                             "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": 0,
                                               "totalTokenCount": prompt},
                             "modelVersion": model, "responseId": "scripted-gemini-length"})
            return
        if fault == "401":
            self._send(*google_key_error("wrong"))
            return
        status, message = _GOOGLE_FAULTS.get(fault, (500, f"unknown scripted fault {fault!r}"))
        details: list[dict[str, Any]] | None = None
        if status == 429:
            details = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": f"{item.get('retry_after', 1):g}s"}]
            if fault == "insufficient_quota":
                details.insert(0, {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                    {"quotaMetric": "generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count",
                     "quotaId": "GenerateContentPaidTierInputTokensPerModelPerDay"}]})
        self._send(*google_error(status, message, GOOGLE_STATUS.get(status, ("UNKNOWN", 2))[0], details))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testing.scripted_server", description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--mode", choices=MODES, default=None)
    ap.add_argument("--script", help="JSON list of script items, or @file.json")
    ap.add_argument("--actions", help="comma-separated action names, sent in turn")
    ap.add_argument("--maze", help="maze for --mode oracle or a defect's mode (file, id or set/id)")
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
