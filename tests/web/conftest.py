"""Fixtures of the web tests: runs to view and a real headless Chromium to look at them with."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from web_runs import CHROMIUM, CHROMIUM_ARGS, make_run

from env import Maze, resolve_maze


@pytest.fixture(scope="session")
def example_maze() -> Maze:
    return resolve_maze("example")


@pytest.fixture(scope="session")
def small_run(tmp_path_factory, example_maze) -> Path:
    """Three episodes on the design example: the oracle, a random walk, and hostile replies."""
    run = tmp_path_factory.mktemp("runs") / "small"
    return make_run(run, [
        (example_maze, "builtin/oracle", "baseline", 0),
        (example_maze, "builtin/random", "baseline", 1),
        (example_maze, "hostile", "markup", 0),
    ])


@pytest.fixture(scope="module")
def browser() -> Iterator:
    """Chromium under Playwright's sync API, which marks an event loop running in this thread for as
    long as it is open: one a module, so that a later module's ``asyncio.run`` (in any folder) finds
    none."""
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (scripts/install.sh --test installs it as root)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    """A fresh page that records script errors and console errors (a CSP refusal is one)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.errors = []
    pg.on("pageerror", lambda e: pg.errors.append(str(e)))
    pg.on("console", lambda m: pg.errors.append(m.text) if m.type == "error" else None)
    yield pg
    context.close()
