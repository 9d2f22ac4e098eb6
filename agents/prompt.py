"""The prompt builder: (protocol, maze, history, current state) -> provider-neutral chat messages.

Messages use the OpenAI chat format that litellm translates for every provider: a ``content``
list of ``{"type": "text"}`` parts and ``{"type": "image_url"}`` parts whose URL is a base64
PNG data URI. Every sentence comes from ``agents/prompts/`` (the instructions of each prompt
level and ``turn.yaml``); this module only decides which of them a turn holds and in what order.

Frames come from ``env.render.render_state`` and text maps from ``env.text.text_projection``,
so a prompt can never disagree with the environment, and the in-context example is a real
episode of the oracle on a tiny maze (``prompts/icl_maze.json``) drawn the same way.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from functools import cache, lru_cache
from pathlib import Path
from string import Template
from typing import Any

import yaml

from agents.protocol import Observation, Protocol
from agents.types import PastStep, Turn
from env.maze import CLASSIC, MULTINET_PR57, Maze, load_maze
from env.render import MINIGRID, RenderSettings, frame, png_bytes
from env.render3d.cameras import CAMERAS
from env.skins import SKINS, with_skin
from env.state import ACTIONS, MazeState, ahead, dead, initial_state, r1_landing, step
from env.text import inventory, object_cells, text_projection

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
LEVELS = ("minimal", "standard", "detailed")
HASH_CHARS = 16


@cache
def skin_words(skin: str) -> dict[str, str]:
    """Every ``$word`` a prompt text may hold, in one skin's words: the kinds and their states
    (``env.skins``), how a change of state is said and what the pictures show (``prompts/skins.yaml``)."""
    words = {**SKINS[skin].words, **yaml.safe_load((PROMPTS_DIR / "skins.yaml").read_text())[skin]}
    return {**words, **{k[0].upper() + k[1:]: v[0].upper() + v[1:] for k, v in words.items()}}


def worded(data: Any, skin: str) -> Any:
    """Prompt texts (a string, or lists and mappings of them) with every ``$word`` in the skin's
    words; an unknown ``$word`` is an error, never left in a prompt."""
    if isinstance(data, str):
        return Template(data).substitute(skin_words(skin))
    if isinstance(data, dict):
        return {k: worded(v, skin) for k, v in data.items()}
    if isinstance(data, list):
        return [worded(v, skin) for v in data]
    return data


@cache
def texts(skin: str = CLASSIC) -> dict[str, Any]:
    return worded(yaml.safe_load((PROMPTS_DIR / "turn.yaml").read_text()), skin)


@cache
def instructions(level: str, skin: str = CLASSIC) -> str:
    if level not in LEVELS:
        raise ValueError(f"unknown prompt level {level!r}")
    return worded((PROMPTS_DIR / f"{level}.txt").read_text().strip(), skin)


# ---- content parts ------------------------------------------------------------------------
def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def image_part(uri: str) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": uri}}


def with_image_detail(messages: list[dict[str, Any]], detail: str) -> list[dict[str, Any]]:
    """The messages with OpenAI's ``detail`` in every image part (the example's and the history's
    too); text unchanged, ``messages`` itself untouched."""
    def part(p: dict[str, Any]) -> dict[str, Any]:
        return {**p, "image_url": {**p["image_url"], "detail": detail}} if p.get("type") == "image_url" else p

    return [{**m, "content": [part(p) for p in m["content"]]} if isinstance(m["content"], list) else m
            for m in messages]


@lru_cache(maxsize=512)
def frame_uri(maze: Maze, state: MazeState, tile_size: int, switch_frames: str = "distinct",
              render: RenderSettings = MINIGRID) -> str:
    """The frame of ``state`` as a PNG data URI (cached: history frames recur for several turns);
    ``render`` is the protocol's block, the 2D frame by default."""
    png = png_bytes(frame(maze, state, tile_size, switch_frames, render))
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


class _Parts:
    """Collects paragraphs into text parts, starting a new text part after each image."""

    def __init__(self) -> None:
        self.parts: list[dict[str, Any]] = []
        self._paragraphs: list[str] = []

    def text(self, paragraph: str) -> None:
        if paragraph:
            self._paragraphs.append(paragraph)

    def image(self, uri: str) -> None:
        self._flush()
        self.parts.append(image_part(uri))

    def extend(self, parts: Sequence[dict[str, Any]]) -> None:
        for p in parts:
            if p["type"] == "text":
                self.text(p["text"])
            else:
                self.image(p["image_url"]["url"])

    def _flush(self) -> None:
        if self._paragraphs:
            self.parts.append(text_part("\n\n".join(self._paragraphs)))
            self._paragraphs = []

    def done(self) -> list[dict[str, Any]]:
        self._flush()
        return self.parts


