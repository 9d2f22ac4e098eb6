"""The static trace viewer: the bundle on disk, then the pages in a real headless Chromium."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from PIL import Image
from web_runs import HOSTILE_REPLIES, make_run

from env.errors import BadInput
from orchestrator.traces import read_run
from orchestrator.web.viewer import build_view, copy_static, script_json, write_index


def _page_data(html_text: str) -> dict:
    block = re.search(r'<script id="data" type="application/json">(.*?)</script>', html_text, re.S)
    assert block is not None
    return json.loads(block.group(1))


@pytest.fixture(scope="module")
def view(small_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("view")
    summary = build_view(small_run, out, progress=False)
    assert summary.episodes == 3 and not summary.without_frames
    return out


def test_bundle_has_an_index_a_page_per_episode_and_one_png_per_distinct_state(view, small_run):
    episodes, steps = read_run(small_run)
    pages = sorted((view / "episodes").glob("*.html"))
    assert len(pages) == len(episodes) == 3
    index = _page_data((view / "index.html").read_text())
    assert sorted(r["href"] for r in index["episodes"]) == sorted(f"episodes/{p.name}" for p in pages)
    oracle = _page_data((view / "episodes" / "ep0000-example-oracle.html").read_text())
    assert len(oracle["frames"]) == 19 + 1  # the start, then one frame per step
    assert len(set(oracle["frames"])) == 20  # the oracle never repeats a state
    for href in oracle["frames"]:
        frame = Image.open(view / "episodes" / href)
        assert frame.size == (9 * 32, 6 * 32)
    # the oracle's path overlay ends on the goal and the heat map counts every visit
    assert oracle["path"][0] == [1, 1] and oracle["path"][-1] == [7, 4]
    assert sum(n for _, _, n in oracle["heat"]) == 19 + 1


def test_a_second_build_draws_no_frame_again(view, small_run):
    again = build_view(small_run, view, progress=False)
    assert again.frames_drawn == 0
    assert len(list((view / "frames").rglob("*.png"))) > 20


def test_hostile_replies_are_data_in_the_page_source(view, small_run):
    text = (view / "episodes" / "ep0002-example-hostile.html").read_text()
    assert "<script>window" not in text and "<img src=x" not in text and "<i>thinking" not in text
    data = _page_data(text)
    replies = [s["reply"] for s in data["steps"]]
    assert replies[0] == HOSTILE_REPLIES[0].format(action=data["steps"][0]["action"])
    assert replies[1].startswith("</script><img")
    # nothing in the embedded JSON can end the element early, whatever a reply holds
    assert "</" not in script_json({"r": "</script></SCRIPT><!--"})


def test_activity_summary_is_the_one_the_model_saw(view):
    data = _page_data((view / "episodes" / "ep0000-example-oracle.html").read_text())
    events = [s["event"] for s in data["steps"]]
    pickup = events.index("pickup")  # 0-based: the summary changes for the step after it
    shown = [data["summaries"][i] for i in data["summary_of_step"]]
    assert shown[pickup] == shown[0]
    assert shown[pickup + 1] != shown[pickup] and "yellow key" in shown[pickup + 1]


def test_run_without_episodes_is_bad_input_and_writes_nothing(tmp_path):
    (tmp_path / "episodes").mkdir()
    with pytest.raises(BadInput, match="episodes"):
        build_view(tmp_path, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_cli_view_writes_the_bundle_and_bad_input_is_one_line(small_run, tmp_path):
    out = tmp_path / "bundle"
    ok = subprocess.run([sys.executable, "-m", "orchestrator.cli", "view", str(small_run), "--out", str(out)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert (out / "index.html").is_file() and "3 episode pages" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "orchestrator.cli", "view", str(tmp_path / "nope")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "nope" in bad.stderr


# ---- in the browser ---------------------------------------------------------------------------
def _frame(page) -> list:
    """The shown frame's file and its width, once loaded. Polled from here: ``wait_for_function``
    compiles its predicate inside the page, which the page's CSP (rightly) refuses."""
    deadline = time.monotonic() + 30
    while True:
        src, width, done = page.eval_on_selector(
            "#frame", "img => [img.getAttribute('src'), img.naturalWidth, img.complete]")
        if done or time.monotonic() > deadline:
            return [src, width]
        time.sleep(0.02)


@pytest.mark.slow
def test_stepping_through_an_episode_changes_the_frame(view, page, tmp_path):
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url) if r.url.endswith(".png") else None)
    page.goto((view / "episodes" / "ep0000-example-oracle.html").as_uri())
    page.wait_for_selector("body[data-ready='1']")
    # frames load lazily: only the shown one and its neighbour, not all twenty
    assert len(set(requested)) <= 2
    assert page.inner_text("#step-label") == "step 0 / 19"
    seen = [_frame(page)]
    for n in range(1, 6):
        page.keyboard.press("ArrowRight")
        assert page.inner_text("#step-label") == f"step {n} / 19"
        seen.append(_frame(page))
    assert len({src for src, _ in seen}) == 6 and all(w == 9 * 32 for _, w in seen)
    assert page.inner_text("#events li.current").startswith(page.inner_text("#step-facts dd"))
    page.keyboard.press("ArrowLeft")
    assert _frame(page) == seen[4]
    marker_before = page.get_attribute("#now", "x1")
    page.keyboard.press("End")
    assert page.inner_text("#step-label") == "step 19 / 19"
    assert float(page.get_attribute("#now", "x1")) > float(marker_before)
    assert "goal" in page.inner_text("#step-facts")
    # overlays are off until asked for
    assert not page.is_visible("#path") and not page.is_visible("#heat")
    page.keyboard.press("o")
    page.click("#show-heat")
    assert page.is_visible("#path .path-line") and page.is_visible("#heat")
    page.screenshot(path=str(tmp_path / "episode.png"), full_page=True)
    assert page.errors == []


