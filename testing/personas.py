"""How the scripted server behaves as each provider (docs/providers.md lists the sources).

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
