"""The study style's messages (``Protocol.style == "study"``): the MultiNet 2.0 harness's message
layout, in gridbench's own words (``agents/prompts/study.yaml``).

Each query is a system message (the prompt level, and for text observations the maze as it
starts) and one user message, in this order: the one-shot example; the activity summary (start
pose, mechanism events, the movement trail since the last one); the recent steps, each with the
frame it was decided on, the inventory and the reply's action, and in text observations a text
record of them with each step's outcome; then the current frame, its text description or
inventory, the question and the reply format. With ``conversation: multi`` the chat is the
history: the last ``history_frames`` queries travel as user/assistant pairs, each past reply
rewritten to its parsed form, and the example rides on the current turn only.

docs/protocol.md ("The study's protocol") gives the source of every piece.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

import yaml

from agents.actions import token_of, tokens_of
from agents.parse import SENTINEL
from agents.prompt import PROMPTS_DIR, frame_uri, image_part, text_part, worded
from agents.protocol import Protocol
from agents.types import PastQuery, PastStep, Turn
from env.maze import CLASSIC, MULTINET_PR57, Maze
from env.mechanics import of_kind
from env.skins import skin_of, with_skin
from env.state import (
    DONE,
    DROP,
    FORWARD,
    LEFT,
    PICKUP,
    RIGHT,
    TOGGLE,
    MazeState,
    ahead,
    dead,
    r1_landing,
)

FACINGS = ("EAST", "SOUTH", "WEST", "NORTH")  # env.maze.DIRECTIONS order


@cache
def texts(skin: str = CLASSIC) -> dict[str, Any]:
    return worded(yaml.safe_load((PROMPTS_DIR / "study.yaml").read_text()), skin)


def rc(pos: tuple[int, int]) -> str:
    """A cell as the study writes it: (row, col), the outer wall being row 0 and col 0."""
    x, y = pos
    return f"({y}, {x})"


def inventory_word(maze: Maze, state: MazeState) -> str:
    return maze.keys[state.carrying].color if state.carrying >= 0 else texts(maze.skin)["inventory_empty"]


# ---- the maze as text ------------------------------------------------------------------------
def object_lines(maze: Maze, state: MazeState) -> list[str]:
    """One line per key on the floor, door, switch and gate, with its state in ``state``."""
    t = texts(maze.skin)["objects"]
    skin = skin_of(maze)
    lines = [t["key"].format(color=k.color, pos=rc(p)) for k, p in zip(maze.keys, state.keys, strict=True)
             if p is not None]
    lines += [t["door"].format(pos=rc(d.pos), status=skin.door_state(s), requires=d.color)
              for d, s in zip(maze.doors, state.doors, strict=True)]
    for s, on in zip(maze.switches, state.switches, strict=True):
        kind = s.switch_type
        state_word = skin.switch_state(on)
        lines.append(t["switch"].format(switch_type=kind, pos=rc(s.pos), state=state_word, controls=", ".join(s.controls))
                     if s.controls else t["switch_no_controls"].format(switch_type=kind, pos=rc(s.pos), state=state_word))
    start = _start(maze)
    for g, now, then in zip(maze.gates, maze.gates_open(state.switches), maze.gates_open(start.switches), strict=True):
        lines.append(t["gate"].format(gate_id=g.id, pos=rc(g.pos), state=skin.gate_state(now),
                                      initial=skin.gate_state(then)))
    if maze.ruleset == MULTINET_PR57:
        lines += _later_tile_lines(maze, state)
    return lines


def _later_tile_lines(maze: Maze, state: MazeState) -> list[str]:
    """multinet-pr57's tiles, each as its mechanic words it (``Mechanic.study_lines``), in the
    file's order: cells as the study writes them, a facing in its words."""
    lines = []
    for o in maze.objects:
        said = of_kind(o.kind).study_lines
        for template, fields in (said(maze, state, o) if said is not None else ()):
            shown = {k: rc(v) if isinstance(v, tuple) else FACINGS[v] if k == "facing" else v for k, v in fields.items()}
            lines.append(worded(template, maze.skin).format(**shown))
    return lines


@cache
def _start(maze: Maze) -> MazeState:
    from env.state import initial_state

    return initial_state(maze)


