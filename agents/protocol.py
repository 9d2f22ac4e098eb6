"""The episode protocol (docs/design.md §5): a flat, frozen, hashable record and its presets.

Every field can be varied by a sweep condition, so every field is validated here once and the
rest of gridbench trusts the record. ``resolve_protocol`` is the one door from user input
(sweep YAML, the command line) to a ``Protocol``: it fills left-out fields from a preset and
turns any validation failure into a one-line ``BadInput`` naming the field.

Two *styles* share the record. ``gridbench`` is gridbench's own wording: prompts that describe
turning and moving only, ``ACTION: <name>`` replies read from the last line, (x, y) positions,
step numbers. ``study`` is the MultiNet 2.0 study's protocol as its harness ran it (docs/protocol.md
has its table): ``FINAL_OUTPUT: <TOKEN>`` replies read by the study's parse rules, (row, col)
positions, its text description, activity summary with a movement trail, its one-shot example,
its action spaces and querying modes, and its stall watchdog. Some fields belong to one style
only; a value the other style has no meaning for is refused when the protocol is built.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agents.constraint import Constrain
from env.errors import BadInput, pydantic_field
from env.maze import Maze
from env.render_settings import MINIGRID, RenderSettings, render_settings
from env.state import ACTIONS, SIX_ACTIONS

Observation = Literal["image", "text", "image+text"]
# effort levels across providers (each provider takes some of them: agents/providers/)
Effort = Literal["minimal", "low", "medium", "high", "xhigh", "max"]
Style = Literal["gridbench", "study"]
# fields that mean something in one style only, with the value the other style must keep
# re-asks after a reply with no action under the gridbench style's ``invalid_output: reask``
REASK_LIMIT = 2
GRIDBENCH_ONLY = {"start_info": False, "mechanism_locations": False, "steps_remaining": False}
STUDY_ONLY = {"action_space": "egocentric", "querying": "step", "actions_anywhere": False, "feedback": "none",
              "hint": "none", "requery": "plain", "moves_remaining": False, "actions": "without_drop"}
# fields added after episode ids were first published: each is left out of a protocol's JSON (and
# so of its hash and every episode id) while it holds this value, so older protocols keep their ids
LATER_FIELDS: dict[str, Any] = {"hint": "none", "requery": "plain", "moves_remaining": False,
                                 "actions": "without_drop",
                                 # the 2D frames: 3D ones came later
                                 "render": {"backend": "minigrid", "camera": None, "resolution": None,
                                            "start_map": False},
                                 "constrain": "none"}
STYLE_PROMPTS: dict[str, tuple[str, ...]] = {
    "gridbench": ("minimal", "standard", "detailed"), "study": ("minimal", "standard", "verbose"),
}


class _FieldConflict(ValueError):
    """A value that does not fit the rest of the protocol: ``field`` names it."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class Protocol(BaseModel):
    """How one episode talks to its agent. Defaults are the ``gridbench-final`` preset."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    style: Style = "gridbench"
    prompt: Literal["minimal", "standard", "detailed", "verbose"] = "minimal"
    observation: Observation = "image"
    context: Literal["current", "recent", "summary", "summary+recent"] = "summary+recent"
    history_frames: int = Field(3, ge=0, le=8)
    start_info: bool = True
    mechanism_locations: bool = True
    icl_example: bool = True
    # how much a model may think: its provider's own switch, an effort level (None: the
    # provider's default) and a separate thinking-token budget (None: none, only the output cap);
    # agents/providers/ translates them, and refuses at load what a provider cannot honour
    thinking: bool = True
    effort: Effort | None = None
    thinking_budget: int | None = Field(None, ge=1024, le=1_000_000)
    steps_remaining: bool = False
    conversation: Literal["single", "multi"] = "single"
    # the study style's step outcome in the text record: none; the bare event word (minimal, the
    # study's revised harness); the event and what changed (outcome: the revised harness's
    # standard); that plus cause and remedy (hints: its causal level, and R1's baseline feedback)
    feedback: Literal["none", "minimal", "outcome", "hints"] = "none"
    action_space: Literal["egocentric", "cardinal"] = "egocentric"
    querying: Literal["step", "subgoal", "trajectory"] = "step"
    invalid_output: Literal["noop", "reask", "requery"] = "noop"
    requery_limit: int = Field(3, ge=1, le=20)
    actions_anywhere: bool = False
    tile_size: int = Field(32, ge=8, le=128)
    step_cap_factor: float = Field(3.0, gt=0, le=100)
    stall_window: int | None = Field(30, ge=1, le=100_000)
    temperature: float | None = Field(None, ge=0, le=2)  # None: not sent, the provider's own default
    max_output_tokens: int = Field(64000, ge=1, le=1_000_000)
    seed: int = Field(0, ge=0, le=2**31 - 1)
    # how frames draw switches: on and off apart, or the same, as the study's R1 frames showed them
    switch_frames: Literal["distinct", "study"] = "distinct"
    # the study's revised harness and its probes (study style; docs/protocol.md, "The revised
    # harness"): a line appended to the minimal system prompt, the re-ask after an unparseable
    # reply sent byte for byte (plain, R1) or with one corrective line, a moves-remaining line in
    # observations with text
    hint: Literal["none", "switch", "state_change", "interaction_rules", "interaction_rules_stand"] = "none"
    requery: Literal["plain", "corrective"] = "plain"
    moves_remaining: bool = False
    # the actions offered: the six of R1, or those and DROP, the seventh of the revised harness
    # (env.state.DROP); the oracle searches with a DROP edge exactly when it is offered
    actions: Literal["without_drop", "with_drop"] = "without_drop"
    # which frames the model sees: the 2D grid (the default, a later field: left out of the
    # canonical JSON so every protocol hash and episode id from before 3D frames stays), or 3D
    render: RenderSettings = MINIGRID
    # constrained decoding (agents/constraint.py): no constraint, the answer line alone, or free
    # text then the answer line; sent by the engine's own mechanism and refused at load where the
    # model's provider has none (agents/providers/)
    constrain: Constrain = "none"

    @model_validator(mode="after")
    def _style_fields(self) -> Protocol:
        if self.prompt not in STYLE_PROMPTS[self.style]:
            raise _FieldConflict("prompt", f"{self.prompt!r} is not a prompt level of the {self.style} style "
                                           f"({', '.join(STYLE_PROMPTS[self.style])})")
        foreign = GRIDBENCH_ONLY if self.style == "study" else STUDY_ONLY
        for name, keep in foreign.items():
            if getattr(self, name) != keep:
                raise _FieldConflict(name, f"the {self.style} style has no such setting: it must stay {json.dumps(keep)}")
        if self.hint != "none" and self.prompt != "minimal":
            raise _FieldConflict("hint", "the study's probes append their line to the minimal prompt only")
        if self.moves_remaining and not self.uses_text:
            raise _FieldConflict("moves_remaining", "the line belongs to observations with text (image+text, text)")
        if self.requery != "plain" and self.invalid_output != "requery":
            raise _FieldConflict("requery", "says how a re-query is worded: it takes invalid_output: requery")
        if self.actions_anywhere and self.querying == "step":
            raise _FieldConflict("actions_anywhere", "the study's defect concerns subgoal and trajectory querying only")
        if self.constrain != "none" and self.querying != "step":
            raise _FieldConflict("constrain", "constrains a reply to one action: it takes querying: step only")
        return self

    # ---- identity ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Every field, but a later field (``LATER_FIELDS``) only when it differs from its default,
        so that protocols from before it existed keep their text, hash and episode ids."""
        out = self.model_dump(mode="json")
        for name, default in LATER_FIELDS.items():
            if out[name] == default:
                del out[name]
        return out

    def to_json(self) -> str:
        """Canonical JSON: sorted keys, no spaces; the same protocol is always the same text."""
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @property
    def hash(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]

    def changed_fields(self, other: Protocol) -> list[str]:
        """Names of the fields whose values differ from ``other``'s, in declaration order."""
        mine, theirs = self.model_dump(), other.model_dump()
        return [k for k in mine if mine[k] != theirs[k]]

    @property
    def drop(self) -> bool:
        """Is DROP offered (``actions: with_drop``)?"""
        return self.actions == "with_drop"

    @property
    def offered(self) -> tuple[int, ...]:
        """The action indices (``env.state.ACTIONS``) an agent may take under this protocol."""
        return tuple(range(len(ACTIONS) if self.drop else len(SIX_ACTIONS)))

    @property
    def calls_per_turn(self) -> int:
        """The most model calls one turn can make: the first, and each re-ask (the gridbench
        style's ``reask``: ``REASK_LIMIT``) or re-query (``requery``: up to ``requery_limit`` calls
        in all) after a reply with no action. Both policies loop to exactly this; the cost bound,
        the calibration's projection and the dry run multiply the step cap by it."""
        if self.invalid_output == "requery":
            return self.requery_limit
        if self.invalid_output == "reask" and self.style == "gridbench":
            return 1 + REASK_LIMIT
        return 1  # noop, and the study style's reask, which its harness never had: a no-op step

    @property
    def uses_image(self) -> bool:
        return self.observation in ("image", "image+text")

    @property
    def uses_text(self) -> bool:
        return self.observation in ("text", "image+text")

    @property
    def summarised(self) -> bool:
        """Each turn carries the activity summary."""
        return self.context in ("summary", "summary+recent")

    @property
    def shows_recent(self) -> bool:
        """Each turn shows the last ``history_frames`` steps."""
        return self.context in ("recent", "summary+recent")

    @classmethod
    def preset(cls, name: str) -> Protocol:
        return PRESETS[_preset_name("protocol", name)]


