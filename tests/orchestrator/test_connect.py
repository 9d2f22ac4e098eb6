"""``connect``'s embedded Ray and Ray's token authentication, which Ray (2.59 on) turns on for a
local instance and, when the user has no token, backs with a new ``~/.ray/auth_token`` that
outlives the run. gridbench's embedded instance gets a token for its own process instead: it is
protected all the same, and nothing is left in ``~/.ray`` for a later ``ray start --head`` to
pick up (docs/cluster.md). A token or mode the user set up is left to Ray."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.connect import _embedded_auth_token

ROOT = Path(__file__).resolve().parents[2]
AUTH_VARS = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")


@pytest.fixture
def home(monkeypatch, tmp_path) -> Path:
    """An empty HOME and none of Ray's authentication variables (all restored afterwards)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in AUTH_VARS:
        monkeypatch.setenv(var, "")  # recorded, so that what the test sets is undone too
        monkeypatch.delenv(var)
    return home


def test_without_a_token_the_embedded_ray_gets_one_for_this_process(home):
    _embedded_auth_token()
    token = os.environ["RAY_AUTH_TOKEN"]
    assert re.fullmatch(r"[0-9a-f]{64}", token)
    _embedded_auth_token()  # a second instance in the same process: Ray's client has cached the first
    assert os.environ["RAY_AUTH_TOKEN"] == token
    assert not (home / ".ray").exists()


@pytest.mark.parametrize("setting", ["token file", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_AUTH_MODE=disabled"])
def test_a_token_or_mode_the_user_set_up_is_left_to_ray(home, monkeypatch, setting):
    token = "f" * 64
    if setting == "token file":
        (home / ".ray").mkdir()
        (home / ".ray" / "auth_token").write_text(token)
    elif setting == "RAY_AUTH_TOKEN_PATH":
        (home / "token").write_text(token)
        monkeypatch.setenv(setting, str(home / "token"))
    elif setting == "RAY_AUTH_TOKEN":
        monkeypatch.setenv(setting, token)
    else:
        monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    before = dict(os.environ)
    _embedded_auth_token()
    assert dict(os.environ) == before


# In a fresh process with an empty HOME: the embedded Ray turns away a client with the wrong
# token, and after the run ~/.ray holds no token
EMBEDDED = """
import os, subprocess, sys
import ray
from orchestrator.connect import connect
connect(num_cpus=1)
probe = subprocess.run([sys.argv[1], "status", "--address", ray.get_runtime_context().gcs_address],
                       env={**os.environ, "RAY_AUTH_TOKEN": "0" * 64}, capture_output=True, text=True, timeout=120)
ray.shutdown()
print("probe", probe.returncode, "InvalidAuthToken" in probe.stderr)
"""


@pytest.mark.slow
def test_the_embedded_ray_needs_its_token_and_leaves_none_behind(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in AUTH_VARS}
    done = subprocess.run([sys.executable, "-c", EMBEDDED, str(Path(sys.executable).with_name("ray"))], cwd=ROOT,
                          env={**env, "HOME": str(home)}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "probe 1 True" in done.stdout, done.stdout + done.stderr[-3000:]
    assert not (home / ".ray" / "auth_token").exists()