def initial_maze_text(maze: Maze) -> str:
    """The maze as it starts: size, coordinates, start, goal, every wall inside the ring, objects."""
    t = texts(maze.skin)
    lay = t["layout"]
    walls = [(x, y) for y in range(1, maze.height - 1) for x in range(1, maze.width - 1) if maze.walls[x, y]]
    walls.sort(key=lambda p: (p[1], p[0]))  # by row, then column, as (row, col) pairs sort
    lines = [
        lay["size"].format(rows=maze.height - 2, cols=maze.width - 2),
        lay["coordinates"],
        lay["start"].format(start=rc(maze.start.pos)),
        lay["goal"].format(goal=rc(maze.goal)),
        lay["walls"].format(walls=", ".join(rc(p) for p in walls) or lay["no_walls"]),
        *object_lines(maze, _start(maze)),
    ]
    return t["initial_maze"].format(layout="\n".join(lines))


def current_text(maze: Maze, state: MazeState) -> str:
    t = texts(maze.skin)
    objects = object_lines(maze, state)
    return "\n".join([
        t["position"].format(pos=rc(state.pos), facing=FACINGS[state.dir]),
        t["inventory"].format(inventory=inventory_word(maze, state)),
        "",
        t["objects_now"],
        *(objects or [t["objects_none"]]),
    ])


# ---- the activity summary --------------------------------------------------------------------
def summary_events(maze: Maze, history: Sequence[PastStep]) -> list[tuple[int, str]]:
    """(index into ``history``, phrase) of each mechanism event the study reported, in order: a
    key taken, a door opened, a gate that a toggle opened or closed (never a switch by name), and
    with DROP offered a key put down (R1 had no DROP event). Of several at one step, the object
    whose id sorts first."""
    ev = texts(maze.skin)["summary_events"]
    out: list[tuple[int, str]] = []
    for i, past in enumerate(history):
        before, after = past.state_before, past.state_after
        opened = sorted((d for d, was, now in zip(maze.doors, before.doors, after.doors, strict=True)
                         if now == 0 != was), key=lambda d: d.id)
        if maze.ruleset == MULTINET_PR57 and past.event in ("teleported", "died", "froze"):
            out.append((i, _fired(maze, past, ev)))
        elif opened:
            out.append((i, ev["door"].format(color=opened[0].color)))
        elif past.action == PICKUP and after.carrying >= 0 and after.carrying != before.carrying:
            out.append((i, ev["pickup"].format(color=maze.keys[after.carrying].color)))
        elif past.event == "drop":
            out.append((i, ev["drop"].format(color=maze.keys[before.carrying].color,
                                             pos=rc(after.keys[before.carrying] or after.pos))))
        elif past.action == TOGGLE:
            gates = list(zip(maze.gates, maze.gates_open(before.switches), maze.gates_open(after.switches),
                             strict=True))
            newly = sorted((g for g, was, now in gates if now and not was), key=lambda g: g.id)
            shut = sorted((g for g, was, now in gates if was and not now), key=lambda g: g.id)
            if newly:
                out.append((i, ev["gate_opened"].format(color=newly[0].color)))
            elif shut:
                out.append((i, ev["gate_closed"].format(color=shut[0].color)))
    return out


def _fired(maze: Maze, past: PastStep, phrases: dict[str, str], kind: str = "") -> str:
    """A multinet-pr57 mechanism that fired at ``past``, as the summary (or, with the event class
    word ``kind``, the step's feedback) says it."""
    before, after = past.state_before, past.state_after
    if past.event == "teleported":
        color = getattr(maze.object_on(after.pos), "color", "")
        return phrases["teleported"].format(kind=kind, color=color, pos=rc(after.pos))
    if past.event == "died":
        cell = rc(r1_landing(maze, ahead(maze, before)))
        name = "died_over" if kind and dead(maze, after) else "died"
        return phrases[name].format(kind=kind, cell=cell, pos=rc(after.pos) if kind else cell)
    if past.event == "froze":
        return phrases["froze"].format(kind=kind, pos=rc(after.pos), n=maze.rulebook.freeze_steps)
    return phrases["frozen"].format(kind=kind, pos=rc(after.pos), n=after.frozen)


