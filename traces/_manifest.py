"""A run's ``manifest.json`` (docs/traces.md#the-manifest): the resolved sweep (names of key
variables only), every maze by checksum, git, packages, host, and one invocation per run of the
command."""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any

from env.sets import SEALED, check_seal
from traces._store import RunStore, open_store

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "gridbench.run/1"
PACKAGES = (
    "gridbench", "ray", "litellm", "minigrid", "gymnasium", "numpy", "pyarrow", "pandas", "pydantic",
    "vllm", "llama_cpp_python",
)
Run = str | os.PathLike | RunStore  # a run: a local folder, an s3:// or gs:// URI, or its store


def git_info() -> dict[str, Any]:
    """The commit of the gridbench source tree and whether it has uncommitted changes.

    The commit stands on its own: a ``git status`` that fails or runs out of time (a fresh copy
    of a repository, as ``ray job submit --working-dir`` makes, is re-read in full) leaves only
    ``dirty`` unknown. When no commit can be read, ``error`` says why in one line.
    """
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=120)

    try:
        head = git("rev-parse", "HEAD")
    except (OSError, subprocess.SubprocessError) as e:
        return {"commit": None, "dirty": None, "error": f"git rev-parse HEAD: {type(e).__name__}"}
    if head.returncode != 0:
        reason = (head.stderr.strip().splitlines() or [f"exit code {head.returncode}"])[0]
        return {"commit": None, "dirty": None, "error": f"git rev-parse HEAD: {reason}"}
    try:
        status = git("status", "--porcelain", "--untracked-files=no")
        dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        dirty = None
    return {"commit": head.stdout.strip(), "dirty": dirty}


def package_versions(names: Iterable[str] = PACKAGES) -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = None
    return out


def host_info() -> dict[str, Any]:
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        mem = None
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "memory_bytes": mem,
    }


def read_manifest(run_dir: Run) -> dict[str, Any] | None:
    try:
        data = open_store(run_dir, "RUN").read_bytes(MANIFEST)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    return json.loads(data.decode("utf-8"))


def run_seal(run_dir: Run) -> dict[str, str] | None:
    """The sealed set a run drew on, ``{"commitment", "set"}`` as its manifest records it
    (docs/sealed.md); None for a public run or one without a manifest. A malformed entry is bad
    input naming the manifest and the field."""
    store = open_store(run_dir, "RUN")
    return check_seal((read_manifest(store) or {}).get(SEALED), store.display(MANIFEST))


def write_manifest(
    run_dir: Run,
    *,
    run: str,
    sweep: dict[str, Any],
    mazes: dict[str, dict[str, Any]],
    invocation: dict[str, Any],
    replace_last: bool = False,
    git: dict[str, Any] | None = None,
    sealed: dict[str, str] | None = None,
) -> PurePath:
    """Create or update ``manifest.json``.

    ``sweep`` is the resolved sweep (no secrets: only names of key variables ever reach it);
    ``mazes`` maps each maze checksum to its content, so a run replays without the maze files.
    A resumed run keeps its creation time and earlier mazes and appends its invocation
    (``replace_last``: completes the invocation this process appended when it started). ``git`` is
    the source's ``git_info()`` when the caller read it earlier than now.
    ``location`` is where the run lives (a folder or a URI, which never holds credentials).
    ``sealed``: the sealed set the run draws on, ``{"commitment", "set"}`` (docs/sealed.md); once
    recorded, every later invocation keeps it.
    """
    store = open_store(run_dir)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    old = read_manifest(store) or {}
    last = (old.get("invocations") or [{}])[-1]
    # an invocation ran the commit it started with: its source may be gone by the time it ends
    # (`ray job stop` removes a job's working dir while the driver still writes its last update)
    if replace_last and isinstance(last.get("git"), dict):
        git = last["git"]
    elif git is None:
        git = git_info()
    manifest = {
        "format": MANIFEST_FORMAT,
        "run": run,
        "location": store.location,
        "created_at": old.get("created_at", now),
        "updated_at": now,
        "sweep": sweep,
        "git": git,
        "packages": package_versions(),
        "host": host_info(),
        "invocations": [*(old.get("invocations", [])[:-1] if replace_last else old.get("invocations", [])),
                        {"at": last.get("at", now) if replace_last else now,
                         "git": git, **invocation, **({"finished_at": now} if replace_last else {})}],
        "mazes": {**old.get("mazes", {}), **mazes},
    }
    sealed = sealed or old.get(SEALED)
    if sealed:
        manifest[SEALED] = sealed
    text = json.dumps(manifest, indent=2, sort_keys=False, default=str) + "\n"
    return store.put(MANIFEST, text.encode("utf-8"))
