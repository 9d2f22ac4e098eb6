"""What a sweep will cost before it spends anything (``gridbench run --dry-run``).

Per model, over the episodes still to run:

- **calls**: at most the step cap of each episode (times three with ``invalid_output: reask``);
  typically the study's observed episode length, ``TYPICAL_TURNS`` turns, capped at the step cap.
- **prompt tokens**: measured by rendering each episode's first turn (litellm's token counter
  for the model); a multi-turn conversation grows by the second turn's increment every turn.
- **output tokens**: the output cap each request carries (``max_tokens``, as the agent sends it);
  the typical estimate uses the mean output per call of this model's finished episodes in the
  run when there are some, else the cap too.
- **price**: the model entry's ``price``, else litellm's price table; a model neither knows is
  reported as unknown, never guessed.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from agents.model import ModelConfig, Price
from agents.prompt import build_messages
from agents.protocol import Protocol
from agents.types import PastStep, Turn
from env.maze import Maze
from env.state import initial_state, step
from orchestrator.sweep import EpisodeSpec

# The study's observed episode length: one model's 1,600 turns that followed a move, over its
# 50 episodes (the stall watchdog ended most of them), so about 33 turns with the first one.
TYPICAL_TURNS = 33
REASK_FACTOR = 3  # a turn with `invalid_output: reask` makes at most 1 + 2 calls


@dataclass
class ModelEstimate:
    name: str
    episodes: int = 0
    calls_max: int = 0
    calls_typical: int = 0
    prompt_tokens_first: int = 0  # summed over episodes: the first turn's prompt
    cost_max: float | None = 0.0
    cost_typical: float | None = 0.0
    price_source: str = ""
    output_cap: int | None = None

    @property
    def mean_prompt_tokens(self) -> float:
        return self.prompt_tokens_first / self.episodes if self.episodes else 0.0


def estimate(specs: list[EpisodeSpec], observed_output: dict[str, float] | None = None) -> list[ModelEstimate]:
    """One estimate per model of ``specs``, in the order models first appear."""
    out: dict[str, ModelEstimate] = {}
    for spec in specs:
        m = spec.model
        e = out.setdefault(m.name, ModelEstimate(m.name))
        e.episodes += 1
        if m.builtin:
            e.price_source = "built-in (free)"
            continue
        protocol = spec.condition.protocol
        cap = _step_cap(spec.maze, protocol)
        factor = REASK_FACTOR if protocol.invalid_output == "reask" else 1
        typical = min(cap, TYPICAL_TURNS)
        e.calls_max += cap * factor
        e.calls_typical += typical
        first, growth = _prompt_tokens(m.config, spec.maze, protocol)
        e.prompt_tokens_first += first
        out_cap = output_cap(m.config, protocol)
        e.output_cap = out_cap
        price, source = price_of(m.config)
        e.price_source = source
        if price is None or e.cost_max is None or e.cost_typical is None:
            e.cost_max = e.cost_typical = None
            continue
        typical_out = (observed_output or {}).get(m.name, float(out_cap))
        e.cost_max += factor * (_prompt_sum(first, growth, cap) * price.input + cap * out_cap * price.output)
        e.cost_typical += _prompt_sum(first, growth, typical) * price.input + typical * typical_out * price.output
    return list(out.values())


def _prompt_sum(first: int, growth: int, turns: int) -> int:
    """Prompt tokens over ``turns`` turns that start at ``first`` and grow by ``growth`` a turn."""
    return turns * first + growth * turns * (turns - 1) // 2


@lru_cache(maxsize=4096)
def _step_cap(maze: Maze, protocol: Protocol) -> int:
    from env.oracle import solve
    from orchestrator.termination import step_cap_for

    return step_cap_for(solve(maze).optimal_actions or 0, protocol.step_cap_factor)


def price_of(config: ModelConfig) -> tuple[Price | None, str]:
    """The price per token and where it came from."""
    if config.price is not None:
        return config.price, "sweep price"
    from agents.llm import litellm_module

    try:
        info = litellm_module().get_model_info(config.model)
        return Price(float(info["input_cost_per_token"]), float(info["output_cost_per_token"]),
                     info.get("cache_read_input_token_cost")), "litellm table"
    except Exception:
        return None, "unknown: give the entry a price"


def output_cap(config: ModelConfig, protocol: Protocol) -> int:
    """The ``max_tokens`` each request of this model carries (some providers need more than the
    protocol's cap to fit the thinking budget)."""
    from agents.llm import LLMAgent

    agent = LLMAgent(config, protocol, offline=True)
    request = agent.request_body([]) if config.client == "openai" else agent.request_kwargs([])
    return int(request.get("max_tokens") or protocol.max_output_tokens)


def _prompt_tokens(config: ModelConfig, maze: Maze, protocol: Protocol) -> tuple[int, int]:
    """(prompt tokens of the first turn, growth per turn of a multi-turn conversation)."""
    start = initial_state(maze)
    first = Turn(maze, protocol, 1, start, (), 1)
    tokens = count_tokens(config.model, build_messages(first, []))
    if protocol.conversation != "multi":
        return tokens, 0
    moved, event = step(maze, start, 2)
    second = Turn(maze, protocol, 2, moved, (PastStep(1, 2, event, start, moved),), 2)
    return tokens, max(0, count_tokens(config.model, build_messages(second, ["ACTION: forward"])) - tokens)


def count_tokens(model: str, messages: list[dict[str, Any]]) -> int:
    """Prompt tokens by litellm's counter for ``model``: the text at once, each image by its size
    (counting images costs time, and every frame of a maze has the same size)."""
    from agents.llm import litellm_module

    texts, sizes = [], []
    for m in messages:
        content = m["content"]
        for part in content if isinstance(content, list) else [{"type": "text", "text": content}]:
            if part["type"] == "image_url":
                sizes.append(_png_size(part["image_url"]["url"]))
            else:
                texts.append(part["text"])
    lib = litellm_module()
    total = int(lib.token_counter(model=model, text="\n\n".join(texts)))
    return total + sum(_image_tokens(model, size) for size in sizes)


def _png_size(uri: str) -> tuple[int, int]:
    head = base64.b64decode(uri.split(",", 1)[1][:64])
    width, height = struct.unpack(">II", head[16:24])  # the PNG IHDR chunk
    return width, height


@lru_cache(maxsize=256)
def _image_tokens(model: str, size: tuple[int, int]) -> int:
    import numpy as np

    from agents.llm import litellm_module
    from env.render import png_bytes

    png = png_bytes(np.zeros((size[1], size[0], 3), dtype=np.uint8))
    uri = "data:image/png;base64," + base64.b64encode(png).decode()
    lib = litellm_module()
    with_image = lib.token_counter(model=model, messages=[{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": uri}}]}])
    without = lib.token_counter(model=model, messages=[{"role": "user", "content": []}])
    return max(0, int(with_image) - int(without))
