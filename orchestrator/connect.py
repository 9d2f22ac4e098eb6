"""Where the Ray runtime comes from: a cluster to join, or an embedded local instance, with an
auth token that leaves nothing behind (docs/cluster.md)."""

from __future__ import annotations

import logging
import os
import secrets
from pathlib import Path
from typing import Any

import ray

EMBEDDED_OBJECT_STORE = 512 * 1024**2


def _embedded_auth_token() -> None:
    """Give an embedded Ray a token that lives as long as this process, unless the user has one
    (``RAY_AUTH_TOKEN``, ``RAY_AUTH_TOKEN_PATH``, ``~/.ray/auth_token``) or turned token
    authentication off (``RAY_AUTH_MODE=disabled``).

    Without a token, Ray (2.59 on) writes a new one to ``~/.ray/auth_token`` for a local
    instance. That file outlives the run, and a later ``ray start --head`` that finds it turns
    token authentication on for the user's own cluster, whose ``ray job submit`` then fails
    until ``RAY_AUTH_MODE=token`` is set (docs/cluster.md). A token in this process's environment,
    which its Ray processes inherit, protects the instance as well and leaves nothing behind."""
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
        return
    if os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH"):
        return
    if (Path.home() / ".ray" / "auth_token").is_file():
        return
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)


def connect(address: str | None = None, *, num_cpus: int | None = None) -> bool:
    """Join a cluster (``address``, or ``RAY_ADDRESS`` inside ``ray job submit``) or start an
    embedded local Ray without dashboard and with quiet logs. Returns True when this call
    started or joined Ray (and so should shut it down), False when Ray was already up."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # ERROR: a local instance's notices (token auth, "started a local Ray") are not the user's business
    quiet: dict[str, Any] = {"log_to_driver": False, "logging_level": logging.ERROR, "include_dashboard": False}
    if address or os.environ.get("RAY_ADDRESS"):
        ray.init(address=address or None, **quiet)
    else:
        _embedded_auth_token()
        # Ray runs its workers at niceness 15, so on a busy machine any other process starves the
        # episodes; an embedded instance exists only for this run, so its workers run at 0
        # address="local": always a fresh instance, never a cluster someone `ray start`ed here
        ray.init(address="local", num_cpus=num_cpus, object_store_memory=EMBEDDED_OBJECT_STORE,
                 _system_config={"worker_niceness": 0}, **quiet)
    return True


def disconnect() -> None:
    """Leave the cluster joined, or stop the embedded Ray, that ``connect`` returned True for."""
    ray.shutdown()
