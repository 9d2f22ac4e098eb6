"""The LLM agent: one chat call per turn, with gridbench's own retry policy.

- Two transports, one retry loop: ``client="litellm"`` (any provider) calls
  ``litellm.acompletion``; ``client="openai"`` posts straight to an OpenAI-compatible server
  (``agents.openai_compat``) and never imports litellm on the request path. Both read the answer
  into the same ``Completion`` with one ``Usage``.
- litellm's own retries are off (``num_retries=0``) so they never stack with ours: each
  attempt of ``RetryPolicy`` is exactly one HTTP request.
- 429 (honouring Retry-After), 5xx, malformed replies, empty ``choices``, timeouts and
  connection errors are retried with capped exponential backoff and jitter; authentication
  errors, bad requests, context-window overflows and a 429 for a spent quota fail at once. A turn that cannot get an
  answer raises ``InfraError``: the episode records an infrastructure error, never an action.
- A reply cut off by the token limit (``finish_reason == "length"``, often with empty content)
  is the model's answer, not a failure: it is parsed like any other reply.
- The agent trusts its ``ModelConfig`` (validated when the sweep was loaded). Its API key comes
  only from the environment variable ``api_key_env`` names; every error text is scrubbed
  (``agents.secrets.scrub``) before it leaves this module.
- What a request carries for the protocol's thinking, effort, budget, output cap and sampling
  comes from the model's provider family (``agents.providers``), and so does the ``Budget`` each
  turn records: the same translation, so the record is what was sent.
- The model entry's ``tier`` (docs/providers.md): ``flex`` sends ``service_tier: "flex"``, whose
  429 "Resource Unavailable" is waited out like any rate limit (nothing answered: nothing
  spent); ``batch`` hands each request to a ``BatchGateway`` (the driver's lockstep rounds,
  ``orchestrator.batching``) instead of sending it. Every cost is at the tier's price.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agents.model import ModelConfig, Price
from agents.openai_compat import (
    OUT_OF_QUOTA,
    Completion,
    EndpointError,
    OpenAICompatClient,
    read_completion,
    usage_of,
)
from agents.parse import parse_action
from agents.prompt import build_messages, fingerprint, reask_messages, with_cache_markers, with_image_detail
from agents.protocol import Protocol
from agents.providers import merge_fields
from agents.secrets import scrub
from agents.study_agent import StudyQuerying
from agents.study_prompt import study_cache_markers
from agents.types import REASK_SEPARATOR, Decision, InfraError, ParseStatus, Turn
from agents.usage import Budget, Usage
from env.errors import BadInput

if TYPE_CHECKING:
    from agents.batch_requests import BatchGateway

# Must be set before litellm is first imported: otherwise it fetches its price table online.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

_litellm: Any = None

REASK_LIMIT = 2


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


@dataclass(frozen=True)
class RetryPolicy:
    """Capped exponential backoff with jitter; Retry-After, when a server sends one, wins.

    Rate limits (429) are waited out rather than counted as failures, apart from the
    ``max_retries`` other transient failures, for up to ``rate_limited_s`` seconds of waiting a
    turn (the model's request timeout, by default 900 s), so a provider's 429 storm slows a sweep
    down (the driver lowers its concurrency meanwhile) instead of failing episodes; an endpoint that
    does nothing but refuse still ends the turn in the end.
    """

    max_retries: int = 8
    base_s: float = 2.0
    cap_s: float = 120.0
    max_retry_after_s: float = 600.0
    rate_limited_s: float = 900.0

    def delay(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        backoff = min(self.cap_s, self.base_s * 2**retry)
        jittered = backoff * rng.uniform(0.5, 1.0)
        if retry_after is not None:
            wait = max(0.0, min(retry_after, self.max_retry_after_s))
            return wait + rng.uniform(0, 0.1 * wait)
        return jittered


class _Retryable(Exception):
    def __init__(self, error_class: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.error_class = error_class
        self.retry_after = retry_after


class LLMAgent:
    """An agent backed by one ``ModelConfig`` (``anthropic/...``, ``hosted_vllm/...``, ...).

    ``config.params`` go to ``litellm.acompletion`` (``client="litellm"``) or into the JSON body
    (``client="openai"``) as they are; ``timeout`` and ``retries`` there are the agent's own. A
    protocol the model's provider family cannot honour is ``BadInput`` (a sweep refuses it when
    it loads).
    ``endpoint``: the URL of a server the sweep started for this model (it wins over
    ``config.api_base``). Cost comes from ``config.price``, else (litellm client) litellm's price
    table; the openai client without a price records 0.
    """

    def __init__(
        self,
        config: ModelConfig,
        protocol: Protocol,
        *,
        seed: int = 0,
        endpoint: str | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        on_rate_limit: Callable[[float | None], Any] | None = None,
        offline: bool = False,
        batch: BatchGateway | None = None,
    ):
        """``offline``: only to build requests (a cost estimate); no key is read, nothing is sent.
        ``batch``: where a ``tier: batch`` model's requests go (the driver's lockstep rounds)."""
        self.config = config
        self._on_rate_limit = on_rate_limit
        refused = config.family.refusal(protocol, config.request_params)
        if refused is not None:
            where, why = refused
            raise BadInput(config.name, where if where.startswith("params.") else f"protocol.{where}", why)
        self._fields, self.budget = config.family.request_fields(protocol, seed)
        self._fields.update(config.tier_facts.request_fields)
        if config.tier == "batch" and batch is None and not offline:
            raise BadInput(config.name, "tier", "a batch model's requests go through the sweep driver's batches: "
                                              "run it with `gridbench run`")
        self._batch = batch
        self._batch_ids: list[str] = []  # provider batches this turn's calls went through
        self._call_key = (0, 0)  # (step, call within the step): a batch request's place in its episode
        self.protocol = protocol
        self.seed = seed
        self.name = config.name
        self.model = config.model
        self.api_base = endpoint or config.api_base
        if config.client == "openai" and not self.api_base and not offline:
            raise BadInput(self.name, "api_base", "the openai client needs an OpenAI-compatible endpoint")
        self.retry = retry or RetryPolicy(max_retries=config.retries, rate_limited_s=config.timeout_s)
        # a custom endpoint never gets a provider key from the environment by accident
        self._api_key = None if offline else config.api_key() or ("EMPTY" if self.api_base else None)
        self._secrets = (self._api_key,)
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._replies: list[str] = []
        self._provider: str | None = None
        self._supported: list[str] = []
        self._http = (OpenAICompatClient(self.api_base, self._api_key, config.timeout_s)
                      if config.client == "openai" and self.api_base and not offline and batch is None else None)
        self._study = (StudyQuerying(self._study_call, lambda text: count_tokens(self.model, text))
                       if protocol.style == "study" else None)

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
        """Everything passed to ``litellm.acompletion`` for these messages (the key excepted): the
        family's fields, those litellm refuses at the top level inside ``extra_body``."""
        self._resolve_provider()
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "num_retries": 0,
                                  "timeout": self.config.timeout_s}
        extra: dict[str, Any] = {}
        for key, value in self._fields.items():
            if key in self.config.family.litellm_extra_body or (key == "service_tier"
                                                                 and key not in self._supported):
                extra[key] = value
            elif key != "seed" or "seed" in self._supported:
                kwargs[key] = value
        if extra:
            kwargs["extra_body"] = extra
        if self.api_base:
            kwargs["api_base"] = self.api_base
        return merge_fields(kwargs, self.config.request_params)

    def request_body(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The JSON body the openai client posts for these messages; ``params`` and then
        ``params["extra_body"]`` (flattened, as the OpenAI SDK sends it) laid over the family's fields."""
        body: dict[str, Any] = {"model": self.config.request_name, "messages": messages,
                                **copy.deepcopy(self._fields)}
        params = dict(self.config.request_params)
        extra = params.pop("extra_body", None)
        merge_fields(body, params)
        if isinstance(extra, dict):
            merge_fields(body, extra)
        elif extra is not None:
            body["extra_body"] = extra
        return body

    def batch_body(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """The body one line of a provider batch carries for these messages (``tier: batch``)."""
        from agents.batch_requests import batch_body

        return batch_body(self.request_body(messages), self.config.family.batch_api, self.model)

    # ---- one turn ----------------------------------------------------------------------------
    @property
    def marks_cache(self) -> bool:
        """Anthropic caches a prompt prefix only where the request marks it; OpenAI and vLLM
        cache identical prefixes by themselves (the protocol puts the fixed part first)."""
        return self._http is None and self.config.family.marks_cache

    async def act(self, turn: Turn) -> Decision:
        self._batch_ids = []
        self._call_key = (turn.step, 0)
        decision = await (self._study.act(turn) if self._study is not None else self._act(turn))
        return replace(decision, tier=self.config.tier,
                       batch_id=",".join(dict.fromkeys(self._batch_ids)) or None)

    async def _act(self, turn: Turn) -> Decision:
        p = self.protocol
        messages = build_messages(turn, self._replies)
        prompt_hash, image_hashes = fingerprint(messages)
        if self.marks_cache:
            messages = with_cache_markers(messages, turn)
        completions: list[Completion] = []
        budget = Budget()
        action: int | None = None
        status: ParseStatus = "invalid"
        # calls after the first one that gave no action: a re-ask shows the reply and a reminder
        # of the format, a re-query sends the same request again
        more = {"noop": 0, "reask": REASK_LIMIT, "requery": p.requery_limit - 1}[p.invalid_output]
        while True:
            completion, budget = await self.call(messages)
            completions.append(completion)
            action, status = parse_action(completion.reply)
            if action is not None or len(completions) > more:
                break
            if p.invalid_output == "reask":
                messages = reask_messages(messages, completion.reply)
        self._replies.append(completions[-1].reply)
        reasonings = [c.reasoning for c in completions]
        return Decision(
            action=action,
            parse=status,
            reply=REASK_SEPARATOR.join(c.reply for c in completions),
            reasoning=REASK_SEPARATOR.join(reasonings) if any(reasonings) else "",
            finish_reason=completions[-1].finish_reason,
            usage=Usage.total(c.usage for c in completions) + Usage(calls=len(completions),
                                                                    reasks=len(completions) - 1),
            budget=budget,
            prompt_hash=prompt_hash,
            image_hashes=tuple(image_hashes),
            ending="parse_failed" if action is None and p.invalid_output == "requery" else None,
        )

    async def resume(self, turn: Turn, decision: Decision) -> None:
        """A multi-turn conversation shows the model its own past replies: the last of each turn's."""
        if self._study is not None:
            await self._study.resume(turn, decision)
            return
        self._replies.append(decision.reply.split(REASK_SEPARATOR)[-1])

    async def _study_call(self, messages: list[dict[str, Any]]) -> tuple[Completion, Budget]:
        return await self.call(study_cache_markers(messages) if self.marks_cache else messages)

    async def call(self, messages: list[dict[str, Any]]) -> tuple[Completion, Budget]:
        """One model answer, retried by the policy, and the budget its request carried; raises
        ``InfraError`` when no answer comes."""
        attempt: Callable[[dict[str, Any]], Awaitable[Completion]]
        step, call = self._call_key
        self._call_key = (step, call + 1)
        if self.config.image_detail is not None:
            messages = with_image_detail(messages, self.config.image_detail)
        request: dict[str, Any]
        if self._batch is not None:
            request, attempt = {"body": self.batch_body(messages)}, self._attempt_batch
        elif self._http is not None:
            request, attempt = self.request_body(messages), self._attempt_openai
        else:
            request, attempt = self.request_kwargs(messages), self._attempt_litellm
            if self._api_key:
                request["api_key"] = self._api_key
        budget = self.budget
        failures = rate_limited = 0
        waited = 0.0  # on rate limits, this turn
        while True:
            try:
                if self._batch is not None:  # each attempt its own custom id: a retry is a new request
                    request = {**request, "key": (step, call, failures + rate_limited)}
                completion = await attempt(request)
                return replace(completion, usage=replace(completion.usage, retries=failures + rate_limited)), budget
            except _Retryable as err:
                limited = err.error_class == "RateLimitError"
                delay = self.retry.delay(rate_limited if limited else failures, err.retry_after, self._rng)
                if (waited + delay > self.retry.rate_limited_s) if limited else (failures >= self.retry.max_retries):
                    raise InfraError(err.error_class, scrub(
                        f"{self.name}: gave up after {failures + rate_limited + 1} attempts: {err}",
                        self._secrets)) from None
                if limited:
                    rate_limited += 1
                    waited += delay
                    if self._on_rate_limit is not None:
                        self._on_rate_limit(err.retry_after)
                else:
                    failures += 1
                await self._sleep(delay)

    async def _attempt_litellm(self, kwargs: dict[str, Any]) -> Completion:
        started = time.perf_counter()
        try:
            response = await litellm_module().acompletion(**kwargs)
        except Exception as err:
            raise self._classify(err) from None
        latency = time.perf_counter() - started
        if not getattr(response, "choices", None):
            raise _Retryable("EmptyChoices", "the server answered with an empty choices list")
        return self._read(response, latency)

    async def _attempt_openai(self, body: dict[str, Any]) -> Completion:
        assert self._http is not None
        started = time.perf_counter()
        try:
            completion = read_completion(await self._http.complete(body))
        except EndpointError as err:
            message = scrub(f"{self.name}: {err.error_class}: {err}", self._secrets)
            if err.retryable:
                raise _Retryable(err.error_class, message, err.retry_after) from None
            raise InfraError(err.error_class, message) from None
        return self._accounted(completion, time.perf_counter() - started, None)

    async def _attempt_batch(self, request: dict[str, Any]) -> Completion:
        """One request answered through a provider batch, as if it had come synchronously."""
        assert self._batch is not None
        started = time.perf_counter()
        try:
            completion, batch_id = await self._batch.complete(request)
        except EndpointError as err:
            message = scrub(f"{self.name}: {err.error_class}: {err}", self._secrets)
            if err.retryable:
                raise _Retryable(err.error_class, message, err.retry_after) from None
            raise InfraError(err.error_class, message) from None
        self._batch_ids.append(batch_id)
        # the batch's latency is the round's, shared by every request in it
        return self._accounted(completion, time.perf_counter() - started, None)

    def _classify(self, err: Exception) -> Exception:
        """A retryable error, or the ``InfraError`` to raise at once."""
        cls = type(err).__name__
        message = scrub(f"{self.name}: {cls}: {err}", self._secrets)
        lib = litellm_module()
        if isinstance(err, lib.ContextWindowExceededError):
            return InfraError("ContextWindowExceededError", message)
        if isinstance(err, lib.RateLimitError) and OUT_OF_QUOTA.search(str(err)):
            return InfraError(cls, message)  # no wait refills a spent quota
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

    def _read(self, response: Any, latency: float) -> Completion:
        choice = response.choices[0]
        msg = choice.message
        reply = msg.content if isinstance(getattr(msg, "content", None), str) else ""
        reasoning = getattr(msg, "reasoning_content", None) or ""
        blocks = getattr(msg, "thinking_blocks", None) or []
        if not reasoning and blocks:
            reasoning = "\n\n".join(b.get("thinking", "") for b in blocks if isinstance(b, dict))
        completion = Completion(reply=reply, reasoning=reasoning,
                                finish_reason=str(getattr(choice, "finish_reason", "") or ""),
                                usage=usage_of(getattr(response, "usage", None)))
        return self._accounted(completion, latency, response)

    def _accounted(self, completion: Completion, latency: float, response: Any) -> Completion:
        """The completion with its latency, its cost, and reasoning tokens estimated when the
        provider reported reasoning text but no count."""
        usage = completion.usage
        if completion.reasoning and not usage.tokens_reasoning:
            usage = replace(usage, tokens_reasoning=count_tokens(self.model, completion.reasoning),
                            reasoning_estimated=True)
        return replace(completion, usage=replace(usage, latency_s=latency, cost_usd=self._cost(response, usage)))

    def _cost(self, response: Any, usage: Usage) -> float:
        """USD at the entry's tier: the standard price (the entry's ``price``, else litellm's
        table) times the tier's factor. Cache reads are priced from the usage gridbench read,
        not litellm's: litellm misses Moonshot's top-level ``cached_tokens``."""
        factor = self.config.tier_facts.price_factor
        if self.config.price is not None:
            return factor * self.config.price.cost(usage.tokens_in, usage.tokens_out, usage.tokens_cached)
        if response is None and self._batch is None:
            return 0.0  # the openai client has no price table
        if response is None or (usage.tokens_cached and self.config.family.name == "moonshot-kimi-k2"):
            price = table_price(self.config.model)
            return factor * price.cost(usage.tokens_in, usage.tokens_out, usage.tokens_cached) if price else 0.0
        try:
            # litellm prices flex itself when the answer says so: the standard figure is asked for
            return factor * float(litellm_module().completion_cost(completion_response=response,
                                                                   service_tier=None) or 0.0)
        except Exception:
            return 0.0  # not in litellm's table: give the model a `price` in the sweep


def table_price(model: str) -> Price | None:
    """The standard price of ``model`` in litellm's price table; None when it has none."""
    try:
        info = litellm_module().get_model_info(model)
        return Price(float(info["input_cost_per_token"]), float(info["output_cost_per_token"]),
                     info.get("cache_read_input_token_cost"))
    except Exception:
        return None


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
