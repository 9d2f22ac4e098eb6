"""How the scripted server behaves as each provider (docs/providers.md lists the sources): OpenAI's
Chat Completions and the servers that copy it, Anthropic's Messages API, Google's Gemini API.

Each persona behaves as its provider documents, on its own: none reads gridbench's provider
table (``agents.providers.FAMILIES``), so a test against it cannot agree with gridbench by
construction. The one thing taken from gridbench is how a Claude model's name gives its version
(``agents.providers.anthropic.claude_version``, itself tested against Anthropic's model names): what each
version then accepts is the persona's own.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.providers.anthropic import claude_version
from testing.reading import request_images

if TYPE_CHECKING:
    from testing.scripted_server import ScriptedServer


def approx_tokens(text: str) -> int:
    return (len(text) + 3) // 4


def count_prompt_tokens(body: dict) -> int:
    """A deterministic stand-in for a tokenizer: 4 characters a token, 85 tokens an image."""
    total = 0
    for m in body.get("messages", []):
        content = m.get("content")
        if isinstance(content, str):
            total += approx_tokens(content)
        elif isinstance(content, list):
            for p in content:
                total += 85 if p.get("type") == "image_url" else approx_tokens(p.get("text", ""))
    return total



Refusal = tuple[int, dict[str, Any]]


class Persona:
    """An OpenAI-compatible server that takes every field and reports every count."""

    def refusal(self, body: dict) -> Refusal | None:
        return None

    def applied(self, body: dict) -> dict[str, Any]:
        # a reasoning effort is taken by OpenAI's reasoning models only, which always think
        return {"thinking": True if body.get("reasoning_effort") else None,
                "reasoning_effort": body.get("reasoning_effort"), "thinking_budget": None,
                "max_output_tokens": body.get("max_completion_tokens") or body.get("max_tokens"),
                "constraint": None}

    def answer(self, server: ScriptedServer, body: dict, completion: dict[str, Any]) -> dict[str, Any]:
        # OpenAI says which tier served the request
        completion["service_tier"] = body.get("service_tier") or "default"
        return completion


def _openai_error(status: int, message: str, kind: str = "invalid_request_error") -> Refusal:
    return status, {"error": {"message": message, "type": kind, "code": None}}


class LlamaCppPersona(Persona):
    """llama-cpp-python's server: no thinking switch, no reasoning, no token details; a GBNF
    ``grammar`` constrains the reply; fields it does not know are ignored (its request model does
    not forbid them)."""

    def applied(self, body: dict) -> dict[str, Any]:
        return {"thinking": None, "reasoning_effort": None, "thinking_budget": None,
                "max_output_tokens": body.get("max_tokens"),
                "constraint": "grammar" if isinstance(body.get("grammar"), str) else None}

    def answer(self, server: ScriptedServer, body: dict, completion: dict[str, Any]) -> dict[str, Any]:
        completion["choices"][0]["message"].pop("reasoning_content", None)
        usage = completion["usage"]
        usage.pop("completion_tokens_details", None)
        usage["completion_tokens"] = approx_tokens(completion["choices"][0]["message"]["content"] or "")
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
                "max_output_tokens": body.get("max_tokens"), "constraint": None}

    def answer(self, server: ScriptedServer, body: dict, completion: dict[str, Any]) -> dict[str, Any]:
        message, usage = completion["choices"][0]["message"], completion["usage"]
        reasoning = message.get("reasoning_content") if self.thinks(body) else None
        if not reasoning:
            message.pop("reasoning_content", None)
        usage.pop("completion_tokens_details", None)
        usage["completion_tokens"] = approx_tokens(message["content"] or "") + approx_tokens(reasoning or "")
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        usage["cached_tokens"] = server.shared_prefix_tokens(body)
        return completion


class OpenAIReasoningPersona(Persona):
    """OpenAI's Chat Completions for its reasoning models (o-series, GPT-5, GPT-6): the output cap
    is ``max_completion_tokens`` (``max_tokens`` is refused), no sampling parameter but the
    default, ``reasoning_effort`` among the model's levels (GPT-6: low to max, ``none`` refused),
    ``image_url.detail`` low, high or auto, ``service_tier`` echoed back; the reasoning never comes
    back, only its count, inside ``completion_tokens``."""

    EFFORTS = {"gpt-6": ("low", "medium", "high", "xhigh", "max"),
               "": ("minimal", "low", "medium", "high", "xhigh")}
    TIERS = ("auto", "default", "flex", "priority")

    def efforts(self, model: str) -> tuple[str, ...]:
        return next(v for k, v in self.EFFORTS.items() if model.startswith(k))

    def refusal(self, body: dict) -> Refusal | None:
        if "max_tokens" in body:
            return _openai_error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. "
                                      "Use 'max_completion_tokens' instead.")
        for name in ("temperature", "top_p"):
            if name in body and body[name] != 1:
                return _openai_error(400, f"Unsupported value: '{name}' does not support {body[name]} with this "
                                          "model. Only the default (1) value is supported.")
        effort, levels = body.get("reasoning_effort"), self.efforts(str(body.get("model")))
        if effort is not None and effort not in levels:
            return _openai_error(400, f"Unsupported value: 'reasoning_effort' does not support '{effort}' with "
                                      f"this model. Supported values are: {', '.join(repr(v) for v in levels)}.")
        if body.get("service_tier", "auto") not in self.TIERS:
            return _openai_error(400, f"Invalid value for 'service_tier': {body['service_tier']!r}.")
        for m in body.get("messages", []):
            for part in m.get("content") if isinstance(m.get("content"), list) else []:
                detail = (part.get("image_url") or {}).get("detail", "auto")
                if part.get("type") == "image_url" and detail not in ("low", "high", "auto"):
                    return _openai_error(400, f"Invalid value for 'detail': {detail!r}.")
        return None

    def applied(self, body: dict) -> dict[str, Any]:
        return {"thinking": True, "reasoning_effort": body.get("reasoning_effort"), "thinking_budget": None,
                "max_output_tokens": body.get("max_completion_tokens"), "constraint": None}

    def answer(self, server: ScriptedServer, body: dict, completion: dict[str, Any]) -> dict[str, Any]:
        message, usage = completion["choices"][0]["message"], completion["usage"]
        reasoning = message.pop("reasoning_content", None) or ""
        thought = max(1, approx_tokens(reasoning))  # a reasoning model always reasons
        usage["completion_tokens"] = approx_tokens(message["content"] or "") + thought
        usage["completion_tokens_details"] = {"reasoning_tokens": thought}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        usage["prompt_tokens_details"] = {"cached_tokens": server.shared_prefix_tokens(body)}
        completion["service_tier"] = "flex" if body.get("service_tier") == "flex" else "default"
        return completion


class VLLMPersona(Persona):
    """A vLLM server as ``vllm serve`` with these flags runs it: the model under its served name,
    ``--limit-mm-per-prompt`` and ``--max-model-len`` enforced with vLLM's HTTP 400 and message,
    the chat template's ``enable_thinking`` (on by default, as Qwen3's template has it),
    ``thinking_token_budget`` only with a reasoning parser, reasoning in ``message.reasoning``
    with a parser and inline in ``<think>`` without, reasoning tokens only with a parser, cached
    prompt tokens only under ``--enable-prompt-tokens-details``, ``structured_outputs`` of one
    kind (``choice``, ``regex``, ``json``, ``grammar``) constraining the reply."""

    CONSTRAINTS = ("choice", "regex", "json", "grammar", "json_object", "structural_tag")

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
        images = len(request_images(body))
        if images > self.images:
            return error(f"At most {self.images} image(s) may be provided in one prompt.")
        outputs = body.get("structured_outputs")
        if outputs is not None and (not isinstance(outputs, dict)
                                    or len([k for k in self.CONSTRAINTS if outputs.get(k) is not None]) != 1):
            return error("You can only use one kind of structured outputs constraint but multiple are specified")
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
        outputs = body.get("structured_outputs") or {}
        kind = next((k for k in self.CONSTRAINTS if outputs.get(k) is not None), None)
        return {"thinking": thinks, "reasoning_effort": body.get("reasoning_effort"), "thinking_budget": budget,
                "max_output_tokens": body.get("max_completion_tokens") or body.get("max_tokens"),
                "constraint": f"structured_outputs.{kind}" if kind else None}

    def answer(self, server: ScriptedServer, body: dict, completion: dict[str, Any]) -> dict[str, Any]:
        message, usage = completion["choices"][0]["message"], completion["usage"]
        reasoning = message.pop("reasoning_content", None) if self.thinks(body) else None
        message.pop("reasoning_content", None)
        budget = body.get("thinking_token_budget")
        if reasoning and budget is not None:
            reasoning = reasoning[:4 * budget]
        usage.pop("completion_tokens_details", None)
        usage["prompt_tokens"] = _vision_prompt_tokens(body)
        usage["completion_tokens"] = approx_tokens(message["content"] or "") + approx_tokens(reasoning or "")
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if reasoning and self.parser:
            message["reasoning"] = reasoning
            usage["completion_tokens_details"] = {"reasoning_tokens": approx_tokens(reasoning)}
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
    Claude 5: thinking cannot be disabled, and without an effort it thinks at ``medium``.
    Before 4.7: thinking within ``budget_tokens`` (at least 1024, below ``max_tokens``), and no
    temperature while thinking. Thinking off when ``thinking`` is left out or disabled. Usage
    counts cache reads and writes apart from ``input_tokens`` and reasons in
    ``output_tokens_details.thinking_tokens``; the prompt up to the last ``cache_control`` marker
    is cached as Anthropic's prompt cache does."""

    @staticmethod
    def thinking(body: dict) -> dict[str, Any]:
        value = body.get("thinking")
        if isinstance(value, dict) and value.get("type") in ("adaptive", "enabled"):
            return value
        # Claude 5 always thinks: adaptively, its display omitted, when the request says nothing
        return {"type": "adaptive"} if claude_version(str(body.get("model"))) >= (5, 0) else {}

    def refusal(self, body: dict) -> Refusal | None:
        def error(message: str) -> Refusal:
            return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}

        version, thinking = claude_version(str(body.get("model"))), self.thinking(body)
        effort = (body.get("output_config") or {}).get("effort")
        if version >= (5, 0) and (body.get("thinking") or {}).get("type") == "disabled":
            return error("thinking cannot be disabled for this model.")
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
        effort = (body.get("output_config") or {}).get("effort")
        if effort is None and claude_version(str(body.get("model"))) >= (5, 0):
            effort = "medium"  # Claude 5's default effort
        return {"thinking": bool(thinking), "reasoning_effort": effort,
                "thinking_budget": thinking.get("budget_tokens") if thinking.get("type") == "enabled" else None,
                "max_output_tokens": body.get("max_tokens"), "constraint": None}

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
        thought = approx_tokens(reasoning or "")
        usage: dict[str, Any] = {
            # Anthropic counts cached tokens apart from input_tokens
            "input_tokens": prompt - read - written, "output_tokens": approx_tokens(message.get("content") or "") + thought,
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
            total += approx_tokens(content)
            continue
        for p in content if isinstance(content, list) else []:
            if p.get("type") == "image_url":
                head = base64.b64decode(p["image_url"]["url"].split(",", 1)[1][:64])
                width, height = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
                total += -(-width // 28) * -(-height // 28)
            else:
                total += approx_tokens(p.get("text", ""))
    return total


def openai_shape(body: Any) -> Any:
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
             sum(85 if b.get("type") == "image" else approx_tokens(b.get("text", "")) for b in blocks[:end]))
            for end in marked]


