"""The litellm transport: one ``litellm.acompletion`` call per attempt, for any provider litellm knows.

- litellm's own retries are off (``num_retries=0``) so they never stack with the caller's
  (``agents.caller``): each attempt is exactly one HTTP request.
- ``classify`` reads litellm's exceptions: 429 (a spent quota excepted), 5xx, malformed replies
  (litellm's 422 for a provider's answer it cannot read among them), timeouts and connection errors
  are transient; authentication errors, bad requests and context-window overflows fail at once.
- The family's fields go at the top level of the call, or inside ``extra_body`` where litellm
  refuses them at the top level; a family that caches only marked prefixes
  (``ProviderFamily.marks_cache``) gets its requests marked.
- litellm is the one translation between gridbench's request and a provider's own: ``wire``
  gives the provider's request that ``send`` would post (litellm's raw request, captured before
  anything is sent) and ``read`` reads a provider's own answer as litellm reads a synchronous
  one, so a provider batch carries, and is read as, the same request and answer.
- Also here: litellm itself, imported once per process (its import takes seconds), and its token
  counter.
"""

from __future__ import annotations

import asyncio
import logging
import os
from typing import TYPE_CHECKING, Any

from agents.openai_compat import usage_of
from agents.providers import merge_fields
from agents.secrets import scrub
from agents.transport import (
    OUT_OF_QUOTA,
    Answer,
    Completion,
    EndpointError,
    Failure,
    PricedBy,
    Request,
    Transport,
    retry_after_seconds,
    seeded,
)
from agents.types import InfraError

if TYPE_CHECKING:
    from agents.model import ModelConfig

# Must be set before litellm is first imported: otherwise it fetches its price table online.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

_litellm: Any = None
# litellm's 422 when its translation of a provider's answer fails: a body cut short or garbled
# on the way, a malformed reply like any other, not a bad request
UNREADABLE_ANSWER = "Error converting to valid response block"


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


def count_tokens(model: str, text: str) -> int:
    """Tokens in ``text`` by litellm's counter for ``model``; 4 characters a token if it has none."""
    try:
        return int(litellm_module().token_counter(model=model, text=text))
    except Exception:
        return (len(text) + 3) // 4