@pytest.mark.slow
def test_hostile_replies_show_as_text_and_never_run(view, page):
    page.goto((view / "episodes" / "ep0002-example-hostile.html").as_uri())
    page.wait_for_selector("body[data-ready='1']")
    for n in range(1, 4):
        page.keyboard.press("ArrowRight")
        reply = page.text_content("#reply")
        assert reply.startswith(HOSTILE_REPLIES[n - 1][:12])
        assert page.eval_on_selector("#reply", "e => e.children.length") == 0
    assert page.text_content("#reasoning").startswith("<i>thinking</i>")
    assert page.evaluate("window.__pwned") is None
    assert page.errors == []


@pytest.mark.slow
def test_index_filters_and_links(view, page):
    page.goto((view / "index.html").as_uri())
    page.wait_for_selector("body[data-ready='1']")
    assert page.inner_text("#count") == "showing 3 of 3"
    page.select_option("#f-solved", "false")
    assert page.inner_text("#count") == "showing 1 of 3"
    assert page.inner_text("#rows tr:not([hidden]) .c-model_name") == "random"
    page.click("#f-reset")
    page.select_option("#f-model_name", "hostile")
    assert page.inner_text("#count") == "showing 1 of 3"
    page.click("#rows tr:not([hidden]) .c-maze_id a")
    page.wait_for_selector("body[data-ready='1']")
    assert "hostile on example" in page.inner_text("#title")
    assert page.errors == []


@pytest.mark.slow
def test_an_index_of_540_episodes_opens_and_filters(view, page, tmp_path):
    """The size of the study's ablation run; the speed goal itself lives in bench/viewer_speed.py."""
    real = _page_data((view / "index.html").read_text())["episodes"]
    rows = [{**real[i % len(real)], "model_name": f"m{i // 12 % 3}", "condition": f"c{i % 12}", "repeat": i // 36}
            for i in range(540)]
    copy_static(tmp_path)
    index = write_index(tmp_path, "ablation-sized", rows)
    page.goto(index.as_uri())
    page.wait_for_selector("body[data-ready='1']")
    opened_ms = int(page.get_attribute("body", "data-ready-ms"))
    assert page.inner_text("#count") == "showing 540 of 540"
    assert page.locator("#rows tr").count() == 200  # drawn a page at a time
    page.click("#more")
    assert page.locator("#rows tr").count() == 400
    page.click("th[data-col='repeat']")
    page.click("th[data-col='repeat']")  # descending
    assert page.inner_text("#rows tr:first-child .c-repeat") == "14"
    page.select_option("#f-condition", "c3")
    page.select_option("#f-model_name", "m0")
    assert page.inner_text("#count") == "showing 15 of 540" and page.locator("#rows tr").count() == 15
    assert not page.is_visible("#more")
    assert opened_ms < 10_000  # a sanity bound only: bench/viewer_speed.py holds the 2 s goal
    assert page.errors == []


def test_error_episodes_and_mazes_missing_from_the_manifest_still_get_pages(tmp_path, example_maze):
    from agents import Protocol
    from orchestrator.episode import failed_episode
    from orchestrator.records import EpisodeIdentity
    from orchestrator.traces import write_episode

    run = make_run(tmp_path / "run", [(example_maze, "builtin/oracle", "baseline", 0)])
    identity = EpisodeIdentity(run="run", episode_id="crashed", model_name="m", model="builtin/random",
                               condition="baseline", repeat=0, maze_id=example_maze.id)
    write_episode(run, failed_episode(identity, example_maze, Protocol.preset("final"), "ActorDied", "node lost", 3))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["mazes"] = {}
    (run / "manifest.json").write_text(json.dumps(manifest))
    summary = build_view(run, progress=False)
    assert summary.episodes == 2 and summary.without_frames == [f"ep0000-{example_maze.id}-oracle"]
    data = _page_data((run / "view" / "episodes" / "ep0000-example-oracle.html").read_text())
    assert data["frames"] is None and len(data["steps"]) == 19 and data["heat"]
    crashed = _page_data((run / "view" / "episodes" / "crashed.html").read_text())
    assert crashed["episode"]["termination"] == "error" and crashed["steps"] == []


def test_a_trace_that_does_not_replay_is_flagged_on_its_page(tmp_path, example_maze):
    import pyarrow.parquet as pq

    run = make_run(tmp_path / "run", [(example_maze, "builtin/oracle", "baseline", 0)])
    path = next((run / "steps").glob("*.parquet"))
    table = pq.read_table(path)
    xs = table.column("x").to_pylist()
    xs[2] += 1  # step 3 now claims a cell the recorded actions never reach
    pq.write_table(table.set_column(table.schema.get_field_index("x"), "x", pa.array(xs, pa.int32())), path)
    build_view(run, progress=False)
    data = _page_data(next((run / "view" / "episodes").glob("*.html")).read_text())
    assert data["mismatch"].startswith("step 3:")
