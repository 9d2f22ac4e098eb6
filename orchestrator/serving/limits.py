"""How large a request the sweep's protocols can render: what a served model's limits must hold.

vLLM refuses a request with more images than ``--limit-mm-per-prompt`` allows, and one whose
prompt and output cap do not fit ``--max-model-len``. Both are measured here by rendering
worst-case turns through ``agents.prompt.build_messages`` itself, so the numbers follow the
prompts whatever they come to hold:

- **images**: a turn once the history is full: the worked example's frames, ``history_frames``
  past frames (in a multi-turn conversation, those of the kept past turns) and the current one.
  A re-ask adds text only.
- **prompt tokens**: the turn at the step cap of the maze with the longest prompts, after a
  history in which every step changed a mechanism (the activity summary at its longest), counted
  with litellm's counter for the model (images by their size). In a multi-turn conversation
  each past reply counts as its action line only: a model's longer replies add to it, so the
  derived ``--max-model-len`` is a floor there (docs/cluster.md).

Counting tokens imports litellm: it is done where a limit is derived (a dry run, starting the
servers) or checked against a limit the sweep gives, not for every sweep that loads.
"""

from __future__ import annotations

import base64
import math
import struct
from functools import lru_cache
from typing import Any

from agents.parse import SENTINEL
from agents.prompt import build_messages
from agents.protocol import Protocol
from agents.study_prompt import build_study_messages
from agents.types import PastQuery, PastStep, Turn
from env.maze import Maze
from env.state import MazeState, initial_state

# prompt tokens counted with litellm's tokenizer may differ from the served model's own
PROMPT_TOKEN_MARGIN = 1.10
MODEL_LEN_STEP = 1024  # --max-model-len is rounded up to a multiple of this


def image_count(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if isinstance(m.get("content"), list)
               for p in m["content"] if p.get("type") == "image_url")


def images_per_request(maze: Maze, protocol: Protocol) -> int:
    """Images in the fullest request of an episode under ``protocol`` (any maze: the count does
    not depend on it)."""
    if not protocol.uses_image:
        return 0
    past = protocol.history_frames + 1  # one more than the window: every kept frame is shown
    return image_count(worst_case_messages(maze, protocol, past + 1))


def worst_case_messages(maze: Maze, protocol: Protocol, step: int) -> list[dict[str, Any]]:
    """The messages of the worst-case turn at ``step``. A multi-turn chat of the study style is
    the agent's own (its past queries): one query per past step, each reply in its parsed form."""
    turn = worst_case_turn(maze, protocol, step)
    if protocol.style == "study" and protocol.conversation == "multi":
        chat = [PastQuery(p.state_before, f"{SENTINEL}: TOGGLE") for p in turn.history]
        return build_study_messages(turn, chat)
    return build_messages(turn)


def worst_case_turn(maze: Maze, protocol: Protocol, step: int) -> Turn:
    """A turn at ``step`` after ``step - 1`` past steps that each changed a mechanism (a switch,
    with the most gates, turned on and off; else a door opened and closed; else a move), so that
    the activity summary is as long as ``step`` steps can make it."""
    start = initial_state(maze)
    states = [start, _changed(maze, start)]
    events = _events(maze)
    history = tuple(
        PastStep(step=n, action=4, event=events[n % 2], state_before=states[(n + 1) % 2], state_after=states[n % 2])
        for n in range(1, step)
    )
    return Turn(maze, protocol, step, states[(step - 1) % 2], history, step)


def _switch(maze: Maze) -> int:
    """The switch that controls the most gates."""
    return max(range(len(maze.switches)), key=lambda i: len(maze.switches[i].controls))


def _changed(maze: Maze, state: MazeState) -> MazeState:
    if maze.switches:
        k = _switch(maze)
        return MazeState(state.pos, state.dir, state.carrying, state.keys, state.doors,
                         tuple(not on if i == k else on for i, on in enumerate(state.switches)))
    if maze.doors:
        doors = tuple((1 if d == 0 else 0) if i == 0 else d for i, d in enumerate(state.doors))
        return MazeState(state.pos, state.dir, state.carrying, state.keys, doors, state.switches)
    return state


def _events(maze: Maze) -> tuple[str, str]:
    """(the event of an even step, of an odd one): back to the start state, then away from it."""
    if maze.switches:
        on = not initial_state(maze).switches[_switch(maze)]
        return ("switch_off", "switch_on") if on else ("switch_on", "switch_off")
    if maze.doors:
        opened = initial_state(maze).doors[0] != 0
        return ("door_closed", "door_opened") if opened else ("door_opened", "door_closed")
    return ("moved", "moved")


def prompt_tokens_at_cap(model: str, maze: Maze, protocol: Protocol, step_cap: int) -> int:
    """Prompt tokens of the last turn an episode on ``maze`` can reach (``worst_case_turn``)."""
    return count_tokens(model, worst_case_messages(maze, protocol, step_cap))


def longest_request(model: str, mazes: list[Maze], protocol: Protocol) -> int:
    """``max_model_len`` a request under ``protocol`` can need on any of ``mazes``."""
    prompt = max(prompt_tokens_at_cap(model, m, protocol, step_cap_of(m, protocol.step_cap_factor))
                 for m in longest_mazes(mazes, protocol.step_cap_factor))
    return max_model_len(prompt, protocol.max_output_tokens)


def max_model_len(prompt_tokens: int, output_cap: int) -> int:
    """``--max-model-len`` for a longest prompt and an output cap: with a margin for tokenizers
    that count differently, rounded up."""
    need = math.ceil(prompt_tokens * PROMPT_TOKEN_MARGIN) + output_cap
    return -(-need // MODEL_LEN_STEP) * MODEL_LEN_STEP


@lru_cache(maxsize=4096)
def step_cap_of(maze: Maze, factor: float) -> int:
    """The step cap of an episode on ``maze`` (the oracle's optimum times ``factor``)."""
    from env.oracle import solve
    from episodes.termination import step_cap_for

    return step_cap_for(solve(maze).optimal_actions or 0, factor)


def longest_mazes(mazes: list[Maze], factor: float, k: int = 3) -> list[Maze]:
    """The mazes whose last turns can hold the longest prompts: the ``k`` with the largest step
    caps (the longest activity summaries and conversations) and the ``k`` largest grids (the
    longest text maps, the largest frames)."""
    by_cap = sorted(mazes, key=lambda m: (-step_cap_of(m, factor), m.id))[:k]
    by_area = sorted(mazes, key=lambda m: (-m.width * m.height, -len(m.objects), m.id))[:k]
    return list({m.checksum: m for m in [*by_cap, *by_area]}.values())


# ---- counting tokens ---------------------------------------------------------------------------

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