def waypoints(cells: Sequence[tuple[int, int]], count: int = 3) -> list[tuple[int, int]]:
    """Up to ``count`` cells of a trail: all of a short one; else the first, middle and last
    (Python's rounding), each cell once."""
    n = len(cells)
    if n <= count:
        return list(cells)
    picked: list[tuple[int, int]] = []
    for i in (round(j * (n - 1) / (count - 1)) for j in range(count)):
        if cells[i] not in picked:
            picked.append(cells[i])
    return picked


def route_summary(maze: Maze, history: Sequence[PastStep]) -> str:
    """The activity summary of the study style, as its harness wrote it: the start cell and
    facing, the mechanism events in order, then up to three waypoints of the route walked since
    the last event. The classic styles' is ``agents.prompt.event_summary`` (the events alone)."""
    t = texts(maze.skin)
    events = summary_events(maze, history)
    parts = [phrase for _, phrase in events]
    since = events[-1][0] + 1 if events else 0
    trail = [p.state_after.pos for p in history[since:] if p.event == "moved"]
    picked = waypoints(trail)
    ev = t["summary_events"]
    parts += [ev["passed" if i == len(picked) - 1 else "waypoint"].format(pos=rc(p)) for i, p in enumerate(picked)]
    start = t["summary_start"].format(pos=rc(maze.start.pos), facing=FACINGS[maze.start_dir])
    if not parts:
        return f"{start}\n{t['summary_none']}"
    chain = t["summary_chain"]
    if len(parts) == 1:
        body = chain["first"].format(event=parts[0])
    else:
        body = ", ".join([chain["first"].format(event=parts[0]),
                          *(chain["then"].format(event=p) for p in parts[1:-1]),
                          chain["last"].format(event=parts[-1])])
    return f"{start}\n{t['summary_header']}\n{body[0].upper()}{body[1:]}."


# ---- the outcome of a step -------------------------------------------------------------------
def step_outcome(maze: Maze, past: PastStep, level: str) -> str:
    """What the study's text record said a step did, at a ``feedback`` level: ``minimal`` its event
    class alone, ``outcome`` that and what changed, ``hints`` also the study's advice on how to go
    on. Classified as the study's harness did: a door that opened first, then by the action taken."""
    t = texts(maze.skin)
    f, h = t["feedback"], t["hints"]
    before, after, action = past.state_before, past.state_after, past.action
    here, front = rc(before.pos), before.front()
    opened = sorted((d for d, was, now in zip(maze.doors, before.doors, after.doors, strict=True)
                     if now == 0 != was), key=lambda d: d.id)
    advice = ""
    if maze.ruleset == MULTINET_PR57 and past.event in ("teleported", "died", "froze", "frozen"):
        line = _fired(maze, past, f, kind=past.event.upper())
    elif opened:
        line = f["opened"].format(kind="OPENED", color=opened[0].color, door_id=opened[0].id)
    elif action in (LEFT, RIGHT):
        line = f["turned"].format(kind="TURNED", facing=FACINGS[after.dir])
    elif action == FORWARD and after.pos != before.pos:
        line = f["moved"].format(kind="MOVED", pos=rc(after.pos))
    elif action == FORWARD:
        key = next((k for k, p in zip(maze.keys, before.keys, strict=True) if p == front), None)
        gate = next((i for i, g in enumerate(maze.gates) if g.pos == front), None)
        if key is not None:
            line = f["blocked_key"].format(kind="BLOCKED", color=key.color, front=rc(front), pos=here)
            advice = h["blocked_key"]
        elif gate is not None and not maze.gates_open(before.switches)[gate]:
            line = f["blocked_gate"].format(kind="BLOCKED", gate_id=maze.gates[gate].id, front=rc(front), pos=here)
            linked = _switches_of(maze, gate)
            advice = h["blocked_gate"].format(switches=linked) if linked else ""
        else:
            line = f["blocked"].format(kind="BLOCKED", pos=here)
    elif action == PICKUP:
        took = after.carrying >= 0 and after.carrying != before.carrying
        line = (f["pickup"].format(kind="PICKUP", color=maze.keys[after.carrying].color) if took
                else f["no_pickup"].format(kind="NOTHING", pos=here))
    elif action == DROP:
        line = (f["dropped"].format(kind="DROPPED", color=maze.keys[before.carrying].color,
                                    pos=rc(after.keys[before.carrying] or after.pos))
                if past.event == "drop" else f["no_drop"].format(kind="NOTHING", pos=here))
    elif action == TOGGLE and (after.switches != before.switches
                               or maze.gates_open(after.switches) != maze.gates_open(before.switches)):
        line = f["toggled"].format(kind="TOGGLED")
    elif action == TOGGLE:
        line = f["no_toggle"].format(kind="NOTHING", pos=here)
        gate = next((i for i, g in enumerate(maze.gates) if g.pos == front), None)
        if any(s.pos == front for s in maze.switches) and not any(s.pos == before.pos for s in maze.switches):
            advice = h["switch_ahead"].format(front=rc(front))
        elif gate is not None and not maze.gates_open(before.switches)[gate]:
            linked = _switches_of(maze, gate)
            advice = h["gate_ahead"].format(switches=linked) if linked else h["gate_ahead_unlinked"]
        else:
            advice = h["toggle_elsewhere"]
    elif action == DONE:
        line = f["wrong_done"].format(kind="WRONG DONE", goal=rc(maze.goal), pos=here)
    else:  # a reply with no action, taken as a step that changes nothing (invalid_output: noop)
        line = f["no_toggle"].format(kind="NOTHING", pos=here)
    if level == "minimal":  # every outcome line opens with its event class and a colon
        return line.partition(":")[0]
    return f"{line}; {advice}" if level == "hints" and advice else line


