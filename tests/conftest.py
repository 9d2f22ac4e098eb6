"""Fixtures shared across the suite's folders."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def attribution_run(tmp_path_factory) -> Path:
    """The run folder of a small attribution run (``testing.attribution``): four study mazes with
    the attribution twins and a recolouring, played by the oracle and the three scripted agents
    with a known defect, through the real ``gridbench run`` on a local Ray. What each is built to
    fail: ``testing.attribution.FAILS``; what the report should say of it: docs/variants.md, "A small
    attribution run". Its twins are built into a cache of its own."""
    from testing.attribution import attribution_run as run

    root = tmp_path_factory.mktemp("attribution")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
        return run(root / "results")


@pytest.fixture(scope="session")
def sealed_set(tmp_path_factory) -> tuple[Path, Path, str]:
    """A sealed set of three mazes made by ``gridbench pool build --sealed`` (docs/sealed.md): its
    private folder, its public commitment file and what the command printed."""
    import subprocess
    import sys

    root = tmp_path_factory.mktemp("sealed")
    done = subprocess.run([sys.executable, "-m", "app.cli", "pool", "build", "--sealed", "--count", "3",
                           "--workers", "2", "--out", str(root / "blind3")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return root / "blind3", root / "blind3.commitment.json", done.stdout + done.stderr