# ---- Google Gemini (the Gemini Developer API, generativelanguage.googleapis.com) -------------------

# gRPC canonical status names and codes by HTTP status, as Google's APIs pair them
GOOGLE_STATUS = {400: ("INVALID_ARGUMENT", 3), 403: ("PERMISSION_DENIED", 7), 404: ("NOT_FOUND", 5),
                 429: ("RESOURCE_EXHAUSTED", 8), 500: ("INTERNAL", 13), 503: ("UNAVAILABLE", 14),
                 504: ("DEADLINE_EXCEEDED", 4)}


def google_error(code: int, message: str, status: str | None = None,
                 details: list[dict[str, Any]] | None = None) -> Refusal:
    """Google's error body: ``{"error": {"code", "message", "status"[, "details"]}}``."""
    error: dict[str, Any] = {"code": code, "message": message, "status": status or GOOGLE_STATUS[code][0]}
    if details:
        error["details"] = details
    return code, {"error": error}


def google_key_error(sent: str | None) -> Refusal:
    """What the Gemini API answers a request without a valid key: a key it does not know is a
    400 ``INVALID_ARGUMENT`` (``API_KEY_INVALID``); no key at all, a 403."""
    if not sent:
        return google_error(403, "Method doesn't allow unregistered callers (callers without established identity). "
                                 "Please use API Key or other form of API consumer identity to call this API.")
    message = "API key not valid. Please pass a valid API key."
    return google_error(400, message, details=[
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
         "metadata": {"service": "generativelanguage.googleapis.com"}},
        {"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US", "message": message}])


