"""The trace viewer: the bundle on disk, then the page in a real headless Chromium."""

from __future__ import annotations

import base64
import io
import itertools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from web_runs import HOSTILE_REPLIES, compacted_copies, make_run

from agents import Protocol
from agents.prompt import event_summary
from agents.types import PastStep
from app.web import viewer
from app.web.viewer import MAX_STEP_FILES, build_view
from env import ACTIONS, maze_from_dict, png_bytes, render_state
from env.errors import BadInput
from env.skins import with_skin
from episodes.replay import replay
from testing.mazes import PR57_TOUR
from traces import read_episode, read_run

EVERY_KIND = {
    "format": "gridbench.maze/1", "id": "every-kind",
    "grid": ["#########", "#.......#", "#.......#", "#.......#", "#.......#", "#.......#", "#########"],
    "start": {"pos": [1, 1], "dir": "east"}, "goal": [7, 1],
    "objects": [
        {"id": "k1", "kind": "key", "color": "red", "pos": [2, 1]},
        {"id": "k2", "kind": "key", "color": "blue", "pos": [4, 1]},
        {"id": "d1", "kind": "door", "color": "red", "pos": [3, 3], "state": "locked"},
        {"id": "d2", "kind": "door", "color": "green", "pos": [5, 3], "state": "closed"},
        {"id": "d3", "kind": "door", "color": "yellow", "pos": [5, 5], "state": "open"},
        {"id": "s1", "kind": "switch", "color": "purple", "pos": [1, 5], "on": False, "controls": ["g1"]},
        {"id": "s2", "kind": "switch", "color": "grey", "pos": [3, 5], "on": True, "controls": ["g2"]},
        {"id": "g1", "kind": "gate", "color": "purple", "pos": [7, 3]},
        {"id": "g2", "kind": "gate", "color": "grey", "pos": [7, 5]},
    ],
}
# picks a key up, swaps it twice, unlocks, closes and opens doors, turns switches off and on (and
# their gates with them), stands on open doors, switches, open gates and the goal, facing every way
EVERY_STATE = (
    "pickup forward forward pickup pickup right forward toggle toggle toggle forward forward forward "
    "toggle toggle left forward forward forward forward left left forward forward right "
    "forward toggle forward right right forward toggle toggle right forward forward forward forward left "
    "forward toggle left forward forward left forward right forward forward forward left forward right "
    "forward left forward forward"
).split()


def data_payload(path: Path) -> Any:
    """What a data file hands the page: its JSON text (parsed), or its list of JSON texts (parsed)."""
    text = path.read_text(encoding="utf-8")
    found = re.fullmatch(r'gridbench\.put\("([a-z0-9-]+)",(.*)\);\n', text, re.S)
    assert found is not None and found.group(1) == path.stem
    payload = json.loads(found.group(2))  # a JavaScript string literal from json.dumps is JSON
    return [json.loads(t) for t in payload] if isinstance(payload, list) else json.loads(payload)


def index_of(view: Path) -> dict:
    return data_payload(view / "data" / "episodes.js")


def records(view: Path) -> list[dict]:
    """Every episode's record, in the index's order."""
    files = sorted((view / "data").glob("steps-*.js"))
    return [r for f in files for r in data_payload(f)]


def column(index: dict, name: str) -> list:
    c = index["columns"][name]
    return c if isinstance(c, list) else [None if k is None else c["values"][k] for k in c["codes"]]


def steps_of(record: dict, index: dict) -> list[dict]:
    """A record's steps as rows, the way the page spreads and decodes them."""
    n, values = record["n"], index["step_values"]
    cols = {}
    for name, c in record["steps"].items():
        c = c if isinstance(c, list) else [c] * n
        cols[name] = [values[name][k] for k in c] if name in values else c
    return [{name: cols[name][i] for name in cols} for i in range(n)]