class LiteLLMTransport(Transport):
    """``client: litellm``: ``litellm.acompletion`` with the model's fields, ``params`` laid over
    them; its answers are priced from litellm's reading of the response."""

    priced_by: PricedBy = "litellm"

    def __init__(self, config: ModelConfig, fields: dict[str, Any], api_base: str | None, api_key: str | None):
        self.config = config
        self.fields = fields
        self.api_base = api_base
        self._api_key = api_key
        self.marks_cache = config.family.marks_cache
        self._provider: str | None = None
        self._name = ""  # the model's name at its provider
        self._supported: list[str] = []

    def _resolve_provider(self) -> str:
        if self._provider is not None:
            return self._provider
        lib = litellm_module()
        model = self.config.model
        try:
            self._name, self._provider, _, _ = lib.get_llm_provider(model, api_base=self.api_base)
        except Exception as err:  # litellm raises BadRequestError for an unknown provider
            raise InfraError("BadRequestError", scrub(f"{model}: {err}", (self._api_key,))) from None
        try:
            self._supported = list(lib.get_supported_openai_params(
                model=model.split("/", 1)[-1], custom_llm_provider=self._provider) or [])
        except Exception:
            self._supported = []
        return str(self._provider)

    def body(self, messages: list[dict[str, Any]], seed: int | None = None) -> dict[str, Any]:
        """Everything passed to ``litellm.acompletion`` for these messages (the key excepted): the
        family's fields, those litellm refuses at the top level inside ``extra_body``."""
        self._resolve_provider()
        kwargs: dict[str, Any] = {"model": self.config.model, "messages": messages, "num_retries": 0,
                                  "timeout": self.config.timeout_s}
        extra: dict[str, Any] = {}
        for key, value in seeded(self.fields, seed).items():
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

    async def send(self, request: Request) -> Answer:
        kwargs = {**request.body, "api_key": self._api_key} if self._api_key else request.body
        response = await litellm_module().acompletion(**kwargs)
        if not getattr(response, "choices", None):
            raise EndpointError("EmptyChoices", "the server answered with an empty choices list", retryable=True)
        return Answer(read_response(response), response=response)

    def wire(self, body: dict[str, Any]) -> dict[str, Any]:
        """The provider's own request litellm posts for ``body``: its raw request, captured before
        anything is sent (``litellm.utils.return_raw_request``), with ``extra_body`` laid into it
        as the OpenAI SDK lays it into what it posts."""
        from litellm.types.utils import CallTypes
        from litellm.utils import return_raw_request

        litellm_module()
        raw = return_raw_request(CallTypes.completion, {k: v for k, v in body.items() if k != "num_retries"})
        wire = raw.get("raw_request_body")
        if not isinstance(wire, dict):
            raise EndpointError("BadRequestError", f"litellm built no request: {raw.get('error', '')}",
                                retryable=False)
        extra = wire.pop("extra_body", None)
        return merge_fields(wire, extra) if isinstance(extra, dict) else wire

    def read(self, payload: dict[str, Any]) -> Completion:
        """A provider's own answer read by litellm's transformation of that provider's replies,
        the one a synchronous call's answer goes through."""
        import httpx
        from litellm.types.utils import LlmProviders
        from litellm.utils import ProviderConfigManager

        lib = litellm_module()
        provider = self._resolve_provider()
        config = ProviderConfigManager.get_provider_chat_config(model=self._name, provider=LlmProviders(provider))
        if config is None:
            raise EndpointError("BadRequestError", f"litellm cannot read a {provider} answer", retryable=False)
        try:
            response = config.transform_response(
                model=self._name, raw_response=httpx.Response(200, json=payload, request=httpx.Request("POST", "http://batch")),
                model_response=lib.ModelResponse(), logging_obj=_reading_log(self._name), request_data={},
                messages=[], optional_params={}, litellm_params={}, encoding=None, api_key=None, json_mode=None)
        except Exception as err:  # noqa: BLE001 - litellm reports a reply it cannot read in its own classes
            raise EndpointError("InternalServerError", f"an answer of an unexpected shape: {type(err).__name__}: {err}",
                                retryable=True) from None
        if not response.choices:
            raise EndpointError("EmptyChoices", "the answer has no choices", retryable=True)
        return read_response(response)

    def classify(self, err: Exception) -> Failure:
        if isinstance(err, EndpointError):
            return err.failure()
        cls = type(err).__name__
        message = f"{cls}: {err}"
        lib = litellm_module()
        if isinstance(err, lib.ContextWindowExceededError):
            return Failure("ContextWindowExceededError", message, "fail")
        if isinstance(err, lib.RateLimitError) and OUT_OF_QUOTA.search(str(err)):
            return Failure(cls, message, "fail")  # no wait refills a spent quota
        if isinstance(err, lib.BadRequestError) and UNREADABLE_ANSWER in str(err):
            return Failure.transient("InternalServerError", message)
        if isinstance(err, lib.AuthenticationError | lib.PermissionDeniedError | lib.BadRequestError
                      | lib.NotFoundError):
            return Failure(cls, message, "fail")
        if isinstance(err, lib.Timeout | lib.APIConnectionError | lib.RateLimitError
                      | lib.InternalServerError | lib.ServiceUnavailableError | lib.BadGatewayError):
            return Failure.transient(cls, message, _retry_after(err))
        if isinstance(err, lib.APIError):
            status = getattr(err, "status_code", None)
            # 200: the server answered but litellm could not read the body (hosted_vllm's
            # "Unable to get json response"): a malformed reply, retried like any other
            if isinstance(status, int) and (status >= 500 or status in (200, 429)):
                return Failure.transient(cls, message, _retry_after(err))
            return Failure(cls, message, "fail")
        if isinstance(err, asyncio.TimeoutError | ConnectionError | OSError):
            return Failure.transient(cls, message)
        return Failure(cls, message, "fail")


def read_response(response: Any) -> Completion:
    """litellm's response as a ``Completion``: the reply, the reasoning (``reasoning_content``, or
    the text of its thinking blocks), the finish reason and the usage."""
    choice = response.choices[0]
    msg = choice.message
    reply = msg.content if isinstance(getattr(msg, "content", None), str) else ""
    reasoning = getattr(msg, "reasoning_content", None) or ""
    blocks = getattr(msg, "thinking_blocks", None) or []
    if not reasoning and blocks:
        reasoning = "\n\n".join(b.get("thinking", "") for b in blocks if isinstance(b, dict))
    return Completion(reply=reply, reasoning=reasoning, finish_reason=str(getattr(choice, "finish_reason", "") or ""),
                      usage=usage_of(getattr(response, "usage", None)))


def _reading_log(model: str) -> Any:
    """The logging object litellm's reply transformations write to: one that logs nowhere."""
    from datetime import datetime

    from litellm.litellm_core_utils.litellm_logging import Logging

    log = Logging(model=model, messages=[], stream=False, call_type="acompletion", litellm_call_id="batch",
                  start_time=datetime.now(), function_id="batch")
    # what litellm's call path sets before a transformation reads them
    log.optional_params = {}
    log.model_call_details.setdefault("litellm_params", {})
    return log


def _retry_after(err: Exception) -> float | None:
    headers = None
    response = getattr(err, "response", None)
    if response is not None:
        headers = getattr(response, "headers", None)
    headers = headers or getattr(err, "litellm_response_headers", None)
    if not headers:
        return None
    return retry_after_seconds(headers.get("retry-after") or headers.get("Retry-After"))