def _pick(obj: Any, camel: str) -> Any:
    """A field of a Google JSON object under its lowerCamelCase or its snake_case name (Google's
    JSON parser takes both; litellm sends ``max_output_tokens``, ``inline_data``)."""
    if not isinstance(obj, dict):
        return None
    if camel in obj:
        return obj[camel]
    return obj.get("".join(f"_{c.lower()}" if c.isupper() else c for c in camel))


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


@dataclass(frozen=True)
class GeminiModel:
    """What one Gemini model takes (docs/providers.md, *Gemini*, for the sources)."""

    id: str  # the model id, and the prefix of its versioned names (gemini-3.1-pro-preview)
    display: str
    levels: tuple[str, ...] = ()  # the thinkingLevel values it takes (lower case); () for Gemini 2.5
    default_level: str | None = None
    budget: tuple[int, int] | None = None  # thinkingBudget range when thinking (Gemini 2.5); None: not taken
    budget_off: bool = False  # thinkingBudget 0 turns thinking off (2.5 Flash and Flash-Lite)
    thinks_by_default: bool = True  # 2.5 Flash-Lite does not think unless given a budget
    legacy_budget: bool = False  # Gemini 3.x takes a thinkingBudget for backwards compatibility
    output_limit: int = 65_536
    listed: bool = True  # in the fake's models.list (a current model)

    @property
    def gemini3(self) -> bool:
        return bool(self.levels)