# what only multinet-r1 has, drawn the study's way: a key walked onto, a gate drawn as a grey door,
# a white switch, a teleporter, a hazard, a block, a kill cell, a frozen tile
R1_EVERY_KIND = {
    "format": "gridbench.maze/1", "id": "r1-every-kind", "ruleset": "multinet-r1", "rules": {"freeze_steps": 2},
    "grid": ["##########", "#...#..#.#", "#......#.#", "#...#....#", "##########"],
    "start": {"pos": [1, 1], "dir": "east"}, "goal": [8, 3],
    "objects": [
        {"id": "k", "kind": "key", "color": "red", "pos": [2, 1]},
        {"id": "d", "kind": "door", "color": "red", "pos": [4, 2], "state": "locked"},
        {"id": "s", "kind": "switch", "color": "white", "pos": [1, 3], "controls": ["g"]},
        {"id": "g", "kind": "gate", "color": "grey", "pos": [7, 3]},
        {"id": "t", "kind": "teleporter", "color": "purple", "pos": [6, 1], "to": [6, 3]},
        {"id": "h", "kind": "hazard", "pos": [6, 2]},
        {"id": "b", "kind": "block", "color": "blue", "pos": [5, 3]},
        {"id": "x", "kind": "kill", "pos": [3, 3]},
        {"id": "f", "kind": "frozen", "pos": [3, 2]},
    ],
}


def every_kind_run(folder: Path, example_maze) -> Path:
    """The every-kind maze played through every state at tile sizes 32 and 16, the example maze by
    the oracle (32) and a random walk (20), a multinet-r1 maze with every kind by the oracle with
    the study's switch frames and by a random walk (16), both every-kind mazes in the neutral
    skin (every state at 16; the study's switch frames on a random walk at 16), and a multinet-pr57
    maze by a random walk (16) and the oracle in the neutral skin (16)."""
    maze = maze_from_dict(EVERY_KIND)
    long_enough = {"step_cap_factor": 20.0, "stall_window": 200}
    make_run(folder, [(maze, "script", "t32", 0)], Protocol(**long_enough), prefix="a", scripts={0: EVERY_STATE})
    make_run(folder, [(maze, "script", "t16", 0)], Protocol(tile_size=16, **long_enough), prefix="b",
             scripts={0: EVERY_STATE})
    make_run(folder, [(example_maze, "builtin/oracle", "t32", 0)], prefix="c")
    make_run(folder, [(example_maze, "builtin/random", "t20", 3)], Protocol(tile_size=20), prefix="d")
    r1 = maze_from_dict(R1_EVERY_KIND)
    make_run(folder, [(r1, "builtin/oracle", "study", 0)], Protocol(tile_size=16, switch_frames="study"), prefix="e")
    make_run(folder, [(r1, "builtin/random", "t16", 2)], Protocol(tile_size=16, step_cap_factor=1.0), prefix="f")
    make_run(folder, [(with_skin(maze, "neutral"), "script", "neutral", 0)], Protocol(tile_size=16, **long_enough),
             prefix="g", scripts={0: EVERY_STATE})
    make_run(folder, [(with_skin(r1, "neutral"), "builtin/random", "neutral-study", 1)],
             Protocol(tile_size=16, step_cap_factor=1.0, switch_frames="study"), prefix="h")
    pr57 = maze_from_dict(PR57_TOUR)
    make_run(folder, [(pr57, "builtin/random", "pr57", 4)], Protocol(tile_size=16, step_cap_factor=3.0), prefix="i")
    make_run(folder, [(with_skin(pr57, "neutral"), "builtin/oracle", "pr57-neutral", 0)], Protocol(tile_size=16),
             prefix="j")
    return folder


def run_with_a_crash_and_no_mazes(folder: Path, example_maze) -> Path:
    """The oracle's episode and one that crashed (no steps), with the mazes left out of the manifest."""
    from episodes.episode import failed_episode
    from traces import EpisodeIdentity, write_episode

    run = make_run(folder, [(example_maze, "builtin/oracle", "baseline", 0)])
    identity = EpisodeIdentity(run="run", episode_id="crashed", model_name="m", model="builtin/random",
                               condition="baseline", repeat=0, maze_id=example_maze.id)
    write_episode(run, failed_episode(identity, example_maze, Protocol.preset("gridbench-final"), "ActorDied", "node lost", 3))
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["mazes"] = {}
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


