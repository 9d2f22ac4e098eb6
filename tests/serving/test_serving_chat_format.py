"""The text chat formats: gridbench's content-list prompts reach a text-only model whole
(``chatml-text`` for the bundled SmolLM2, ``gemma-text`` for a Gemma)."""

import pytest

from orchestrator.serving.llama_server import flatten, format_chatml_text, format_gemma_text


def test_text_parts_are_joined_and_the_system_text_leads_the_first_user_turn():
    prompt = format_gemma_text([
        {"role": "system", "content": "You play mazes."},
        {"role": "user", "content": [{"type": "text", "text": "Map:\n#.#"}, {"type": "text", "text": "ACTION?"}]},
    ]).prompt
    assert prompt == "<start_of_turn>user\nYou play mazes.\n\nMap:\n#.#\n\nACTION?<end_of_turn>\n<start_of_turn>model\n"


def test_multi_turn_keeps_string_contents():
    prompt = format_gemma_text([
        {"role": "user", "content": "a"}, {"role": "assistant", "content": "ACTION: left"},
        {"role": "user", "content": [{"type": "text", "text": "b"}]},
    ]).prompt
    assert "user\na<end_of_turn>" in prompt and "model\nACTION: left<end_of_turn>" in prompt
    assert prompt.endswith("user\nb<end_of_turn>\n<start_of_turn>model\n")


def test_an_image_part_is_refused_not_dropped():
    with pytest.raises(ValueError, match="text only"):
        flatten([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:"}}]}])


def test_chatml_text_joins_the_parts_into_chatml_turns():
    prompt = format_chatml_text([
        {"role": "user", "content": [{"type": "text", "text": "Map:\n#.#"}, {"type": "text", "text": "ACTION?"}]},
    ]).prompt
    assert "<|im_start|>user\nMap:\n#.#\n\nACTION?<|im_end|>" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")
