"""``python -m orchestrator.serving.llama_server ARGS``: llama-cpp-python's OpenAI server, plus
two chat formats for text-only models: ``chatml-text`` (the bundled SmolLM2) and ``gemma-text``.

gridbench's prompts are OpenAI content lists (``[{"type": "text", "text": ...}, ...]``), the form
every provider takes. llama-cpp-python's built-in ``chatml`` and ``gemma`` formats keep only
string contents and silently drop lists (the model would see an empty turn), so these first join
the text parts of each message and refuse image parts: the model cannot see them, and a sweep
that sends them is misconfigured, not a model failure. Everything else is llama-cpp-python's own
server and command line, unchanged.
"""

from __future__ import annotations

from typing import Any

from llama_cpp import llama_chat_format as chat_format
from llama_cpp.server.__main__ import main


def flatten(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each message with its text parts joined into one string; image parts are an error."""
    out = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            texts = []
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind != "text":
                    raise ValueError(f"this model reads text only; got a {kind!r} part (use observation: text)")
                texts.append(part.get("text", ""))
            message = {**message, "content": "\n\n".join(texts)}
        out.append(message)
    return out


def format_gemma_text(messages: list[dict[str, Any]], **kwargs: Any) -> chat_format.ChatFormatterResponse:
    messages = flatten(messages)
    # Gemma has no system role: its own chat template puts the system text before the first user turn
    system = "\n\n".join(m["content"] for m in messages if m.get("role") == "system" and m.get("content"))
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    if system and rest and rest[0].get("role") == "user":
        rest[0]["content"] = f"{system}\n\n{rest[0]['content']}"
    return chat_format.format_gemma(rest, **kwargs)


def format_chatml_text(messages: list[dict[str, Any]], **kwargs: Any) -> chat_format.ChatFormatterResponse:
    return chat_format.format_chatml(flatten(messages), **kwargs)


chat_format.register_chat_format("gemma-text")(format_gemma_text)
chat_format.register_chat_format("chatml-text")(format_chatml_text)

if __name__ == "__main__":
    main()