# The study's ablation baseline, as its harness ran it (docs/protocol.md, "The study's protocol"):
# the standard prompt, image and its text description, the last 3 steps, the one-shot example,
# one stateless message per query, an unparseable reply asked again without a step (3 in a row
# end the episode), no stall watchdog, the 4,096-token cap of its ten protocol cells.
_STUDY_BASELINE = Protocol(
    style="study", prompt="standard", observation="image+text", context="recent", history_frames=3,
    start_info=False, mechanism_locations=False, icl_example=True, feedback="hints", invalid_output="requery",
    requery_limit=3, stall_window=None, max_output_tokens=4096,
)

PRESETS: dict[str, Protocol] = {
    # the study's final run (R1): the minimal prompt, image only, its start pose and activity summary
    # with the last 3 steps, zero-shot, the stall watchdog at 30, a 64,000-token cap
    "study-final": Protocol(**{**_STUDY_BASELINE.to_dict(), "prompt": "minimal", "observation": "image",
                               "context": "summary+recent", "icl_example": False, "stall_window": 30,
                               "max_output_tokens": 64000}),
    "study-baseline": _STUDY_BASELINE,
    # gridbench's own protocol: neutral prompts that say what turning and moving do and nothing
    # else, the worked example, object locations, (x, y) positions and step numbers
    "gridbench-final": Protocol(),
    "gridbench-baseline": Protocol(prompt="standard", observation="image+text"),
}
DEFAULT_PRESET = "gridbench-final"
RENAMED_PRESETS = {"final": "gridbench-final or study-final", "baseline": "gridbench-baseline or study-baseline"}