# most specific first: a name belongs to the first model whose id it starts with
GEMINI_MODELS = (
    GeminiModel("gemini-4-argon", "Gemini 4 Argon", ("low", "medium", "high"), "medium", output_limit=1_048_576),
    GeminiModel("gemini-4-hydrogen", "Gemini 4 Hydrogen", ("low", "medium", "high", "xhigh"), "high",
                output_limit=1_048_576),
    GeminiModel("gemini-3.8-flash", "Gemini 3.8 Flash", ("low", "medium", "high"), "medium", legacy_budget=True),
    GeminiModel("gemini-3.7-flash", "Gemini 3.7 Flash", ("low", "medium", "high"), "medium", legacy_budget=True,
                listed=False),
    GeminiModel("gemini-3.6-flash", "Gemini 3.6 Flash", ("minimal", "low", "medium", "high"), "medium",
                legacy_budget=True),
    GeminiModel("gemini-3.5-flash-lite", "Gemini 3.5 Flash-Lite", ("minimal", "low", "medium", "high"), "minimal",
                legacy_budget=True),
    GeminiModel("gemini-3.5-flash", "Gemini 3.5 Flash", ("minimal", "low", "medium", "high"), "medium",
                legacy_budget=True, listed=False),
    GeminiModel("gemini-3.1-flash-lite", "Gemini 3.1 Flash-Lite", ("minimal", "low", "medium", "high"), "minimal",
                legacy_budget=True),
    GeminiModel("gemini-3.1-pro", "Gemini 3.1 Pro", ("low", "medium", "high"), "high", legacy_budget=True),
    GeminiModel("gemini-3-pro", "Gemini 3 Pro", ("low", "high"), "high", legacy_budget=True, listed=False),
    GeminiModel("gemini-3-flash", "Gemini 3 Flash", ("minimal", "low", "medium", "high"), "high",
                legacy_budget=True),
    GeminiModel("gemini-2.5-pro", "Gemini 2.5 Pro", budget=(128, 32_768)),
    GeminiModel("gemini-2.5-flash-lite", "Gemini 2.5 Flash-Lite", budget=(512, 24_576), budget_off=True,
                thinks_by_default=False),
    GeminiModel("gemini-2.5-flash", "Gemini 2.5 Flash", budget=(1, 24_576), budget_off=True),
)
# the full names models.list gives (a preview's suffix included)
GEMINI_LISTED_NAMES = {"gemini-3.1-pro": "gemini-3.1-pro-preview", "gemini-3-flash": "gemini-3-flash-preview"}


