"""Gemini, the provider added as one adapter (docs/providers.md, *Adding a provider*): a sweep's
dry run shows its arms' request fields, tiers and prices on the standard and batch tiers, and
refuses at load what Gemini would refuse."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from env.errors import BadInput
from orchestrator.sweep import parse_sweep

ROOT = Path(__file__).resolve().parents[2]


def test_the_dry_run_shows_a_gemini_arm_on_each_tier_with_its_fields_and_price(tmp_path):
    sweep = tmp_path / "gemini.yaml"
    sweep.write_text(yaml.safe_dump({
        "name": "gemini", "mazes": ["example"],
        "protocol": {"observation": "image+text", "effort": "high", "max_output_tokens": 8000},
        "models": [
            {"name": "argon", "model": "gemini/gemini-4-argon", "params": {"image_detail": "low"}},
            {"name": "argon-batch", "model": "gemini/gemini-4-argon", "tier": "batch"},
            {"name": "flash-batch", "model": "gemini/gemini-3.8-flash", "tier": "batch"},
        ]}))
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(sweep), "--dry-run", "--json",
                        "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    requests = {q["model"]: q for q in out["requests"]}
    assert {q["family"] for q in requests.values()} == {"gemini-3"}
    for q in requests.values():
        assert q["fields"] == {"max_tokens": 8000, "reasoning_effort": "high", "seed": 0}
    assert requests["argon"]["image_detail"] == "low"
    costs = {e["name"]: e for e in out["estimate"]}
    # Gemini 4 Argon at Google's list price from December 2026, not litellm's launch-price row
    assert costs["argon"]["price"] == {"input": 4e-6, "output": 2e-5, "cached_input": 2e-7}
    assert costs["argon"]["price_source"].startswith("list price")
    assert costs["argon-batch"]["tier"] == "batch"
    assert costs["argon-batch"]["cost_max"] == pytest.approx(costs["argon"]["cost_max"] / 2)
    assert costs["flash-batch"]["price_source"] == "litellm table"
    assert costs["flash-batch"]["cost_max"] == pytest.approx(costs["flash-batch"]["cost_max_standard"] / 2)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("model, protocol, field, words", [
    ("gemini/gemini-3.8-flash", {"effort": "minimal"}, "effort", "takes the effort levels low, medium, high"),
    ("gemini/gemini-4-argon", {}, "effort", "set effort explicitly"),
    ("gemini/gemini-4-argon", {"effort": "low", "thinking": False}, "thinking", "always thinks"),
    ("gemini/gemini-3.6-flash", {"effort": "low", "thinking_budget": 2048}, "thinking_budget", "no thinking-token budget"),
    ("gemini/gemini-3.6-flash", {"effort": "low", "temperature": 0.2}, "temperature", "takes no temperature"),
])
def test_loading_refuses_what_gemini_refuses(model, protocol, field, words):
    with pytest.raises(BadInput) as err:
        parse_sweep({"name": "g", "mazes": ["example"], "protocol": protocol,
                     "models": [{"name": "g", "model": model}]}, "g.yaml")
    assert err.value.field.endswith(field) and words in str(err.value), str(err.value)


def test_a_gemini_3_6_flash_arm_takes_minimal():
    sweep = parse_sweep({"name": "g", "mazes": ["example"], "protocol": {"effort": "minimal"},
                         "models": [{"name": "g", "model": "gemini/gemini-3.6-flash", "tier": "batch"}]}, "g.yaml")
    assert sweep.models[0].config.family.name == "gemini-3-minimal"