def _observation(parts: _Parts, maze: Maze, state: MazeState, protocol: Protocol, *,
                 image: bool, text: bool) -> None:
    if image:
        parts.image(frame_uri(maze, state, protocol.tile_size, protocol.switch_frames, protocol.render))
    if text:
        parts.text(texts(maze.skin)["current_text"] + "\n" + text_projection(maze, state))


def _action_name(action: int | None) -> str:
    return ACTIONS[action] if action is not None else texts()["history_no_action"]


# ---- the fixed pieces ---------------------------------------------------------------------
@cache
def icl_episode() -> tuple[Maze, tuple[MazeState, ...], tuple[int, ...]]:
    """The example maze, the states its written-out plan passes through, and the plan."""
    from env.oracle import solve  # needed only to check the example, once per process

    spec = yaml.safe_load((PROMPTS_DIR / "icl_example.yaml").read_text())
    maze = load_maze(PROMPTS_DIR / spec["maze"])
    plan = tuple(ACTIONS.index(name) for name in spec["actions"])
    states = [initial_state(maze)]
    for a in plan:
        states.append(step(maze, states[-1], a)[0])
    if states[-1].pos != maze.goal or len(plan) != solve(maze).optimal_actions:
        raise ValueError("agents/prompts/icl_example.yaml: the example's actions are not an optimal solution")
    return maze, tuple(states), plan


@lru_cache(maxsize=16)
def icl_parts(observation: Observation, tile_size: int, switch_frames: str = "distinct",
              skin: str = CLASSIC, render: RenderSettings = MINIGRID) -> tuple[dict[str, Any], ...]:
    """The worked example, drawn and named in ``skin``: the maze played learns one look and one
    set of words."""
    t = texts(skin)
    maze, states, plan = icl_episode()
    maze = with_skin(maze, skin)
    proto = Protocol(observation=observation, tile_size=tile_size,
                     switch_frames="study" if switch_frames == "study" else "distinct", render=render)
    parts = _Parts()
    parts.text(t["icl_header"])
    for i, (state, action) in enumerate(zip(states, plan, strict=False), start=1):
        parts.text(t["icl_step"].format(step=i, inventory=inventory(maze, state)))
        _observation(parts, maze, state, proto, image=proto.uses_image, text=proto.uses_text)
        parts.text(t["icl_reply"].format(action=ACTIONS[action]))
    last = states[-1]
    parts.text(t["icl_end"].format(step=len(states), inventory=inventory(maze, last)))
    _observation(parts, maze, last, proto, image=proto.uses_image, text=False)
    parts.text(t["icl_footer"])
    return tuple(parts.done())


def start_info(maze: Maze) -> str:
    x, y = maze.start.pos
    return texts(maze.skin)["start_info"].format(x=x, y=y, dir=maze.start.dir)


def mechanism_locations(maze: Maze) -> str:
    t = texts(maze.skin)
    if not maze.objects:
        return t["locations_none"]
    lines = [t["locations_header"]]
    lines += [t["location_item"].format(name=name, x=x, y=y) for name, (x, y) in object_cells(maze)]
    return "\n".join(lines)


def activity_events(maze: Maze, history: Sequence[PastStep]) -> list[str]:
    """One phrase per mechanism event so far, with its step number, in order."""
    phrases = texts(maze.skin)["events"]
    out: list[str] = []
    for past in history:
        before, after, n = past.state_before, past.state_after, past.step
        ev = past.event
        if ev == "pickup":
            out.append(phrases["pickup"].format(color=maze.keys[after.carrying].color, step=n))
        elif ev == "swap":
            out.append(phrases["swap"].format(
                color=maze.keys[after.carrying].color, other=maze.keys[before.carrying].color, step=n))
        elif ev == "reset":
            out.append(phrases["reset"].format(step=n))
        elif maze.ruleset == MULTINET_PR57 and ev in ("teleported", "died", "froze"):
            out.append(_mechanism_phrase(maze, past, phrases))
        elif ev in ("door_unlocked", "door_opened", "door_closed"):
            for door, was, now in zip(maze.doors, before.doors, after.doors, strict=True):
                if was != now:
                    out.append(phrases[ev].format(color=door.color, step=n))
        if ev not in ("reset", "died") and before.switches != after.switches:  # a toggle, or (multinet-r1) a hold switch
            for sw, was, now in zip(maze.switches, before.switches, after.switches, strict=True):
                if was != now:
                    out.append(phrases["switch_on" if now else "switch_off"].format(color=sw.color, step=n))
            gates_before = maze.gates_open(before.switches)
            gates_after = maze.gates_open(after.switches)
            for gate, was, now in zip(maze.gates, gates_before, gates_after, strict=True):
                if was != now:
                    out.append(phrases["gate_opened" if now else "gate_closed"].format(color=gate.color, step=n))
    return out


