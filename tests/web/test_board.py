"""``gridbench board``: two small runs, one with a step's action rewritten in its Parquet file; the
verdicts, their reuse, the site in a real browser, an export read back, a sealed run, bad input."""

from __future__ import annotations

import json
import shutil
from itertools import product
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from web_runs import HOSTILE_REPLIES, make_run

from agents import Protocol
from app.cli import main
from env import Maze
from traces import MANIFEST, open_store, read_manifest, read_run

ALTERED = "ep0000-example-random"  # beta's random walk: one of its actions is rewritten


def alter_one_action(steps_file: Path) -> int:
    """Turn the first left into a right (or right into left) in a steps file; returns that step."""
    table = pq.read_table(steps_file)
    actions = table.column("action").to_pylist()
    i = next(k for k, a in enumerate(actions) if a in ("left", "right"))
    actions[i] = "right" if actions[i] == "left" else "left"
    table = table.set_column(table.schema.get_field_index("action"), "action",
                             pa.array(actions, table.schema.field("action").type))
    pq.write_table(table, steps_file)
    return int(table.column("step")[i].as_py())


def board(capsys, *args: str) -> tuple[int, str, str]:
    return gridbench(capsys, "board", *args)


def gridbench(capsys, *args: str) -> tuple[int, str, str]:
    """The command in this process: its exit code, stdout and stderr."""
    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="session")
def runs(tmp_path_factory, example_maze):
    """alpha: the oracle and hostile replies; beta: a random walk (one action altered) and the
    oracle again: the oracle's two runs pool into one arm."""
    root = tmp_path_factory.mktemp("board-runs")
    alpha = make_run(root / "alpha", [(example_maze, "builtin/oracle", "baseline", 0),
                                      (example_maze, "hostile", "baseline", 0)])
    beta = make_run(root / "beta", [(example_maze, "builtin/random", "baseline", 1),
                                    (example_maze, "builtin/oracle", "baseline", 1)])
    step = alter_one_action(beta / "steps" / f"{ALTERED}.parquet")
    return alpha, beta, step


