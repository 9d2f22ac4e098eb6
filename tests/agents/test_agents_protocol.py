import json

import pytest
from pydantic import ValidationError

from agents import PRESETS, Protocol, resolve_protocol
from env.errors import BadInput


def test_final_preset_is_the_design_defaults():
    p = Protocol.preset("gridbench-final")
    assert p == Protocol()
    # the study's budget: thinking on by each provider's switch, no separate thinking budget, no
    # effort level unless a model's own fields set one, and the same output cap for every model
    assert (p.prompt, p.observation, p.history_frames, p.thinking, p.thinking_budget, p.effort) == (
        "minimal", "image", 3, True, None, None)
    assert (p.conversation, p.invalid_output, p.tile_size, p.step_cap_factor, p.stall_window) == (
        "single", "noop", 32, 3.0, 30)
    assert (p.temperature, p.max_output_tokens, p.seed, p.steps_remaining) == (None, 64000, 0, False)


def test_baseline_differs_from_final_in_prompt_and_observation_only():
    base = PRESETS["gridbench-baseline"]
    assert base.changed_fields(PRESETS["gridbench-final"]) == ["prompt", "observation"]
    assert base.mechanism_locations and base.icl_example and base.history_frames == 3
    assert base.conversation == "single"


def test_hash_is_stable_and_follows_content():
    a, b = resolve_protocol({}), resolve_protocol({"prompt": "minimal"})
    assert a.hash == b.hash and len(a.hash) == 16
    assert resolve_protocol({"thinking": False}).hash != a.hash
    assert json.loads(a.to_json())["max_output_tokens"] == 64000
    assert hash(a) == hash(b)  # usable as a dict key


def test_frozen_and_extra_forbidden():
    p = Protocol()
    with pytest.raises(ValidationError):
        p.prompt = "detailed"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Protocol(promt="minimal")  # type: ignore[call-arg]


def test_resolve_starts_from_the_named_preset():
    p = resolve_protocol({"preset": "gridbench-baseline", "thinking": False})
    assert p.changed_fields(PRESETS["gridbench-baseline"]) == ["thinking"]
    assert resolve_protocol(None) == PRESETS["gridbench-final"]
    assert resolve_protocol(p) is p


@pytest.mark.parametrize("mapping, field", [
    ({"promt": "minimal"}, "promt"),
    ({"prompt": "verbose"}, "prompt"),
    ({"history_frames": 9}, "history_frames"),
    ({"history_frames": -1}, "history_frames"),
    ({"thinking": "yes"}, "thinking"),
    ({"observation": "video"}, "observation"),
    ({"temperature": 3}, "temperature"),
    ({"effort": "extreme"}, "effort"),
    ({"thinking_budget": 10}, "thinking_budget"),
    ({"preset": "ablation"}, "preset"),
    ({"invalid_output": "retry"}, "invalid_output"),
])
def test_bad_fields_name_the_field(mapping, field):
    with pytest.raises(BadInput) as err:
        resolve_protocol(mapping, source="sweep.yaml")
    assert err.value.field == field
    line = str(err.value)
    assert line.startswith("sweep.yaml: " + field) and "\n" not in line


def test_not_a_mapping():
    with pytest.raises(BadInput):
        resolve_protocol(["prompt"])


def test_docs_describe_every_field_and_show_the_minimal_prompt():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    doc = (root / "docs" / "protocol.md").read_text()
    for name in Protocol.model_fields:
        assert f"| `{name}` |" in doc
    assert (root / "agents" / "prompts" / "minimal.txt").read_text().strip() in doc
    for preset in PRESETS.values():
        assert preset.hash in doc


def test_agents_never_import_ray():
    import subprocess
    import sys
    from pathlib import Path

    code = ("import sys, agents, agents.llm, agents.builtin, testing.scripted_server; "
            "sys.exit(1 if 'ray' in sys.modules else 0)")
    assert subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[2]).returncode == 0


def test_switch_frames_is_a_field_like_any_other():
    default, study = Protocol(), resolve_protocol({"switch_frames": "study"})
    assert default.to_dict()["switch_frames"] == "distinct" and study.hash != default.hash
    assert study.changed_fields(default) == ["switch_frames"]
    with pytest.raises(BadInput) as err:
        resolve_protocol({"switch_frames": "hidden"})
    assert err.value.field == "switch_frames"