def gemini_model(name: str) -> GeminiModel | None:
    """The model a Gemini model name (``gemini-3.1-pro-preview``, ``models/gemini-2.5-flash``) is, None
    for a name the API does not serve."""
    name = name.removeprefix("models/")
    return next((m for m in GEMINI_MODELS if name == m.id or name.startswith(m.id + "-")), None)


# the fields of GenerateContentRequest, GenerationConfig and ThinkingConfig (v1beta), lowerCamelCase
_REQUEST_FIELDS = {"model", "contents", "tools", "toolConfig", "safetySettings", "systemInstruction",
                   "generationConfig", "cachedContent"}
_GENERATION_FIELDS = {
    "stopSequences", "responseMimeType", "responseSchema", "responseJsonSchema", "responseModalities",
    "candidateCount", "maxOutputTokens", "temperature", "topP", "topK", "seed", "presencePenalty",
    "frequencyPenalty", "responseLogprobs", "logprobs", "enableEnhancedCivicAnswers", "speechConfig",
    "thinkingConfig", "imageConfig", "mediaResolution"}
_THINKING_FIELDS = {"includeThoughts", "thinkingBudget", "thinkingLevel"}
MEDIA_RESOLUTIONS = ("MEDIA_RESOLUTION_UNSPECIFIED", "MEDIA_RESOLUTION_LOW", "MEDIA_RESOLUTION_MEDIUM",
                     "MEDIA_RESOLUTION_HIGH")
PART_MEDIA_RESOLUTIONS = (*MEDIA_RESOLUTIONS, "MEDIA_RESOLUTION_ULTRA_HIGH")
# image tokens by media resolution: Gemini 3 and later, and Gemini 2.5 (whose default is 258)
_IMAGE_TOKENS_3 = {"MEDIA_RESOLUTION_LOW": 280, "MEDIA_RESOLUTION_MEDIUM": 560, "MEDIA_RESOLUTION_HIGH": 1120,
                   "MEDIA_RESOLUTION_ULTRA_HIGH": 2240}
_IMAGE_TOKENS_25 = {"MEDIA_RESOLUTION_LOW": 64, "MEDIA_RESOLUTION_MEDIUM": 258, "MEDIA_RESOLUTION_HIGH": 258}


def _unknown_field(obj: Any, known: set[str], where: str) -> Refusal | None:
    """Google's answer to a JSON field its request message does not have."""
    for name in obj if isinstance(obj, dict) else ():
        if name not in known and name not in {_snake(k) for k in known}:
            return google_error(400, f'Invalid JSON payload received. Unknown name "{name}" at \'{where}\': '
                                     "Cannot find field.")
    return None


def gemini_parts(body: dict) -> list[tuple[str, dict[str, Any]]]:
    """Every part of the request's contents, with its content's role."""
    out: list[tuple[str, dict[str, Any]]] = []
    for content in _pick(body, "contents") or []:
        for part in _pick(content, "parts") or [] if isinstance(content, dict) else []:
            if isinstance(part, dict):
                out.append((str(_pick(content, "role") or "user"), part))
    return out