@pytest.fixture(scope="session")
def boarded(runs, tmp_path_factory):
    """The board of both runs, written by the command in a process of its own (its workers replay)."""
    import subprocess
    import sys

    alpha, beta, _ = runs
    out = tmp_path_factory.mktemp("board") / "site"
    done = subprocess.run([sys.executable, "-m", "app.cli", "board", str(alpha), str(beta), "--out", str(out),
                           "--workers", "2"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out, done


def arms_of(out: Path) -> dict[str, dict]:
    payload = json.loads((out / "board.json").read_text())
    return {a["arm"]: a for a in payload["arms"] + payload["sealed"]}


def test_the_altered_arm_is_unverified_and_names_the_episode_and_step(boarded, runs):
    out, done = boarded
    arms = arms_of(out)
    assert {a: arms[a]["verified"] for a in arms} == {"hostile": True, "oracle": True, "random": False}
    (failed,) = arms["random"]["not_reproduced"]
    assert (failed["run"], failed["episode_id"], failed["step"]) == ("beta", ALTERED, runs[2])
    assert arms["oracle"]["runs"] == ["alpha", "beta"] and arms["oracle"]["pooled"]  # same protocol, mazes, model
    assert arms["oracle"]["scores"]["efficiency"] == 1.0 and arms["oracle"]["scores"]["solves"] == 2
    assert f"episode {ALTERED} departs at step {runs[2]}" in done.stderr
    assert "verifying episodes: 4/4" in done.stderr  # the progress, as lines where stderr is no terminal
    comparisons = json.loads((out / "board.json").read_text())["comparisons"]
    assert {(c["arm_a"], c["arm_b"]) for c in comparisons} == {("oracle", "random")}  # references among themselves


def test_a_second_board_reuses_its_verdicts_and_replays_only_a_changed_trace(boarded, runs, tmp_path, capsys):
    out, _ = boarded
    alpha, beta, _ = runs
    again = tmp_path / "site"
    shutil.copytree(out, again)
    code, said, _ = board(capsys, str(alpha), str(beta), "--out", str(again), "--workers", "1")
    assert code == 0 and "0 episodes replayed, 4 verdicts reused" in said
    changed = shutil.copytree(beta, tmp_path / "beta")  # the same episodes; the oracle's trace now altered
    alter_one_action(changed / "steps" / "ep0001-example-oracle.parquet")
    code, said, _ = board(capsys, str(alpha), str(changed), "--out", str(again), "--workers", "1")
    assert code == 0 and "1 episodes replayed, 3 verdicts reused" in said
    assert not arms_of(again)["oracle"]["verified"]


@pytest.mark.slow
def test_the_site_opens_from_disk_with_no_network_and_shows_replies_as_text(boarded, page):
    out, _ = boarded
    asked = []
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith("file:") else (asked.append(r.request.url),
                                                                                          r.abort()))
    page.goto((out / "index.html").as_uri())
    page.wait_for_selector("body[data-ready=board]")
    rows = page.inner_text("#arms tbody")
    assert "not verified" in rows and rows.count("verified") == 3
    assert ALTERED in page.inner_text("#failures")
    page.goto((out / "diff.html").as_uri())
    page.wait_for_selector("body[data-ready=steps]")
    replies = page.locator("#steps td.reply").all_text_contents()
    assert any(r.startswith(HOSTILE_REPLIES[0][:20]) for r in replies)
    assert page.eval_on_selector_all("#steps td.reply", "cells => cells.every(c => c.children.length === 0)")
    assert "<i>thinking</i>" in page.get_attribute("#steps td.reply", "title")  # the reasoning, as a title
    page.select_option("#arm-b", label="random (not verified)")
    page.wait_for_selector("#departs:has-text('part at step')")
    assert page.evaluate("window.__pwned") is None
    assert page.errors == [] and asked == []


@pytest.mark.slow
def test_an_exported_run_gives_the_same_board(boarded, runs, tmp_path, capsys):
    out, _ = boarded
    alpha, beta, _ = runs
    exported = []
    for run in (alpha, beta):
        main(["export", str(run), "--out", str(tmp_path / "hf" / run.name)])
        exported.append(str(tmp_path / "hf" / run.name))
    capsys.readouterr()
    code, _, err = board(capsys, *exported, "--out", str(tmp_path / "site"), "--workers", "1")
    assert code == 0, err
    assert json.loads((tmp_path / "site" / "board.json").read_text()) == json.loads((out / "board.json").read_text())


@pytest.fixture(scope="session")
def sealed_run(sealed_set, tmp_path_factory) -> tuple[Path, list[Maze]]:
    """A run on the sealed set, its seal found as a sweep finds it: the oracle on the set's first
    maze, and on its second an agent whose replies name the maze and draw its grid."""
    from orchestrator.sweep import parse_sweep

    sweep = parse_sweep({"name": "blind", "mazes": str(sealed_set[0]), "models": ["builtin/oracle"]})
    first, second = sweep.sources[:2]
    run = make_run(tmp_path_factory.mktemp("sealed-run") / "blind", [(first, "builtin/oracle", "baseline", 0),
                                                                       (second, "describer", "baseline", 0)],
                   prefix="s", sealed=sweep.sealed)
    return run, sweep.sources


def test_a_sealed_sets_run_is_on_the_board_with_its_commitment_and_unsealing_verifies_it(
        sealed_set, sealed_run, runs, example_maze, tmp_path, capsys):
    """Issue 43: a sealed set's run appears on the board with its commitment; unsealing verifies it."""
    folder, public, _ = sealed_set
    saved = Path(shutil.copy(public, tmp_path / "saved.json"))  # the commitment as published when sealed
    committed = {"commitment": json.loads(saved.read_text())["commitment"], "set": "blind3"}
    run, mazes = sealed_run
    out = tmp_path / "site"
    code, _, err = board(capsys, str(runs[0]), str(run), "--out", str(out), "--workers", "1")
    assert code == 0, err
    payload = json.loads((out / "board.json").read_text())
    assert {a["arm"]: (a["sealed"], a["verified"], a["scores"]["solves"]) for a in payload["sealed"]} == {
        "oracle (sealed blind3)": (committed, True, 1), "describer (sealed blind3)": (committed, True, 1)}
    assert {a["arm"]: a["runs"] for a in payload["arms"]} == {"oracle": ["alpha"], "hostile": ["alpha"]}
    _, steps = read_run(run)
    said = {v for v in pd.concat([steps["reply"], steps["reasoning"]]).dropna() if v}
    assert len(said) > 10  # the describer's replies and reasoning, each naming its maze
    # a maze id (p0001) as the pages' JSON holds a value, or inside an episode id of this run (the public
    # run's ep0001-... holds it as a substring); a grid's rows that the public maze has none of
    public_rows = set(example_maze.grid)
    secrets = {*said, *(secret for m in mazes for secret in (json.dumps(m.id), f"-{m.id}-", m.checksum)),
               *(json.dumps(row) for m in mazes for row in m.grid if row not in public_rows)}
    assert len(secrets) > len(said) + 3 * len(mazes)
    site = {p: p.read_text(encoding="utf-8") for p in out.rglob("*") if p.is_file()}
    assert len(site) > 5 and not {(p.name, s) for p, s in product(site, secrets) if s in site[p]}
    assert committed["commitment"] in site[out / "board.json"] and "docs/sealed.md" in site[out / "index.html"]

    code, _, err = gridbench(capsys, "pool", "unseal", str(folder), "--out", str(tmp_path / "open"),
                             "--commitment", str(saved), "--workers", "1")
    assert code == 0, err
    code, checked, err = gridbench(capsys, "pool", "verify-commitment", str(tmp_path / "open"), "--commitment",
                                   str(saved), "--workers", "1")
    assert code == 0 and f"reproduce commitment {committed['commitment']}" in " ".join(checked.split()), err
    revealed = json.loads((tmp_path / "open" / "manifest.json").read_text())
    assert set(read_manifest(run)["mazes"]) < {e["checksum"] for e in revealed["mazes"]}  # the run's mazes are the set's


def test_a_sealed_run_that_does_not_reproduce_is_named_without_its_values(sealed_run, tmp_path, capsys):
    run = shutil.copytree(sealed_run[0], tmp_path / "blind")
    alter_one_action(run / "steps" / f"s0000-{sealed_run[1][0].id}-oracle.parquet")
    out = tmp_path / "site"
    code, _, err = board(capsys, str(run), "--out", str(out), "--workers", "1")
    (failed,) = arms_of(out)["oracle (sealed blind3)"]["not_reproduced"]
    assert code == 0 and set(failed) == {"run", "episode_id", "step", "column"}  # no recorded or replayed values
    manifest = read_manifest(run)
    bad = dict(manifest, sealed={"commitment": "not hex", "set": "blind3"})
    open_store(run).put(MANIFEST, json.dumps(bad).encode())
    code, _, err = board(capsys, str(run), "--out", str(tmp_path / "other"))
    assert code == 2 and err.count("\n") == 1 and "manifest.json" in err and "sealed" in err
    assert not (tmp_path / "other").exists()


@pytest.mark.parametrize("command,written", [("report", "report.html"), ("view", "index.html")])
def test_a_report_or_viewer_of_a_sealed_run_warns_that_it_shows_the_sets_mazes(sealed_run, tmp_path, capsys, command,
                                                                               written):
    code, _, err = gridbench(capsys, command, str(sealed_run[0]), "--out", str(tmp_path / command))
    assert code == 0 and (tmp_path / command / written).is_file(), err
    (warning,) = [line for line in err.splitlines() if line.startswith("warning:")]
    assert f"the sealed set blind3: the {'viewer' if command == 'view' else 'report'} shows its mazes" in warning

def test_bad_input_is_one_line_and_writes_nothing(runs, tmp_path, capsys):
    alpha, _, _ = runs
    (tmp_path / "empty").mkdir()
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for args, named in (([str(tmp_path / "empty")], "empty"), ([str(tmp_path / "missing")], "missing"),
                        ([str(alpha), "--out", str(a_file)], "--out"),
                        ([str(alpha), "--out", str(a_file / "below")], "--out")):
        out = ["--out", str(tmp_path / "site")] if "--out" not in args else []
        code, _, err = board(capsys, *args, *out)
        assert code == 2 and err.count("\n") == 1 and named in err, err
    assert not (tmp_path / "site").exists()


def test_runs_of_one_arm_under_different_protocols_are_rows_of_their_own(runs, example_maze, tmp_path, capsys):
    alpha, _, _ = runs
    gamma = make_run(tmp_path / "gamma", [(example_maze, "builtin/oracle", "baseline", 0)],
                     protocol=Protocol.preset("gridbench-baseline"))
    code, _, err = board(capsys, str(alpha), str(gamma), "--out", str(tmp_path / "site"), "--workers", "1",
                         "--gpu-hour-usd", "2")
    assert code == 0, err
    arms = arms_of(tmp_path / "site")
    assert {"alpha/oracle", "gamma/oracle"} <= set(arms)
    assert arms["gamma/oracle"]["note"] == "not pooled across runs alpha, gamma: their protocol differs"
    assert arms["gamma/oracle"]["provenance"]["protocol_hash"] != arms["alpha/oracle"]["provenance"]["protocol_hash"]