def _mechanism_phrase(maze: Maze, past: PastStep, phrases: dict[str, str]) -> str:
    """A multinet-pr57 mechanism that fired at ``past`` (``teleported``, ``died``, ``froze``):
    where it let the agent out, the cell it died on, the cell it froze on."""
    after, n = past.state_after, past.step
    if past.event == "teleported":
        color = getattr(maze.object_on(after.pos), "color", "")
        return phrases["teleported"].format(color=color, x=after.pos[0], y=after.pos[1], step=n)
    if past.event == "died":
        x, y = r1_landing(maze, ahead(maze, past.state_before))
        return phrases["died_over" if dead(maze, after) else "died"].format(x=x, y=y, step=n)
    return phrases["froze"].format(x=after.pos[0], y=after.pos[1], n=maze.rulebook.freeze_steps, step=n)


def event_summary(maze: Maze, history: Sequence[PastStep]) -> str:
    """The activity summary of the classic styles: every mechanism event so far, one phrase each
    with its step (``activity_events``). The study style's, ``agents.study_prompt.route_summary``,
    also says where the agent started and which cells its route passed since the last event."""
    t = texts(maze.skin)
    events = activity_events(maze, history)
    if not events:
        return t["summary_none"]
    prose = "; ".join(events)
    return f"{t['summary_header']} {prose[0].upper()}{prose[1:]}."


# ---- messages -------------------------------------------------------------------------------
def _preamble(parts: _Parts, turn: Turn) -> None:
    p: Protocol = turn.protocol
    parts.text(instructions(p.prompt, turn.maze.skin))
    _view(parts, turn.maze, p)
    if p.icl_example:
        parts.extend(icl_parts(p.observation, p.tile_size, p.switch_frames, turn.maze.skin, p.render))
    if p.start_info:
        parts.text(start_info(turn.maze))
    if p.mechanism_locations:
        parts.text(mechanism_locations(turn.maze))


def _view(parts: _Parts, maze: Maze, p: Protocol) -> None:
    """What the 3D pictures are (not at the minimal level, which names no view), and the start
    map when the protocol shows one."""
    if not (p.uses_image and p.render.is_3d):
        return
    t = texts(maze.skin)
    if p.prompt != "minimal":
        parts.text(t["view_3d"]["first_person" if CAMERAS[p.render.camera or ""].first_person else "top_down"])
    if p.render.start_map:
        from env.render3d import start_map

        parts.text(t["start_map"])
        parts.image("data:image/png;base64," + base64.b64encode(
            png_bytes(start_map(maze, p.render.resolution or "grid", p.switch_frames))).decode("ascii"))


def _current(parts: _Parts, turn: Turn) -> None:
    p: Protocol = turn.protocol
    t = texts(turn.maze.skin)
    parts.text(t["current"].format(step=turn.step, inventory=inventory(turn.maze, turn.state)))
    _observation(parts, turn.maze, turn.state, p, image=p.uses_image, text=p.uses_text)
    if p.steps_remaining:
        parts.text(t["steps_remaining"].format(n=turn.steps_remaining))
    parts.text(t["request"])


def _single(turn: Turn) -> list[dict[str, Any]]:
    p: Protocol = turn.protocol
    t = texts(turn.maze.skin)
    parts = _Parts()
    _preamble(parts, turn)
    if p.summarised:
        parts.text(event_summary(turn.maze, turn.history))
    shown = turn.history[-p.history_frames:] if p.history_frames and p.shows_recent else ()
    if shown:
        parts.text(t["history_header"])
        for past in shown:
            parts.text(t["history_step"].format(
                step=past.step, inventory=inventory(turn.maze, past.state_before),
                action=_action_name(past.action)))
            # history frames are pictures when the protocol shows pictures, text maps otherwise
            _observation(parts, turn.maze, past.state_before, p,
                         image=p.uses_image, text=not p.uses_image)
    _current(parts, turn)
    return [{"role": "user", "content": parts.done()}]


def _multi(turn: Turn, replies: Sequence[str] | None) -> list[dict[str, Any]]:
    p: Protocol = turn.protocol
    t = texts(turn.maze.skin)
    messages: list[dict[str, Any]] = []
    parts = _Parts()
    _preamble(parts, turn)
    n = len(turn.history)
    for i, past in enumerate(turn.history):
        # only the last `history_frames` past turns keep their pictures and text maps
        recent = p.shows_recent and n - i <= p.history_frames
        parts.text(t["multi_past"].format(step=past.step, inventory=inventory(turn.maze, past.state_before)))
        _observation(parts, turn.maze, past.state_before, p,
                     image=recent and p.uses_image, text=recent and p.uses_text)
        parts.text(t["request"])
        messages.append({"role": "user", "content": parts.done()})
        parts = _Parts()
        reply = replies[i] if replies is not None and i < len(replies) and replies[i].strip() else ""
        if not reply:
            reply = t["multi_reply"].format(action=_action_name(past.action))
        messages.append({"role": "assistant", "content": reply})
    if p.summarised:
        parts.text(event_summary(turn.maze, turn.history))
    _current(parts, turn)
    messages.append({"role": "user", "content": parts.done()})
    return messages


