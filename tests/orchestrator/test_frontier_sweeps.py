"""The shipped sweeps of the study's post-R1 work (docs/study.md, "After R1"): `frontier` is the R1
cell on the 50 study mazes with the two frontier arms, its dry run naming the mazes and each arm's
request fields; `probes` changes the one field `hint` per condition on the study's probe mazes.
(Every entry and condition of both also plays against its provider's persona:
test_provider_personas.py.)"""

from __future__ import annotations

import json
import subprocess
import sys

from agents import PRESETS
from orchestrator.sweep import load_sweep, model_conditions


def test_frontier_is_the_r1_cell_on_the_50_study_mazes():
    sweep = load_sweep("frontier")
    study = load_sweep("main")
    assert [m.checksum for m in sweep.mazes] == [m.checksum for m in study.mazes] and len(sweep.mazes) == 50
    assert [m.name for m in sweep.models] == ["astra", "opus55"]
    for model in sweep.models:
        (cond,) = model_conditions(model, sweep.conditions)
        # the R1 cell, with the model's own effort only
        assert cond.protocol.changed_fields(PRESETS["study-final"]) == ["effort"] and cond.protocol.effort == "xhigh"


def test_probes_change_only_the_hint():
    sweep = load_sweep("probes")
    assert [m.id for m in sweep.mazes] == ["r1_M2_8x8_corridor_sg_0", "r1_M3_8x8_corridor_kr_sg_1",
                                           "r1_M1_8x8_corridor_kr_1"]
    assert [c.changed for c in sweep.conditions] == [None, "hint", "hint", "hint", "hint"]
    assert {c.protocol.hint for c in sweep.conditions} == {"none", "switch", "state_change", "interaction_rules",
                                                           "interaction_rules_stand"}
    # the study's probes offered DROP, every condition alike
    assert {c.protocol.actions for c in sweep.conditions} == {"with_drop"}


def test_the_frontier_dry_run_shows_the_mazes_and_each_arms_request_fields(tmp_path):
    r = subprocess.run([sys.executable, "-m", "app.cli", "run", "frontier", "--dry-run", "--json",
                        "--out", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(out["mazes"]) == 50 and "r1_S4_10x10_dense_1" in out["mazes"]
    requests = {q["model"]: q for q in out["requests"]}
    astra, opus = requests["astra"], requests["opus55"]
    assert astra["family"] == "openai-reasoning-6" and astra["image_detail"] == "high"
    assert astra["fields"]["max_completion_tokens"] == 64000 and astra["fields"]["reasoning_effort"] == "xhigh"
    # the study's OpenAI agent sent no sampling parameter and no seed (docs/providers.md)
    assert "temperature" not in astra["fields"] and "seed" not in astra["fields"]
    assert "image_detail" not in astra["fields"]
    assert astra["fields"]["service_tier"] == "flex"  # the tier the study ran Astra on; opus55 goes by batches
    assert opus["family"] == "anthropic-5" and opus["image_detail"] is None
    assert opus["fields"] == {"max_tokens": 64000, "output_config": {"effort": "xhigh"},
                              "thinking": {"type": "adaptive", "display": "summarized"}}
    assert not list(tmp_path.iterdir())  # a dry run writes nothing
