"""The episode protocol (docs/design.md §5): a flat, frozen, hashable record and its presets.

Every field can be varied by a sweep condition, so every field is validated here once and the
rest of gridbench trusts the record. ``resolve_protocol`` is the one door from user input
(sweep YAML, the command line) to a ``Protocol``: it fills left-out fields from a preset and
turns any validation failure into a one-line ``BadInput`` naming the field.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from env.errors import BadInput, pydantic_field

Observation = Literal["image", "text", "image+text"]


class Protocol(BaseModel):
    """How one episode talks to its agent. Defaults are the ``final`` preset."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    prompt: Literal["minimal", "standard", "detailed"] = "minimal"
    observation: Observation = "image"
    history_frames: int = Field(3, ge=0, le=8)
    activity_summary: bool = True
    start_info: bool = True
    mechanism_locations: bool = True
    icl_example: bool = True
    thinking: bool = True
    thinking_budget: int = Field(64000, ge=1024, le=1_000_000)
    steps_remaining: bool = False
    conversation: Literal["single", "multi"] = "single"
    invalid_output: Literal["noop", "reask"] = "noop"
    tile_size: int = Field(32, ge=8, le=128)
    step_cap_factor: float = Field(3.0, gt=0, le=100)
    stall_window: int = Field(30, ge=1, le=100_000)
    temperature: float = Field(1.0, ge=0, le=2)
    max_output_tokens: int = Field(70000, ge=1, le=1_000_000)
    seed: int = Field(0, ge=0, le=2**31 - 1)
    # how frames draw switches: on and off apart, or the same, as the study's R1 frames showed them
    switch_frames: Literal["distinct", "study"] = "distinct"

    # ---- identity ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Every field; ``switch_frames`` only when it is not ``distinct``, so that protocols from
        before the field existed keep their text, hash and episode ids."""
        d = self.model_dump(mode="json")
        if d["switch_frames"] == "distinct":
            del d["switch_frames"]
        return d

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
    def uses_image(self) -> bool:
        return self.observation in ("image", "image+text")

    @property
    def uses_text(self) -> bool:
        return self.observation in ("text", "image+text")

    @classmethod
    def preset(cls, name: str) -> Protocol:
        if name not in PRESETS:
            raise BadInput("protocol", "preset", f"unknown preset {name!r} (known: {', '.join(PRESETS)})")
        return PRESETS[name]


PRESETS: dict[str, Protocol] = {
    # the study's final protocol: thinking on (64k budget), minimal prompt, image only
    "final": Protocol(),
    # the study's ablation baseline: every condition of the ablation changes one field of it
    "baseline": Protocol(
        prompt="standard",
        observation="image+text",
        mechanism_locations=True,
        icl_example=True,
        history_frames=3,
        conversation="single",
    ),
}


def resolve_protocol(mapping: Any, source: str = "protocol") -> Protocol:
    """A ``Protocol`` from a mapping of protocol fields (docs/design.md §5); left-out fields come
    from a preset.

    ``preset: baseline`` starts from the ablation baseline, anything else from ``final``.
    Unknown fields and bad values raise ``BadInput`` naming the field.
    """
    if isinstance(mapping, Protocol):
        return mapping
    if mapping is None:
        mapping = {}
    if not isinstance(mapping, dict):
        raise BadInput(source, "", f"a protocol is a mapping of fields, got {type(mapping).__name__}")
    fields = dict(mapping)
    preset_name = fields.pop("preset", "final")
    if not isinstance(preset_name, str) or preset_name not in PRESETS:
        raise BadInput(source, "preset", f"unknown preset {preset_name!r} (known: {', '.join(PRESETS)})")
    base = PRESETS[preset_name].model_dump(mode="json")
    unknown = [k for k in fields if k not in base]
    if unknown:
        raise BadInput(
            source, str(unknown[0]),
            f"unknown protocol field (known: preset, {', '.join(base)})",
        )
    try:
        return Protocol(**{**base, **fields})
    except ValidationError as err:
        first = err.errors()[0]
        field = pydantic_field(first["loc"])
        given = fields.get(field, base.get(field))
        raise BadInput(source, field, f"{first['msg']} (got {given!r})") from None