class GeminiPersona(Persona):
    """Google's Gemini API (``models/{model}:generateContent``) as Google documents it, by model
    (``GEMINI_MODELS``). The body is Google's own (``contents``/``parts``, ``systemInstruction``,
    ``generationConfig``), camelCase or snake_case; ``model`` is the one the path names. Refused
    with Google's error body: a model the API does not serve (404), a field the request message
    does not have, ``thinkingLevel`` with ``thinkingBudget``, a level the model does not take (or
    any level on Gemini 2.5), a budget outside the model's range (or any budget on Gemini 4),
    thinking off (budget 0) where the model cannot turn it off, ``maxOutputTokens`` outside 1 to the
    model's limit, ``temperature`` outside 0 to 2, ``topP`` outside 0 to 1, a media resolution that
    is not one, a per-part media resolution before Gemini 3, a role other than ``user`` and
    ``model``, no ``contents``. The answer: ``candidates[0].content.parts`` (the thought summary
    first, ``thought: true``, only under ``includeThoughts`` while thinking), ``finishReason``
    (``MAX_TOKENS`` for a reply cut at its cap), ``usageMetadata`` (``promptTokenCount`` with the
    cached part in it, ``cachedContentTokenCount`` for the prefix an earlier prompt shared: the
    implicit cache; ``candidatesTokenCount`` without the thoughts, ``thoughtsTokenCount``,
    ``totalTokenCount`` the sum), ``modelVersion``, ``responseId``. Image tokens follow the media
    resolution (Gemini 3: 280, 560, 1120 at low, medium, high; 1120 by default)."""

    @staticmethod
    def model(body: dict) -> GeminiModel | None:
        return gemini_model(str(body.get("model") or ""))

    @staticmethod
    def _thinking(body: dict) -> dict[str, Any]:
        config = _pick(_pick(body, "generationConfig"), "thinkingConfig")
        return config if isinstance(config, dict) else {}

    def thinks(self, body: dict) -> bool:
        model = self.model(body)
        if model is None:
            return False
        budget = _pick(self._thinking(body), "thinkingBudget")
        if model.gemini3:
            return True  # Gemini 3 and later cannot turn thinking off
        if budget is None:
            return model.thinks_by_default
        return budget != 0

    def level(self, body: dict) -> str | None:
        """The thinking level applied: the one sent, else the model's default (Gemini 3 and later)."""
        model = self.model(body)
        sent = _pick(self._thinking(body), "thinkingLevel")
        if isinstance(sent, str):
            return sent.lower()
        return model.default_level if model is not None and _pick(self._thinking(body), "thinkingBudget") is None \
            else None

    def refusal(self, body: dict) -> Refusal | None:
        name = str(body.get("model") or "").removeprefix("models/")
        model = self.model(body)
        if model is None:
            return google_error(404, f"models/{name} is not found for API version v1beta, or is not supported for "
                                     "generateContent. Call ListModels to see the list of available models and their "
                                     "supported methods.")
        generation = _pick(body, "generationConfig") or {}
        thinking = self._thinking(body)
        for obj, known, where in ((body, _REQUEST_FIELDS, ""), (generation, _GENERATION_FIELDS, "generation_config"),
                                  (thinking, _THINKING_FIELDS, "generation_config.thinking_config")):
            unknown = _unknown_field(obj, known, where)
            if unknown is not None:
                return unknown
        contents = _pick(body, "contents")
        if not contents:
            return google_error(400, "* GenerateContentRequest.contents: contents is not specified\n")
        for content in contents:
            role = _pick(content, "role")
            if role is not None and role not in ("user", "model"):
                return google_error(400, "Please use a valid role: user, model.")
        level, budget = _pick(thinking, "thinkingLevel"), _pick(thinking, "thinkingBudget")
        if level is not None and budget is not None:
            return google_error(400, "You can only set one of thinking budget and thinking level.")
        if level is not None:
            if not isinstance(level, str) or level.upper() not in ("THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW",
                                                                   "MEDIUM", "HIGH", "XHIGH"):
                return google_error(400, "Invalid value at 'generation_config.thinking_config.thinking_level' "
                                         f"(type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingLevel), "
                                         f"{json.dumps(level)}")
            if not model.levels:
                return google_error(400, "Thinking level is not supported for this model.")
            if level.lower() not in model.levels and level.upper() != "THINKING_LEVEL_UNSPECIFIED":
                return google_error(400, f"Thinking level {level.upper()} is not supported for this model. Supported "
                                         f"levels: {', '.join(v.upper() for v in model.levels)}.")
        if budget is not None:
            if not isinstance(budget, int) or isinstance(budget, bool):
                return google_error(400, "Invalid value at 'generation_config.thinking_config.thinking_budget' "
                                         f"(TYPE_INT32), {json.dumps(budget)}")
            if model.gemini3 and not model.legacy_budget:
                return google_error(400, "Thinking budget is not supported for this model. Use thinking level "
                                         "instead.")
            if budget == 0 and not model.budget_off:
                return google_error(400, "Budget 0 is invalid. This model only works in thinking mode.")
            low, high = model.budget or (1, model.output_limit)
            if budget not in (0, -1) and not low <= budget <= high:
                return google_error(400, f"The thinking budget {budget} is invalid. Please choose a value between "
                                         f"{low} and {high}.")
        cap = _pick(generation, "maxOutputTokens")
        if cap is not None and (not isinstance(cap, int) or not 1 <= cap <= model.output_limit):
            return google_error(400, f"Unable to submit request because it has a maxOutputTokens value of {cap} but "
                                     f"the supported range is from 1 (inclusive) to {model.output_limit + 1} "
                                     "(exclusive). Update the value and try again.")
        for field_name, top in (("temperature", 2.0), ("topP", 1.0)):
            value = _pick(generation, field_name)
            if value is not None and (not isinstance(value, (int, float)) or not 0 <= value <= top):
                return google_error(400, f"Unable to submit request because it has a {field_name} value of {value} "
                                         f"but the supported range is from 0 (inclusive) to {top:g} (inclusive). "
                                         "Update the value and try again.")
        resolution = _pick(generation, "mediaResolution")
        if resolution is not None and resolution not in MEDIA_RESOLUTIONS:
            return google_error(400, "Invalid value at 'generation_config.media_resolution' "
                                     f"(type.googleapis.com/google.ai.generativelanguage.v1beta.MediaResolution), "
                                     f"{json.dumps(resolution)}")
        for _role, part in gemini_parts(body):
            per_part = _pick(_pick(part, "mediaResolution"), "level")
            if _pick(part, "mediaResolution") is None:
                continue
            if not model.gemini3:
                return google_error(400, "Per-part media resolution is not supported for this model.")
            if per_part not in PART_MEDIA_RESOLUTIONS:
                return google_error(400, "Invalid value at 'contents.parts.media_resolution.level', "
                                         f"{json.dumps(per_part)}")
        return None

    def media_resolution(self, body: dict) -> str | None:
        """The media resolution asked: the global one, else the first per-part one."""
        found = _pick(_pick(body, "generationConfig"), "mediaResolution")
        if found:
            return str(found)
        for _role, part in gemini_parts(body):
            level = _pick(_pick(part, "mediaResolution"), "level")
            if level:
                return str(level)
        return None

    def applied(self, body: dict) -> dict[str, Any]:
        thinks = self.thinks(body)
        budget = _pick(self._thinking(body), "thinkingBudget")
        schema = _pick(_pick(body, "generationConfig"), "responseSchema") or \
            _pick(_pick(body, "generationConfig"), "responseJsonSchema")
        return {"thinking": thinks, "reasoning_effort": self.level(body) if thinks else None,
                "thinking_budget": budget if thinks and budget not in (None, 0) else None,
                "max_output_tokens": _pick(_pick(body, "generationConfig"), "maxOutputTokens"),
                "constraint": "response_schema" if schema else None,
                "media_resolution": self.media_resolution(body)}

    def prompt_tokens(self, body: dict) -> int:
        """Text at 4 characters a token; an image at its media resolution's tokens."""
        model = self.model(body)
        table = _IMAGE_TOKENS_3 if model is not None and model.gemini3 else _IMAGE_TOKENS_25
        default = 1120 if model is not None and model.gemini3 else 258
        overall = _pick(_pick(body, "generationConfig"), "mediaResolution")
        total = 0
        system = _pick(body, "systemInstruction")
        for part in _pick(system, "parts") or [] if isinstance(system, dict) else []:
            total += approx_tokens(str(_pick(part, "text") or ""))
        for _role, part in gemini_parts(body):
            if _pick(part, "inlineData") is not None or _pick(part, "fileData") is not None:
                level = _pick(_pick(part, "mediaResolution"), "level") or overall
                total += table.get(str(level), default)
            elif not part.get("thought"):
                total += approx_tokens(str(_pick(part, "text") or ""))
        return total

    def answer(self, server: ScriptedServer, body: dict, completion: dict[str, Any]) -> dict[str, Any]:
        message = completion["choices"][0]["message"]
        thinks = self.thinks(body)
        reasoning = (message.get("reasoning_content") or "") if thinks else ""
        reply = message.get("content") or ""
        parts: list[dict[str, Any]] = []
        if reasoning and _pick(self._thinking(body), "includeThoughts"):
            parts.append({"text": reasoning, "thought": True})
        parts.append({"text": reply})
        prompt = self.prompt_tokens(body)
        cached = min(server.shared_prefix_tokens(gemini_openai_shape(body)), prompt)
        thought = approx_tokens(reasoning)
        candidates = approx_tokens(reply)
        usage: dict[str, Any] = {"promptTokenCount": prompt, "candidatesTokenCount": candidates,
                                 "totalTokenCount": prompt + candidates + thought}
        if thought:
            usage["thoughtsTokenCount"] = thought
        if cached:
            usage["cachedContentTokenCount"] = cached
        finish = {"length": "MAX_TOKENS"}.get(completion["choices"][0]["finish_reason"], "STOP")
        return {
            "candidates": [{"content": {"parts": parts, "role": "model"}, "finishReason": finish, "index": 0}],
            "usageMetadata": usage,
            "modelVersion": str(body.get("model") or server.model).removeprefix("models/"),
            "responseId": completion["id"].replace("chatcmpl-scripted-", "scripted-gemini-"),
        }


