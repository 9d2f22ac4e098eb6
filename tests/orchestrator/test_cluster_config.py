"""cluster.yaml against Ray's own cluster-launcher schema (ray/autoscaler/ray-schema.json)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
import ray.autoscaler
import yaml
from ray.autoscaler._private.util import prepare_config, validate_config

CLUSTER = Path(__file__).resolve().parents[2] / "cluster.yaml"
SCHEMA = json.loads((Path(ray.autoscaler.__file__).parent / "ray-schema.json").read_text())


def test_cluster_yaml_passes_rays_schema_and_launcher_checks():
    config = yaml.safe_load(CLUSTER.read_text())
    jsonschema.validate(config, SCHEMA)
    validate_config(prepare_config(copy.deepcopy(config)))  # what `ray up` runs before launching
    types = config["available_node_types"]
    gpu = types["gpu_a100_80gb"]
    assert gpu["resources"]["GPU"] == 1 and gpu["node_config"]["machineType"] == "a2-ultragpu-1g"
    assert all("env_slot" in t["resources"] for t in types.values())
    assert "GPU" not in types[config["head_node_type"]]["resources"]
    assert any("gridbench[run,vllm]" in c for c in config["worker_setup_commands"])


def test_every_node_starts_ray_with_the_launching_machines_token():
    config = yaml.safe_load(CLUSTER.read_text())
    assert config["file_mounts"]["~/.ray/auth_token"] == "~/.ray/auth_token"
    assert any("export RAY_AUTH_MODE=token" in c and ".bashrc" in c for c in config["setup_commands"])


def test_the_schema_check_catches_a_misspelt_field():
    config = yaml.safe_load(CLUSTER.read_text())
    config["available_node_types"]["head"]["resorces"] = {"CPU": 8}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(config, SCHEMA)