def _switches_of(maze: Maze, gate: int) -> str:
    return ", ".join(maze.switches[i].id for i in maze.gate_switches[gate])


# ---- messages --------------------------------------------------------------------------------
def system_message(maze: Maze, protocol: Protocol) -> dict[str, Any]:
    t = texts(maze.skin)
    text = t["levels"][protocol.prompt].format(tokens=", ".join(tokens_of(protocol.action_space, protocol.drop)))
    if protocol.drop and protocol.prompt == "verbose":  # the rules block gains DROP's rule
        text += "\n" + t["drop_rule"]
    if protocol.hint != "none":
        text += "\n" + t["hint"][protocol.hint]
    if protocol.uses_text:
        text += "\n\n" + initial_maze_text(maze)
    return {"role": "system", "content": text}


def one_shot_parts(protocol: Protocol, skin: str = CLASSIC) -> list[dict[str, Any]]:
    """The study's one-shot example: its maze (a picture, or its text for text observations) and
    the action list that the study gave as its solution, drawn and named in ``skin``."""
    from agents.study_example import example

    t = texts(skin)
    maze, actions = example()
    maze = with_skin(maze, skin)
    solution = t["one_shot_actions"].format(actions=", ".join(actions))
    if not protocol.uses_image:
        return [text_part(f"{t['one_shot_intro']}\n{initial_maze_text(maze)}\n{solution}")]
    return [text_part(t["one_shot_intro"]), image_part(frame_uri(maze, _start(maze), protocol.tile_size, protocol.switch_frames, protocol.render)),
            text_part(solution)]


def _token(past: PastStep) -> str:
    """The action of a past step as the reply named it (agents that give no token: its own)."""
    if past.token is not None:
        return past.token
    return token_of(past.action) if past.action is not None else texts()["multi_no_action"]


def _recent(history: Sequence[PastStep], protocol: Protocol) -> Sequence[PastStep]:
    if not protocol.shows_recent or not protocol.history_frames:
        return ()
    return history[-protocol.history_frames:]


def _recent_image_parts(maze: Maze, shown: Sequence[PastStep], protocol: Protocol) -> list[dict[str, Any]]:
    t = texts(maze.skin)
    parts: list[dict[str, Any]] = [text_part(t["recent_header"])]
    for past in shown:
        parts.append(image_part(frame_uri(maze, past.state_before, protocol.tile_size, protocol.switch_frames, protocol.render)))
        parts.append(text_part(t["recent_step"].format(inventory=inventory_word(maze, past.state_before),
                                                       sentinel=SENTINEL, token=_token(past))))
    return parts


def _recent_text(maze: Maze, shown: Sequence[PastStep], protocol: Protocol) -> str:
    t = texts(maze.skin)
    lines = [t["recent_text_header"].format(n=len(shown))]
    for past in shown:
        where = {"pos": rc(past.state_after.pos), "facing": FACINGS[past.state_after.dir], "sentinel": SENTINEL,
                 "token": _token(past)}
        if protocol.feedback == "none":
            lines.append(t["recent_text_step"].format(**where))
        else:
            lines.append(t["recent_text_feedback"].format(
                **where, feedback=step_outcome(maze, past, protocol.feedback)))
    return "\n".join(lines)


