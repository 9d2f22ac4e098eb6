"""The LLM agent: one chat call per turn, with gridbench's own retry policy.

- Two transports, one retry loop: ``client="litellm"`` (the default, any provider) calls
  ``litellm.acompletion``; ``client="openai"`` posts straight to an OpenAI-compatible server
  (``agents.openai_compat``) and never imports litellm on the request path.
- litellm's own retries are off (``num_retries=0``) so they never stack with ours: each
  attempt of ``RetryPolicy`` is exactly one HTTP request.
- 429 (honouring Retry-After), 5xx, malformed replies, empty ``choices``, timeouts and
  connection errors are retried with capped exponential backoff and jitter; authentication
  errors, bad requests and context-window overflows fail at once. A turn that cannot get an
  answer raises ``InfraError``: the episode records an infrastructure error, never an action.
- A reply cut off by the token limit (``finish_reason == "length"``, often with empty content)
  is the model's answer, not a failure: it is parsed like any other reply.
- API keys come only from the environment variable named by ``api_key_env``; every error text
  is scrubbed of them (and of anything shaped like a key) before it leaves this module.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agents.openai_compat import Completion, EndpointError, OpenAICompatClient, read_completion, request_body
from agents.parse import parse_action
from agents.prompt import build_messages, fingerprint, reask_messages
from agents.protocol import Protocol
from agents.types import Decision, InfraError, Turn
from env.errors import BadInput

# Must be set before litellm is first imported: otherwise it fetches its price table online.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

_litellm: Any = None

REASK_LIMIT = 2
REASK_SEPARATOR = "\n\n[re-asked]\n\n"
DEFAULT_TIMEOUT_S = 900.0  # a 64k-token thinking turn can take many minutes
# Anthropic needs max_tokens above the thinking budget; this much is left for the answer.
ANSWER_HEADROOM_TOKENS = 4096
CLIENTS = ("litellm", "openai")
_KEYLIKE = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9_\-.=]{8,}|(?:api[_-]?key|x-api-key)[\"']?\s*[:=]\s*[\"']?[^\s\"',]{6,})",
    re.IGNORECASE,
)


def litellm_module() -> Any:
    """litellm, imported once per process (its import takes seconds)."""
    global _litellm
    if _litellm is None:
        import litellm

        litellm.suppress_debug_info = True
        litellm.telemetry = False
        # estimates of reasoning tokens use litellm's bundled tokenizers: offline nodes would
        # otherwise try (and wait) to download one from the Hugging Face hub
        litellm.disable_hf_tokenizer_download = True
        # failures reach the trace through InfraError; litellm's own warnings are noise there
        logging.getLogger("LiteLLM").setLevel(logging.ERROR)
        _litellm = litellm
    return _litellm


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every known secret, and anything shaped like an API key, replaced."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return _KEYLIKE.sub("[redacted]", text)


@dataclass(frozen=True)
class RetryPolicy:
    """Capped exponential backoff with jitter; Retry-After, when a server sends one, wins."""

    max_retries: int = 8
    base_s: float = 2.0
    cap_s: float = 120.0
    max_retry_after_s: float = 600.0

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        backoff = min(self.cap_s, self.base_s * 2**retry)
        jittered = backoff * rng.uniform(0.5, 1.0)
        if retry_after is not None:
            wait = max(0.0, min(retry_after, self.max_retry_after_s))
            return wait + rng.uniform(0, 0.1 * wait)
        return jittered


_RETRIED = ("RateLimitError", "InternalServerError", "ServiceUnavailableError", "BadGatewayError",
            "Timeout", "APIConnectionError", "APIError")


@dataclass
class CallResult:
    reply: str = ""
    reasoning: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    tokens_reasoning: int = 0
    reasoning_estimated: bool = False
    cost_usd: float = 0.0
    latency_s: float = 0.0
    finish_reason: str = ""
    retries: int = 0


class _Retryable(Exception):
    def __init__(self, error_class: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.error_class = error_class
        self.retry_after = retry_after


class LLMAgent:
    """An agent backed by any litellm model string (``anthropic/...``, ``hosted_vllm/...``, ...).

    ``params`` go to ``litellm.acompletion`` (``client="litellm"``) or into the JSON body
    (``client="openai"``) as they are, except ``timeout`` (seconds per request) and ``retries``
    (the retry limit of this agent's policy), which this agent reads. ``price``: USD per token,
    ``{"input": ..., "output": ...}``; without it the litellm client looks the model up in
    litellm's bundled price table and the openai client records a cost of 0.
    """

    def __init__(
        self,
        model: str,
        protocol: Protocol,
        *,
        seed: int = 0,
        name: str | None = None,
        api_base: str | None = None,
        api_key_env: str | None = None,
        params: dict | None = None,
        price: dict | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        client: str = "litellm",
    ):
        self.model = model
        self.protocol = protocol
        self.seed = seed
        self.name = name or model
        self.api_base = api_base
        if client not in CLIENTS:
            raise BadInput(self.name, "client", f"must be one of {', '.join(CLIENTS)}, got {client!r}")
        if client == "openai" and not (isinstance(api_base, str) and api_base.startswith(("http://", "https://"))):
            raise BadInput(self.name, "api_base", "an http(s) URL is required: the openai client needs an "
                                                  "OpenAI-compatible endpoint")
        self.client = client
        self.params = dict(params or {})
        self.timeout_s = self.params.pop("timeout", DEFAULT_TIMEOUT_S)
        if not isinstance(self.timeout_s, int | float) or isinstance(self.timeout_s, bool) or self.timeout_s <= 0:
            raise BadInput(self.name, "params.timeout", "must be a positive number of seconds")
        retries = self.params.pop("retries", None)
        self.retry = retry or RetryPolicy()
        if retries is not None:
            if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
                raise BadInput(self.name, "params.retries", "must be a whole number, 0 or more")
            self.retry = RetryPolicy(max_retries=retries, base_s=self.retry.base_s, cap_s=self.retry.cap_s,
                                     max_retry_after_s=self.retry.max_retry_after_s)
        for forbidden in ("api_key", "num_retries", "max_retries"):
            if forbidden in self.params:
                raise BadInput(self.name, f"params.{forbidden}",
                               "not allowed: keys come from api_key_env, retries from the agent's policy")
        self.price = _parse_price(price, self.name)
        self._api_key: str | None = None
        if api_key_env:
            self._api_key = os.environ.get(api_key_env)
            if not self._api_key:
                raise BadInput(self.name, "api_key_env", f"environment variable {api_key_env} is not set")
        elif api_base:
            # a custom endpoint never gets a provider key from the environment by accident
            self._api_key = "EMPTY"
        self._secrets = tuple(s for s in (self._api_key,) if s and s != "EMPTY")
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._replies: list[str] = []
        self._provider: str | None = None
        self._supported: list[str] = []
        self._http = OpenAICompatClient(api_base, self._api_key, self.timeout_s) if client == "openai" else None

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()

    # ---- request -----------------------------------------------------------------------------
    def _resolve_provider(self) -> None:
        if self._provider is not None:
            return
        lib = litellm_module()
        try:
            _, self._provider, _, _ = lib.get_llm_provider(self.model, api_base=self.api_base)
        except Exception as err:  # litellm raises BadRequestError for an unknown provider
            raise InfraError("BadRequestError", scrub(f"{self.model}: {err}", self._secrets)) from None
        try:
            self._supported = list(lib.get_supported_openai_params(
                model=self.model.split("/", 1)[-1], custom_llm_provider=self._provider) or [])
        except Exception:
            self._supported = []

    def request_kwargs(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """Everything passed to ``litellm.acompletion`` for these messages (the key excepted)."""
        self._resolve_provider()
        p = self.protocol
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": p.temperature,
            "max_tokens": p.max_output_tokens,
            "num_retries": 0,
            "timeout": self.timeout_s,
        }
        if "seed" in self._supported:
            kwargs["seed"] = self.seed
        if self.api_base:
            kwargs["api_base"] = self.api_base
        kwargs.update(self._thinking_kwargs())
        for k, v in self.params.items():
            if k == "extra_body" and isinstance(v, dict) and "extra_body" in kwargs:
                kwargs["extra_body"] = {**kwargs["extra_body"], **v}
            else:
                kwargs[k] = v
        return kwargs

    def request_body(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The JSON body the openai client posts for these messages."""
        p = self.protocol
        return request_body(self.model, messages, temperature=p.temperature, max_tokens=p.max_output_tokens,
                            seed=self.seed, thinking=p.thinking, params=self.params)

    def _thinking_kwargs(self) -> dict[str, Any]:
        p = self.protocol
        provider = self._provider
        if provider == "hosted_vllm":
            # the server's chat template switches thinking; its reasoning parser splits it out
            return {"extra_body": {"chat_template_kwargs": {"enable_thinking": p.thinking}}}
        if not p.thinking:
            return {}
        if provider == "anthropic" or (provider in ("bedrock", "vertex_ai") and "claude" in self.model):
            out: dict[str, Any] = {"thinking": {"type": "enabled", "budget_tokens": p.thinking_budget}}
            if p.max_output_tokens <= p.thinking_budget:
                out["max_tokens"] = p.thinking_budget + ANSWER_HEADROOM_TOKENS
            return out
        if "reasoning_effort" in self._supported:
            return {"reasoning_effort": effort_for_budget(p.thinking_budget)}
        return {}

    # ---- one turn ----------------------------------------------------------------------------
    async def act(self, turn: Turn) -> Decision:
        messages = build_messages(turn, self._replies)
        prompt_hash, image_hashes = fingerprint(messages)
        replies: list[str] = []
        reasonings: list[str] = []
        total = CallResult()
        reasks = 0
        action: int | None = None
        status = "invalid"
        while True:
            result = await self.call(messages)
            for name in ("tokens_in", "tokens_out", "tokens_reasoning", "cost_usd", "latency_s", "retries"):
                setattr(total, name, getattr(total, name) + getattr(result, name))
            total.reasoning_estimated |= result.reasoning_estimated
            total.finish_reason = result.finish_reason
            replies.append(result.reply)
            reasonings.append(result.reasoning)
            action, status = parse_action(result.reply)
            if action is not None or self.protocol.invalid_output == "noop" or reasks >= REASK_LIMIT:
                break
            reasks += 1
            messages = reask_messages(messages, result.reply)
        self._replies.append(replies[-1])
        return Decision(
            action=action,
            parse=status,  # type: ignore[arg-type]
            reply=REASK_SEPARATOR.join(replies),
            reasoning=REASK_SEPARATOR.join(r for r in reasonings) if any(reasonings) else "",
            tokens_in=total.tokens_in,
            tokens_out=total.tokens_out,
            tokens_reasoning=total.tokens_reasoning,
            reasoning_estimated=total.reasoning_estimated,
            cost_usd=total.cost_usd,
            latency_s=total.latency_s,
            finish_reason=total.finish_reason,
            retries=total.retries,
            reasks=reasks,
            prompt_hash=prompt_hash,
            image_hashes=image_hashes,
        )

    async def call(self, messages: list[dict[str, Any]]) -> CallResult:
        """One model answer, retried by the policy; raises ``InfraError`` when none comes."""
        attempt: Callable[[dict[str, Any]], Awaitable[CallResult]]
        if self._http is not None:
            request, attempt = self.request_body(messages), self._attempt_openai
        else:
            request, attempt = self.request_kwargs(messages), self._attempt_litellm
            if self._api_key:
                request["api_key"] = self._api_key
        retries = 0
        while True:
            try:
                result = await attempt(request)
                result.retries = retries
                return result
            except _Retryable as err:
                if retries >= self.retry.max_retries:
                    raise InfraError(err.error_class, scrub(
                        f"{self.name}: gave up after {retries + 1} attempts: {err}", self._secrets)) from None
                retries += 1
                await self._sleep(self.retry.delay(retries - 1, err.retry_after, self._rng))

    async def _attempt_litellm(self, kwargs: dict[str, Any]) -> CallResult:
        started = time.perf_counter()
        try:
            response = await litellm_module().acompletion(**kwargs)
        except Exception as err:
            raise self._classify(err) from None
        latency = time.perf_counter() - started
        if not getattr(response, "choices", None):
            raise _Retryable("EmptyChoices", "the server answered with an empty choices list")
        return self._read(response, latency)

    async def _attempt_openai(self, body: dict[str, Any]) -> CallResult:
        assert self._http is not None
        started = time.perf_counter()
        try:
            completion = read_completion(await self._http.complete(body))
        except EndpointError as err:
            message = scrub(f"{self.name}: {err.error_class}: {err}", self._secrets)
            if err.retryable:
                raise _Retryable(err.error_class, message, err.retry_after) from None
            raise InfraError(err.error_class, message) from None
        latency = time.perf_counter() - started
        return self._result(completion, latency, self._cost(None, completion.tokens_in, completion.tokens_out))

    def _classify(self, err: Exception) -> Exception:
        """A retryable error, or the ``InfraError`` to raise at once."""
        cls = type(err).__name__
        message = scrub(f"{self.name}: {cls}: {err}", self._secrets)
        lib = litellm_module()
        if isinstance(err, lib.ContextWindowExceededError):
            return InfraError("ContextWindowExceededError", message)
        if isinstance(err, lib.AuthenticationError | lib.PermissionDeniedError | lib.BadRequestError
                      | lib.NotFoundError):
            return InfraError(cls, message)
        if isinstance(err, lib.Timeout | lib.APIConnectionError | lib.RateLimitError
                      | lib.InternalServerError | lib.ServiceUnavailableError | lib.BadGatewayError):
            return _Retryable(cls, message, _retry_after(err))
        if isinstance(err, lib.APIError):
            status = getattr(err, "status_code", None)
            # 200: the server answered but litellm could not read the body (hosted_vllm's
            # "Unable to get json response"): a malformed reply, retried like any other
            if isinstance(status, int) and (status >= 500 or status in (200, 429)):
                return _Retryable(cls, message, _retry_after(err))
            return InfraError(cls, message)
        if isinstance(err, asyncio.TimeoutError | ConnectionError | OSError):
            return _Retryable(cls, message)
        return InfraError(cls, message)

    def _read(self, response: Any, latency: float) -> CallResult:
        choice = response.choices[0]
        msg = choice.message
        reply = msg.content if isinstance(getattr(msg, "content", None), str) else ""
        reasoning = getattr(msg, "reasoning_content", None) or ""
        blocks = getattr(msg, "thinking_blocks", None) or []
        if not reasoning and blocks:
            reasoning = "\n\n".join(b.get("thinking", "") for b in blocks if isinstance(b, dict))
        usage = getattr(response, "usage", None)
        details = getattr(usage, "completion_tokens_details", None)
        completion = Completion(
            reply=reply,
            reasoning=reasoning,
            tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
            tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
            tokens_reasoning=int(getattr(details, "reasoning_tokens", 0) or 0),
            finish_reason=str(getattr(choice, "finish_reason", "") or ""),
        )
        return self._result(completion, latency, self._cost(response, completion.tokens_in, completion.tokens_out))

    def _result(self, completion: Completion, latency: float, cost: float) -> CallResult:
        tokens_reasoning = completion.tokens_reasoning
        estimated = False
        if completion.reasoning and not tokens_reasoning:
            tokens_reasoning = count_tokens(self.model, completion.reasoning)
            estimated = True
        return CallResult(
            reply=completion.reply,
            reasoning=completion.reasoning,
            tokens_in=completion.tokens_in,
            tokens_out=completion.tokens_out,
            tokens_reasoning=tokens_reasoning,
            reasoning_estimated=estimated,
            cost_usd=cost,
            latency_s=latency,
            finish_reason=completion.finish_reason,
        )

    def _cost(self, response: Any, tokens_in: int, tokens_out: int) -> float:
        if self.price is not None:
            return tokens_in * self.price[0] + tokens_out * self.price[1]
        if response is None:
            return 0.0  # the openai client has no price table
        try:
            return float(litellm_module().completion_cost(completion_response=response) or 0.0)
        except Exception:
            return 0.0  # not in litellm's table: give the model a `price` in the sweep


def effort_for_budget(budget: int) -> str:
    """The OpenAI-style reasoning effort closest to a thinking-token budget."""
    if budget <= 4096:
        return "low"
    if budget <= 24576:
        return "medium"
    return "high"


def count_tokens(model: str, text: str) -> int:
    """Tokens in ``text`` by litellm's counter for ``model``; 4 characters a token if it has none."""
    try:
        return int(litellm_module().token_counter(model=model, text=text))
    except Exception:
        return (len(text) + 3) // 4


def _retry_after(err: Exception) -> float | None:
    headers = None
    response = getattr(err, "response", None)
    if response is not None:
        headers = getattr(response, "headers", None)
    headers = headers or getattr(err, "litellm_response_headers", None)
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _parse_price(price: dict | None, source: str) -> tuple[float, float] | None:
    if price is None:
        return None
    aliases = {"input": ("input", "input_cost_per_token"), "output": ("output", "output_cost_per_token")}
    out = []
    for key, names in aliases.items():
        value = next((price[n] for n in names if n in price), None)
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise BadInput(source, f"price.{key}", "must be a non-negative number of USD per token")
        out.append(float(value))
    return out[0], out[1]