@pytest.fixture(scope="module")
def view(small_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("view")
    summary = build_view(small_run, out, progress=False)
    assert summary.episodes == 3 and not summary.without_frames
    return out


@pytest.fixture(scope="module")
def drawn_run(tmp_path_factory, example_maze) -> Path:
    return every_kind_run(tmp_path_factory.mktemp("runs") / "every-kind", example_maze)


@pytest.fixture(scope="module")
def drawn_view(drawn_run) -> Path:
    build_view(drawn_run, progress=False)
    return drawn_run / "view"


# ---- the bundle on disk -----------------------------------------------------------------------------
def test_bundle_is_a_handful_of_files_with_every_episode_and_its_recorded_steps(view, small_run):
    files = sorted(str(p.relative_to(view)) for p in view.rglob("*") if p.is_file())
    assert files == ["data/episodes.js", "data/mazes.js", "data/steps-00.js", "data/tiles.js", "index.html",
                     "static/episode.js", "static/frames.js", "static/viewer.css", "static/viewer.js"]
    index, recs = index_of(view), records(view)
    assert index["episodes"] == len(recs) == 3 and index["step_files"] == [0]
    assert column(index, "model_name") == ["hostile", "oracle", "random"]  # the bundle's order
    episodes, steps = read_run(small_run)
    for rec in recs:
        trace = steps[steps.episode_id == rec["episode"]["episode_id"]].sort_values("step")
        rows = steps_of(rec, index)
        assert [(r["step"], r["action"], r["event"], r["x"], r["y"], r["dir"], r["carrying"]) for r in rows] == \
            list(zip(trace.step, trace.action, trace.event, trace.x, trace.y, trace.dir, trace.carrying.replace(
                {np.nan: None}), strict=True))
        states = [rec["mechanisms"][k] for k in (rec["mechanism_of_step"] if isinstance(rec["mechanism_of_step"], list)
                                                 else [rec["mechanism_of_step"]] * rec["n"])]
        assert states == [json.loads(m) for m in trace.mechanisms]
    # the maze, its start state and the oracle's path, once for the whole bundle
    mazes = data_payload(view / "data" / "mazes.js")
    (entry,) = mazes.values()
    assert entry["start"]["pos"] == [1, 1] and entry["path"][0] == [1, 1] and entry["path"][-1] == [7, 4]
    assert set(data_payload(view / "data" / "tiles.js")) == {"32"}


def test_each_episode_carries_the_discovery_timelines_of_its_mechanisms(view, small_run, example_maze):
    """The chart's marks are ``traces.episode_timelines`` of the recorded steps, the report's reading."""
    from traces import episode_timelines

    _, steps = read_run(small_run)
    for rec in records(view):
        trace = steps[steps.episode_id == rec["episode"]["episode_id"]]
        expected = [{"object": t.object_id, "kind": t.kind, "contact": t.contact, "attempt": t.attempt,
                     "success": t.success, "use": t.use}
                    for t in episode_timelines(example_maze, trace.replace({np.nan: None}).to_dict("records"))]
        assert rec["discovery"] == expected
    oracle = records(view)[column(index_of(view), "model_name").index("oracle")]["discovery"]
    assert {t["kind"] for t in oracle if t["use"] is not None} == {"key", "door", "switch", "gate"}


def test_activity_summaries_are_the_ones_the_model_saw(view, small_run, drawn_view, drawn_run):
    """Against the definition: the summary of step i is built from every step before it."""
    for run, bundle in ((small_run, view), (drawn_run, drawn_view)):
        index = index_of(bundle)
        for rec in records(bundle):
            eid = rec["episode"]["episode_id"]
            replayed = replay(run, eid)
            _, trace = read_episode(run, eid)
            history = [PastStep(int(r.step), ACTIONS.index(r.action), r.event, replayed.states[i],
                                replayed.states[i + 1]) for i, r in enumerate(trace.itertuples())]
            expected = [event_summary(replayed.maze, history[:i]) for i in range(len(history))]
            shown = rec["summary_of_step"]
            shown = shown if isinstance(shown, list) else [shown] * rec["n"]
            assert [rec["summaries"][k] for k in shown] == expected, eid
            assert len(steps_of(rec, index)) == len(expected)
    every = next(r for r in records(drawn_view) if r["episode"]["episode_id"].startswith("a"))
    assert len(every["summaries"]) == 1 + 12  # one more after each of the twelve mechanism steps


def test_a_compacted_run_of_many_episodes_stays_a_handful_of_files(small_run, view, tmp_path, monkeypatch):
    """120 episodes in 3 files per folder, rows shuffled; steps spread over the most steps files
    allowed, and turned into records a few at a time: every record is its original's."""
    run = compacted_copies(small_run, tmp_path / "compacted", copies=40)
    monkeypatch.setattr(viewer, "STEPS_PER_FILE", 50)
    monkeypatch.setattr(viewer, "ROWS_AT_ONCE", 37)
    summary = build_view(run, tmp_path / "out", progress=False)
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert summary.episodes == 120 and len(files) == len(summary.files) == 9 + MAX_STEP_FILES - 1 <= 20
    index = index_of(tmp_path / "out")
    assert len(index["step_files"]) == MAX_STEP_FILES
    originals = {r["episode"]["episode_id"]: r for r in records(view)}
    recs = records(tmp_path / "out")
    assert len(recs) == 120
    for rec, eid in zip(recs, [r["episode"]["episode_id"] for r in recs], strict=True):
        original = originals[eid.split("-", 1)[1]]
        assert steps_of(rec, index) == steps_of(original, index_of(view))
        assert rec["summaries"] == original["summaries"] and rec["mechanisms"] == original["mechanisms"]
    # and the index is in the bundle's order: model, condition, maze, repeat
    keys = list(zip(column(index, "model_name"), column(index, "condition"), column(index, "repeat"), strict=True))
    assert keys == sorted(keys)


def test_hostile_replies_are_one_string_in_the_data(view):
    text = (view / "data" / "steps-00.js").read_text()
    hostile = next(r for r in records(view) if r["episode"]["episode_id"].endswith("hostile"))
    rows = steps_of(hostile, index_of(view))
    assert rows[0]["reply"] == HOSTILE_REPLIES[0].format(action=rows[0]["action"])
    assert rows[1]["reply"].startswith("</script><img")
    assert rows[0]["reasoning"].startswith("<i>thinking</i>")
    # every quote inside a record is escaped: no reply can end the string it is held in
    strings = json.loads(text[len('gridbench.put("steps-00",'):-3])
    assert len(strings) == 3 and all(isinstance(s, str) for s in strings)


def test_run_without_episodes_is_bad_input_and_writes_nothing(tmp_path):
    (tmp_path / "episodes").mkdir()
    with pytest.raises(BadInput, match="episodes"):
        build_view(tmp_path, tmp_path / "out", progress=False)
    assert not (tmp_path / "out").exists()


def test_cli_view_writes_the_bundle_and_bad_input_is_one_line(small_run, tmp_path):
    out = tmp_path / "bundle"
    (out / "episodes").mkdir(parents=True)  # what the viewer of old left behind
    (out / "data").mkdir()
    (out / "data" / "steps-07.js").write_text("stale")
    ok = subprocess.run([sys.executable, "-m", "app.cli", "view", str(small_run), "--out", str(out)],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert (out / "index.html").is_file() and "viewer of 3 episodes (95 steps) in 9 files" in ok.stdout
    assert not (out / "data" / "steps-07.js").exists()  # a steps file of an earlier bundle
    assert "older viewer" in ok.stderr and str(out / "episodes") in ok.stderr
    bad = subprocess.run([sys.executable, "-m", "app.cli", "view", str(tmp_path / "nope")],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "nope" in bad.stderr


def test_error_episodes_and_mazes_missing_from_the_manifest_are_still_listed(tmp_path, example_maze):
    run = run_with_a_crash_and_no_mazes(tmp_path / "run", example_maze)
    summary = build_view(run, progress=False)
    assert summary.episodes == 2 and summary.without_frames == [f"ep0000-{example_maze.id}-oracle"]
    by_id = {r["episode"]["episode_id"]: r for r in records(run / "view")}
    oracle = by_id[f"ep0000-{example_maze.id}-oracle"]
    assert oracle["n"] == 19 and oracle["summaries"] is None and oracle["problem"] is None
    assert by_id["crashed"]["n"] == 0 and by_id["crashed"]["episode"]["error_class"] == "ActorDied"
    assert data_payload(run / "view" / "data" / "mazes.js") == {}


def test_recorded_states_that_do_not_fit_the_maze_are_flagged(tmp_path, example_maze):
    run = make_run(tmp_path / "run", [(example_maze, "builtin/oracle", "baseline", 0)])
    path = next((run / "steps").glob("*.parquet"))
    table = pq.read_table(path)
    mechanisms = table.column("mechanisms").to_pylist()
    mechanisms[4] = mechanisms[4].replace('"k1"', '"k9"')  # a key the maze does not have
    table = table.set_column(table.schema.get_field_index("mechanisms"), "mechanisms", pa.array(mechanisms))
    pq.write_table(table, path)
    build_view(run, progress=False)
    (rec,) = records(run / "view")
    assert "do not fit maze example" in rec["problem"] and rec["n"] == 19


# ---- in the browser ---------------------------------------------------------------------------------
def _open(page, url: str, ready: str) -> None:
    page.goto(url)
    page.wait_for_selector(f"body[data-ready='{ready}']")


def _canvas(page) -> np.ndarray:
    url = page.eval_on_selector("#frame", "c => c.toDataURL('image/png')")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB"))


@pytest.mark.slow
def test_frames_drawn_in_the_browser_are_the_frames_the_model_saw(drawn_view, drawn_run, page):
    """Every frame of eight episodes (every object kind and state of both rulesets in both skins,
    every direction, a carried, a moved and a used-up key, the study's switch frames, tile sizes 32,
    20 and 16), drawn on the canvas, against render_state's PNGs."""
    index = index_of(drawn_view)
    compared, sizes = 0, set()
    for i, rec in enumerate(records(drawn_view)):
        eid = rec["episode"]["episode_id"]
        protocol = column(index, "protocol")[i]
        sizes.add(protocol["tile_size"])
        replayed = replay(drawn_run, eid)
        assert replayed.ok
        _open(page, f"{(drawn_view / 'index.html').as_uri()}#e={i}", "episode")
        for s, state in enumerate(replayed.states):
            if s:
                page.keyboard.press("ArrowRight")
            assert page.inner_text("#step-label") == f"step {s} / {len(replayed.states) - 1}"
            expected = np.asarray(Image.open(io.BytesIO(png_bytes(render_state(
                replayed.maze, state, protocol["tile_size"], protocol.get("switch_frames", "distinct"))))))
            drawn = _canvas(page)
            assert drawn.shape == expected.shape and np.array_equal(drawn, expected), (eid, s)
            compared += 1
    assert sizes == {16, 20, 32} and compared > 2 * 58 + 20
    assert page.errors == []


@pytest.mark.slow
def test_stepping_through_an_episode(view, page, tmp_path):
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url.rsplit("/", 1)[-1]))
    _open(page, (view / "index.html").as_uri(), "index")
    assert "steps-00.js" not in requested and "tiles.js" not in requested  # the index needs no steps
    page.click("#rows tr:nth-child(2) .c-maze_id a")
    page.wait_for_selector("body[data-ready='episode']")
    assert {"steps-00.js", "mazes.js", "tiles.js"} <= set(requested)
    assert page.inner_text("#title") == "oracle on example (baseline)"
    assert page.inner_text("#step-label") == "step 0 / 19"
    seen = [_canvas(page)]
    for n in range(1, 6):
        page.keyboard.press("ArrowRight")
        assert page.inner_text("#step-label") == f"step {n} / 19"
        seen.append(_canvas(page))
    assert all(f.shape == (6 * 32, 9 * 32, 3) for f in seen)
    assert len({f.tobytes() for f in seen}) == 6
    assert page.inner_text("#events li.current").startswith(page.inner_text("#step-facts dd"))
    page.keyboard.press("ArrowLeft")
    assert np.array_equal(_canvas(page), seen[4])
    assert page.url.endswith("#e=1&s=4")
    marker_before = page.get_attribute("#now", "x1")
    page.keyboard.press("End")
    assert page.inner_text("#step-label") == "step 19 / 19"
    assert float(page.get_attribute("#now", "x1")) > float(marker_before)
    assert "goal" in page.inner_text("#step-facts")
    assert "yellow key" in page.inner_text("#summary")
    # overlays are off until asked for
    assert not page.is_visible("#path") and not page.is_visible("#heat")
    page.keyboard.press("o")
    page.click("#show-heat")
    assert page.is_visible("#path .path-line") and page.is_visible("#heat")
    # a link to a step opens there; Escape goes back to the list
    page.reload()
    page.wait_for_selector("body[data-ready='episode']")
    assert page.inner_text("#step-label") == "step 19 / 19"
    assert page.title() == "oracle · example · baseline"
    page.keyboard.press("Escape")
    page.wait_for_selector("body[data-ready='index']")
    assert page.is_visible("#rows") and not page.is_visible("#frame")
    assert page.title() == "gridbench · small"
    page.screenshot(path=str(tmp_path / "index.png"), full_page=True)
    assert page.errors == []


def test_the_step_chart_marks_each_mechanisms_discovery_stages(view, page):
    _open(page, (view / "index.html").as_uri(), "index")
    page.click("#rows tr:nth-child(2) .c-maze_id a")  # the oracle's episode
    page.wait_for_selector("body[data-ready='episode']")
    rec = records(view)[column(index_of(view), "model_name").index("oracle")]
    reached = {(t["object"], st): t[st] for t in rec["discovery"] for st in ("contact", "attempt", "success", "use")
               if t[st] is not None}
    assert {st for _, st in reached} == {"contact", "attempt", "success", "use"}
    marks = page.eval_on_selector_all(
        "#chart .disc", "ms => ms.map(m => [m.dataset.object, m.dataset.stage, Number(m.dataset.step), "
                        "m.getBBox().x + m.getBBox().width / 2, m.getBBox().y])")
    assert {(o, st): step for o, st, step, _, _ in marks} == reached and len(marks) == len(reached)
    # a mark stands at its step on the chart's axis, one row per mechanism
    by_step = sorted((step, x) for _, _, step, x, _ in marks)
    assert all(a[1] < b[1] for a, b in itertools.pairwise(by_step) if a[0] < b[0])
    rows = {o: y for o, _, _, _, y in marks}
    assert len(set(rows.values())) == len({o for o, _ in reached})
    lanes = page.eval_on_selector_all("#chart text.lane", "ts => ts.map(t => t.textContent)")
    assert sorted(lanes) == sorted({o for o, _ in reached})
    legend = page.inner_text("#discovery-legend")
    assert page.is_visible("#discovery-legend") and all(w in legend for w in ("contact", "attempt", "success", "use"))
    assert page.errors == []


@pytest.mark.slow
def test_hostile_replies_show_as_text_and_never_run(view, page):
    _open(page, f"{(view / 'index.html').as_uri()}#e=0", "episode")
    assert page.inner_text("#title") == "hostile on example (markup)"
    for n in range(1, 4):
        page.keyboard.press("ArrowRight")
        reply = page.text_content("#reply")
        assert reply.startswith(HOSTILE_REPLIES[n - 1][:12])
        assert page.eval_on_selector("#reply", "e => e.children.length") == 0
    assert page.text_content("#reasoning").startswith("<i>thinking</i>")
    assert page.evaluate("window.__pwned") is None
    assert page.errors == []


@pytest.mark.slow
def test_index_pages_filters_sorts_and_searches(small_run, tmp_path, page):
    run = compacted_copies(small_run, tmp_path / "run", copies=84)  # 252 episodes
    build_view(run, progress=False)
    _open(page, (run / "view" / "index.html").as_uri(), "index")
    # the models' episodes, with each built-in agent's counted apart, as the report counts them
    ix = index_of(run / "view")
    name_of = dict(zip(column(ix, "model"), column(ix, "model_name"), strict=False))
    oracle, rand = name_of["builtin/oracle"], name_of["builtin/random"]
    assert ix["references"] == sorted([oracle, rand])
    won: dict[str, int] = {}
    for name, solved in zip(column(ix, "model_name"), column(ix, "solved"), strict=True):
        won[name] = won.get(name, 0) + bool(solved)
    model = won[name_of["hostile"]]
    assert won[oracle] == 84 and model + won[oracle] + won[rand] == 168  # the count the page pooled before
    refs = ", ".join(f"{n} {won[n]}/84" for n in sorted([oracle, rand]))
    assert page.inner_text("#totals") == (f"84 episodes, {model} solved ({100 * model / 84:.1f}%) "
                                          f"(references apart: {refs})")
    assert page.inner_text("#count") == "showing 252 of 252"
    assert page.inner_text("#page") == "page 1 of 3" and page.locator("#rows tr").count() == 100
    page.click("#page-next")
    assert page.inner_text("#page") == "page 2 of 3" and page.locator("#rows tr").count() == 100
    page.click("#page-last")
    assert page.inner_text("#page") == "page 3 of 3" and page.locator("#rows tr").count() == 52
    assert page.is_disabled("#page-next") and not page.is_disabled("#page-first")
    page.click("th[data-col='repeat']")
    page.click("th[data-col='repeat']")  # descending, back on the first page
    assert page.inner_text("#page") == "page 1 of 3"
    assert page.inner_text("#rows tr:first-child .c-repeat") == "6"
    page.select_option("#f-solved", label="false")
    assert page.inner_text("#count") == "showing 84 of 252"
    assert set(page.locator("#rows .c-solved").all_inner_texts()) == {"false"}
    page.select_option("#f-model_name", label="m1")
    page.select_option("#f-condition", label="c3")
    assert page.inner_text("#count") == "showing 7 of 252" and page.locator("#rows tr").count() == 7
    page.click("#f-reset")
    assert _poll(page, "#count", "showing 252 of 252")
    page.fill("#f-search", "EXAM")
    assert page.inner_text("#count") == "showing 252 of 252"
    page.fill("#f-search", "nowhere")
    assert page.inner_text("#count") == "showing 0 of 252" and page.locator("#rows tr").count() == 0
    page.fill("#f-search", "")
    page.select_option("#f-model_name", label="m2")
    assert page.inner_text("#count") == "showing 84 of 252"
    # an episode opened from a filtered list steps to its neighbours in that list
    page.click("#rows tr:nth-child(2) .c-maze_id a")
    page.wait_for_selector("body[data-ready='episode']")
    first = page.inner_text("#facts")
    assert page.inner_text("#title").startswith("m2 on example")
    page.click("#next")
    page.wait_for_selector("body[data-ready='episode']")
    assert page.inner_text("#title").startswith("m2 on example") and page.inner_text("#facts") != first
    page.go_back()
    page.go_back()
    page.wait_for_selector("body[data-ready='index']")
    assert page.inner_text("#count") == "showing 84 of 252"  # the list as it was left
    assert page.errors == []


def _poll(page, selector: str, text: str) -> bool:
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if page.inner_text(selector) == text:
            return True
        time.sleep(0.02)
    return False


@pytest.mark.slow
def test_an_episode_without_its_maze_or_steps_still_opens(tmp_path, example_maze, page):
    run = run_with_a_crash_and_no_mazes(tmp_path / "run", example_maze)
    build_view(run, progress=False)
    index = (run / "view" / "index.html").as_uri()
    _open(page, f"{index}#e=0", "episode")
    assert page.inner_text("#title") == "m on example (baseline)"
    assert "ActorDied: node lost" in page.inner_text("#error")
    assert page.inner_text("#step-label") == "step 0 / 0"
    _open(page, f"{index}#e=1", "episode")
    assert "not in the run's manifest" in page.inner_text("#no-frames") and not page.is_visible("#frame")
    page.keyboard.press("End")
    assert page.inner_text("#step-label") == "step 19 / 19"
    assert page.inner_text("#summary") == "(unavailable: maze not found)"
    assert page.errors == []