def _query_parts(maze: Maze, state: MazeState, protocol: Protocol, moves_left: int) -> list[dict[str, Any]]:
    """The current observation, the question and the reply format: one query's own part."""
    t = texts(maze.skin)
    parts: list[dict[str, Any]] = []
    if protocol.uses_image:
        parts.append(image_part(frame_uri(maze, state, protocol.tile_size, protocol.switch_frames, protocol.render)))
    described = current_text(maze, state) if protocol.uses_text else t["inventory"].format(
        inventory=inventory_word(maze, state))
    if protocol.moves_remaining:
        described += "\n" + t["moves_remaining"].format(n=moves_left)
    closing = [t["question"][protocol.querying], t["instruction"][protocol.querying].format(sentinel=SENTINEL)]
    if protocol.observation == "image+text":
        closing.append(t["reminder"].format(sentinel=SENTINEL))
    parts.append(text_part("\n\n".join([described, *closing])))
    return parts


def user_content(turn: Turn, *, example: bool = True, context: bool = True) -> list[dict[str, Any]]:
    """The user message of one query; ``example`` and ``context`` off give the lean turns that a
    multi-turn chat keeps as history."""
    p, maze = turn.protocol, turn.maze
    parts: list[dict[str, Any]] = []
    if example and p.icl_example:
        parts += one_shot_parts(p, maze.skin)
    shown = _recent(turn.history, p) if context else ()
    summary = route_summary(maze, turn.history) if context and p.summarised else ""
    if summary and p.uses_image:
        parts.append(text_part(summary))
    if shown and p.uses_image:
        parts += _recent_image_parts(maze, shown, p)
    record = [summary] if summary and not p.uses_image else []
    if shown and p.uses_text:
        record.append(_recent_text(maze, shown, p))
    if record:
        parts.append(text_part("\n\n".join(record)))
    return parts + _query_parts(maze, turn.state, p, turn.steps_remaining)


def build_study_messages(turn: Turn, chat: Sequence[PastQuery] = ()) -> list[dict[str, Any]]:
    """The messages of one query. ``chat``: the agent's past queries, each with the state it was
    asked in and its reply in parsed form (``conversation: multi`` only)."""
    p = turn.protocol
    system = system_message(turn.maze, p)
    if p.conversation != "multi":
        return [system, {"role": "user", "content": user_content(turn)}]
    messages = [system]
    for past in chat[-p.history_frames:] if p.history_frames else ():
        lean = Turn(turn.maze, p, past.step or turn.step, past.state, (), turn.step_cap)
        messages.append({"role": "user", "content": user_content(lean, example=False, context=False)})
        messages.append({"role": "assistant", "content": past.reply or texts(turn.maze.skin)["multi_no_action"]})
    messages.append({"role": "user", "content": user_content(turn, context=False)})
    return messages


def corrective_requery(messages: list[dict[str, Any]], protocol: Protocol, skin: str = CLASSIC) -> list[dict[str, Any]]:
    """A re-query after a reply with no action under ``requery: corrective``: the same messages,
    the last user message ending with one more line that says the reply could not be read and
    asks for the answer line alone (the study's revised harness; R1 re-asked byte for byte)."""
    line = texts(skin)["requery_corrective"].format(sentinel=SENTINEL, tokens=", ".join(tokens_of(protocol.action_space, protocol.drop)))
    out = list(messages)
    last = out[-1]
    out[-1] = {**last, "content": [*last["content"], text_part(line)]}
    return out


CACHE_MARKER = {"type": "ephemeral"}


def study_cache_markers(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Prompt-cache markers (``cache_control``, for a family that ``marks_cache``) where the study's client put its two:
    the end of the system message and the last block of the request. Text and images unchanged."""
    out = [dict(m) for m in messages]
    system = out[0]
    if system["role"] == "system" and isinstance(system["content"], str):
        system["content"] = [{**text_part(system["content"]), "cache_control": CACHE_MARKER}]
    last = out[-1]
    if isinstance(last["content"], list) and last["content"]:
        content = list(last["content"])
        content[-1] = {**content[-1], "cache_control": CACHE_MARKER}
        last["content"] = content
    return out