def build_messages(turn: Turn, replies: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The chat messages for one turn. ``replies``: the agent's own past replies (multi only).
    The study style's messages come from ``agents.study_prompt`` (its multi-turn chat is the
    agent's: ``build_study_messages``)."""
    if turn.protocol.style == "study":
        from agents.study_prompt import build_study_messages

        return build_study_messages(turn)
    if turn.protocol.conversation == "multi":
        return _multi(turn, replies)
    return _single(turn)


CACHE_MARKER = {"type": "ephemeral"}


def with_cache_markers(messages: list[dict[str, Any]], turn: Turn) -> list[dict[str, Any]]:
    """The messages with prompt-cache markers (``cache_control``, for a family that ``marks_cache``) where what every
    turn repeats ends: after the fixed preamble (instructions, worked example, start, object
    locations) and, in a multi-turn conversation, after the last past turn. The text is unchanged
    byte for byte: a marker can only sit on a part's end, so the part that holds the end of the
    preamble is cut in two there, its paragraph separator staying with the first half."""
    preamble = _Parts()
    _preamble(preamble, turn)
    fixed = preamble.done()
    if not fixed or not messages or not isinstance(messages[0].get("content"), list):
        return messages
    first = list(messages[0]["content"])
    k = len(fixed) - 1
    if first[:k] != fixed[:k] or len(first) <= k:
        return messages
    last, here = fixed[k], first[k]
    if last == here:
        first[k] = {**here, "cache_control": CACHE_MARKER}
    elif last["type"] == "text" and here["type"] == "text" and here["text"].startswith(last["text"] + "\n\n"):
        cut = len(last["text"]) + 2
        first[k:k + 1] = [{"type": "text", "text": here["text"][:cut], "cache_control": CACHE_MARKER},
                          {"type": "text", "text": here["text"][cut:]}]
    else:
        return messages
    out = [{**messages[0], "content": first}, *messages[1:]]
    if turn.protocol.conversation == "multi" and len(out) > 2 and out[-2]["role"] == "assistant":
        reply = out[-2]["content"]
        out[-2] = {**out[-2], "content": [{"type": "text", "text": reply, "cache_control": CACHE_MARKER}]}
    return out


def reask_messages(messages: list[dict[str, Any]], reply: str) -> list[dict[str, Any]]:
    """Ask again after an invalid reply: the same turn, the reply, and a reminder of the format."""
    return [
        *messages,
        {"role": "assistant", "content": reply.strip() or texts()["empty_reply"]},
        {"role": "user", "content": [text_part(texts()["reask"])]},
    ]


# ---- fingerprints for the trace -------------------------------------------------------------
def _short_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:HASH_CHARS]


def fingerprint(messages: list[dict[str, Any]]) -> tuple[str, list[str]]:
    """(hash of the whole prompt, hash of each image's PNG bytes in order)."""
    image_hashes: list[str] = []
    canon: list[Any] = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            canon.append([m["role"], content])
            continue
        items = []
        for part in content:
            if part["type"] == "image_url":
                b64 = part["image_url"]["url"].split(",", 1)[1]
                h = _short_hash(base64.b64decode(b64))
                image_hashes.append(h)
                items.append({"image": h})
            else:
                items.append(part)
        canon.append([m["role"], items])
    prompt_hash = _short_hash(json.dumps(canon, sort_keys=True).encode())
    return prompt_hash, image_hashes


def render_for_humans(messages: list[dict[str, Any]]) -> str:
    """The prompt as plain text, each image as ``[image <hash>]``: what the golden tests pin."""
    out = []
    for m in messages:
        out.append(f"=== {m['role']} ===")
        content = m["content"]
        if isinstance(content, str):
            out.append(content)
            continue
        for part in content:
            if part["type"] == "image_url":
                b64 = part["image_url"]["url"].split(",", 1)[1]
                out.append(f"[image {_short_hash(base64.b64decode(b64))}]")
            else:
                out.append(part["text"])
    return "\n".join(out) + "\n"


__all__ = [
    "LEVELS", "activity_events", "build_messages", "event_summary", "fingerprint",
    "frame_uri", "icl_parts", "instructions", "mechanism_locations", "reask_messages", "with_image_detail",
    "render_for_humans", "start_info", "with_cache_markers",
]