def resolve_protocol(mapping: Any, source: str = "protocol") -> Protocol:
    """A ``Protocol`` from a mapping of protocol fields (docs/design.md §5); left-out fields come
    from a preset.

    ``preset: <name>`` starts from that preset (``PRESETS``), none from ``gridbench-final``.
    Unknown fields and bad values raise ``BadInput`` naming the field.
    """
    if isinstance(mapping, Protocol):
        return mapping
    if mapping is None:
        mapping = {}
    if not isinstance(mapping, dict):
        raise BadInput(source, "", f"a protocol is a mapping of fields, got {type(mapping).__name__}")
    fields = dict(mapping)
    base = PRESETS[_preset_name(source, fields.pop("preset", DEFAULT_PRESET))].model_dump(mode="json")
    unknown = [k for k in fields if k not in base]
    if unknown:
        raise BadInput(
            source, str(unknown[0]),
            f"unknown protocol field (known: preset, {', '.join(Protocol.model_fields)})",
        )
    if "render" in fields:
        fields["render"] = render_settings(fields["render"], source, "render.")
    try:
        return Protocol(**{**base, **fields})
    except ValidationError as err:
        first = err.errors()[0]
        conflict = first.get("ctx", {}).get("error")
        if isinstance(conflict, _FieldConflict):
            raise BadInput(source, conflict.field, str(conflict)) from None
        field = pydantic_field(first["loc"])
        given = fields.get(field, base.get(field))
        raise BadInput(source, field, f"{first['msg']} (got {given!r})") from None


def projected(protocol: Protocol, maze: Maze, source: str = "variants") -> Protocol:
    """The protocol a maze is shown with: ``protocol`` itself, or for a projection twin
    (``env.variants.projection``) the protocol with the twin's ``observation`` and ``render`` set
    (docs/variants.md#projection-twins). A protocol the projection cannot be laid over (a field
    that needs the text, on a projection without it) is one ``BadInput`` naming the field."""
    from env.variants import projection_of

    shown = projection_of(maze)
    if shown is None:
        return protocol
    fields = {**protocol.to_dict(), "observation": shown["observation"], "render": shown["render"]}
    try:
        return resolve_protocol(fields, source)
    except BadInput as err:
        raise BadInput(source, f"projection-{shown['projection']}",
                       f"cannot show this protocol's maze that way: {err.field}: {err.message}") from None


def _preset_name(source: str, name: Any) -> str:
    if isinstance(name, str) and name in PRESETS:
        return name
    hint = f"; renamed: use {RENAMED_PRESETS[name]}" if name in RENAMED_PRESETS else ""
    raise BadInput(source, "preset", f"unknown preset {name!r} (known: {', '.join(PRESETS)}){hint}")