GEMINI = GeminiPersona()


def gemini_openai_shape(body: Any, model: str | None = None) -> Any:
    """A Gemini ``generateContent`` body in the OpenAI chat shape the reply logic reads: the system
    instruction as a first message, each content a message (role ``model`` as ``assistant``), text
    parts as text and ``inlineData`` images as data URIs (thought parts left out); ``model`` the
    one the path names."""
    if not isinstance(body, dict):
        return body
    messages: list[dict[str, Any]] = []
    system = _pick(body, "systemInstruction")
    if isinstance(system, dict):
        text = "\n".join(str(_pick(p, "text") or "") for p in _pick(system, "parts") or [] if isinstance(p, dict))
        messages.append({"role": "system", "content": text})
    elif isinstance(system, str):
        messages.append({"role": "system", "content": system})
    for content in _pick(body, "contents") or []:
        if not isinstance(content, dict):
            continue
        parts: list[dict[str, Any]] = []
        for p in _pick(content, "parts") or []:
            if not isinstance(p, dict) or p.get("thought"):
                continue
            data = _pick(p, "inlineData")
            if isinstance(data, dict):
                parts.append({"type": "image_url", "image_url": {
                    "url": f"data:{_pick(data, 'mimeType') or 'image/png'};base64,{_pick(data, 'data') or ''}"}})
            elif _pick(p, "text") is not None:
                parts.append({"type": "text", "text": str(_pick(p, "text"))})
        role = {"model": "assistant"}.get(str(_pick(content, "role") or "user"), "user")
        messages.append({"role": role, "content": parts})
    generation = _pick(body, "generationConfig") or {}
    shaped: dict[str, Any] = {"model": (model or str(body.get("model") or "")).removeprefix("models/"),
                              "messages": messages}
    if _pick(generation, "maxOutputTokens") is not None:
        shaped["max_tokens"] = _pick(generation, "maxOutputTokens")
    return shaped
