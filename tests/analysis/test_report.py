"""`gridbench report` end to end on real runs of the built-in agents.

The fast run plays episodes with ``episodes.episode.run_episode`` and writes them with
``traces.write_episode`` (no Ray); the slow test runs a sweep through
``gridbench run`` on a real local Ray and reports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from golden import MAZES, builtin_runs
from PIL import Image
from tracefab import episode_row, write_run

from agents import build_agent
from episodes.episode import run_episode
from traces import write_episode, write_manifest


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app.cli", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """Built-in agents on the test mazes under two conditions (the random agent's seed differs)."""
    (run,) = builtin_runs(tmp_path_factory.mktemp("results"))
    return run


def _check_report_folder(report: Path, episodes: pd.DataFrame) -> dict:
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["format"] == "gridbench.report/1"
    for name in metrics["figures"]:
        with Image.open(report / name) as im:
            assert im.format == "PNG" and im.width >= 600 and im.height >= 200
    for name, rows in metrics["tables"].items():
        csv = pd.read_csv(report / f"{name}.csv")
        assert len(csv) == len(rows), name
    html = (report / "report.html").read_text()
    assert html.count("data:image/png;base64,") == len(metrics["figures"])
    assert "src=\"http" not in html and "src='http" not in html  # self-contained
    md = (report / "report.md").read_text()
    for name in metrics["figures"]:
        assert f"({name})" in md
    h = metrics["headline"]
    ok = episodes[episodes["termination"] != "error"]
    builtin = ok["model"].str.startswith("builtin/")  # references: counted apart from the models
    assert h["episodes"] == int((~builtin).sum()) and h["solves"] == int(ok.loc[~builtin, "solved"].sum())
    assert sum(r["episodes"] for r in h["references"].values()) == int(builtin.sum())
    return metrics


@pytest.mark.slow
def test_report_of_builtin_agents(run_dir):
    r = _cli("report", str(run_dir))
    assert r.returncode == 0, r.stderr
    # the models' counts (none here), each built-in agent's solves apart
    assert r.stdout.strip().startswith("0 episodes, 0 solved (references apart: ") and "oracle [baseline] 6/6" in r.stdout
    report = run_dir / "report"
    metrics = _check_report_folder(report, pd.read_parquet(run_dir / "episodes"))
    tables = metrics["tables"]
    assert {"solves", "bands", "difficulty_axes", "verbs", "live_switch", "quarters", "tokens", "regret",
            "horizon", "ablation", "terminations"} <= set(tables)
    assert {"solves.png", "horizon.png", "regret.png", "ablation.png"} <= set(metrics["figures"])
    assert tables["bands"] == [] and "bands.png" not in metrics["figures"]  # references only: no model to band
    by_arm = {row["arm"]: row for row in tables["solves"]}
    assert by_arm["oracle [baseline]"]["solve_rate"] == 1.0
    regret = {row["arm"]: row for row in tables["regret"]}
    assert regret["oracle [baseline]"]["progress_share"] == 1.0  # the oracle never wastes a step
    verbs = {row["arm"]: row for row in tables["verbs"]}
    assert verbs["oracle [baseline]"]["pickup_efficiency"] == 1.0
    assert metrics["headline"]["mazes_unresolved"] == []  # mazes came from the manifest
    ablation = {(row["model_name"], row["condition"]): row for row in tables["ablation"]}
    oracle = ablation[("oracle", "reseeded")]
    assert oracle["mazes"] == 6 and oracle["progress_diff"] == 0.0 and oracle["solve_rate_diff"] == 0.0

    # a folder that is not a report is never replaced (an earlier report is: see the next test)
    r = _cli("report", str(run_dir), "--out", str(run_dir / "episodes"))
    assert r.returncode == 2 and "not a gridbench report" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert any((run_dir / "episodes").glob("*.parquet"))


@pytest.mark.slow
def test_several_runs_in_one_report(run_dir, tmp_path):
    human = tmp_path / "human"
    for f in ("episodes", "steps"):
        (human / f).mkdir(parents=True)
        for p in (run_dir / f).glob("oracle-*baseline.parquet"):
            t = pd.read_parquet(p)
            t["run"], t["model"] = "human", "human/oracle"  # a person: compared like a model
            t.to_parquet(human / f / p.name)
    (tmp_path / "both").mkdir()
    (tmp_path / "both" / "metrics.json").write_text('{"format": "gridbench.report/1"}')
    (tmp_path / "both" / "stale.png").write_bytes(b"old")
    r = _cli("report", str(run_dir), str(human), "--out", str(tmp_path / "both"))
    assert r.returncode == 0, r.stderr
    metrics = json.loads((tmp_path / "both" / "metrics.json").read_text())
    solves = pd.DataFrame(metrics["tables"]["solves"])
    assert set(solves["run"]) == {"builtin", "human"}  # one model arm (the person): nothing pooled
    assert "human/oracle [baseline]" in set(solves["arm"])
    assert metrics["headline"]["runs"] == ["builtin", "human"]
    assert not (tmp_path / "both" / "stale.png").exists()  # an earlier report is replaced whole


def test_bad_run_folders_are_one_line_exit_2(tmp_path):
    r = _cli("report", str(tmp_path / "missing"))
    assert r.returncode == 2 and "missing" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    (tmp_path / "empty" / "episodes").mkdir(parents=True)
    r = _cli("report", str(tmp_path / "empty"))
    assert r.returncode == 2 and "no finished episodes" in r.stderr
    (tmp_path / "broken" / "episodes").mkdir(parents=True)
    (tmp_path / "broken" / "episodes" / "x.parquet").write_bytes(b"not parquet")
    r = _cli("report", str(tmp_path / "broken"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "broken" / "report").exists()
    # the steps are read only once the report starts: a damaged steps file is one line too
    write_run(tmp_path / "badsteps", [episode_row()], [])
    (tmp_path / "badsteps" / "steps" / "y.parquet").write_bytes(b"not parquet either")
    r = _cli("report", str(tmp_path / "badsteps"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "steps" in r.stderr and "unreadable trace files" in r.stderr
    assert not (tmp_path / "badsteps" / "report").exists()
    write_run(tmp_path / "errors", [episode_row(termination="error", error_class="RateLimitError")], [])
    r = _cli("report", str(tmp_path / "errors"))
    assert r.returncode == 2 and "ended in error" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "errors" / "report").exists()


@pytest.mark.slow
def test_gridbench_run_then_report(tmp_path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(textwrap.dedent(f"""\
        name: tiny
        mazes: {MAZES}
        models:
          - {{name: oracle, model: builtin/oracle}}
          - {{name: random, model: builtin/random}}
        conditions:
          - {{name: baseline}}
          - {{name: text, observation: text}}
        """))
    r = _cli("run", str(sweep), "--out", str(tmp_path / "results"))
    assert r.returncode == 0, r.stderr[-2000:]
    run = tmp_path / "results" / "tiny"
    r = _cli("report", str(run))
    assert r.returncode == 0, r.stderr
    metrics = _check_report_folder(run / "report", pd.read_parquet(run / "episodes"))
    assert metrics["headline"]["episodes"] == 0  # built-in agents: references, not models
    assert sum(r["episodes"] for r in metrics["headline"]["references"].values()) == 2 * 2 * 6
    assert {row["condition"] for row in metrics["tables"]["ablation"]} == {"text"}


# ---- the shipped main sweep, its models played by scripted OpenAI-compatible servers --------
# from the eval set, by what they hold: an 8x8 switch-gate maze, two keys and doors, 10x10 and 14x14 walks
SCRIPTED_KINDS = (
    lambda e: e["grid"] == "8x8" and e["counts"]["switch"] > 0 and e["counts"]["gate"] > 0,
    lambda e: e["counts"]["key"] == 2 and e["counts"]["door"] == 2,
    lambda e: e["grid"] == "10x10" and e["category"] == "scale",
    lambda e: e["grid"] == "14x14" and e["category"] == "scale",
)


def scripted_mazes() -> list[str]:
    from env.sets import set_entries

    entries = set_entries("eval")
    return [next(e["id"] for e in entries if kind(e)) for kind in SCRIPTED_KINDS]
SECTIONS = ("overview", "study", "solves", "progress", "bands", "difficulty", "failure", "onset", "compute",
            "regret")


def _scripted_replies(weights: list[float], words: tuple[int, int], seed: int, n: int = 3000) -> list[dict]:
    """Replies with reasoning of varied length and actions drawn with the given weights."""
    import random

    rng = random.Random(seed)
    names = ["left", "right", "forward", "pickup", "toggle", "done"]
    out = []
    for _ in range(n):
        action = rng.choices(names, weights)[0]
        out.append({"reply": f"I will try {action}.\nACTION: {action}",
                    "reasoning": "I compare this frame with the last one. " * rng.randint(*words)})
    return out


@pytest.fixture(scope="module")
def scripted_main_run(tmp_path_factory):
    """The shipped `main` sweep on four eval mazes, each model an OpenAI-compatible scripted server:
    one wanders forward-heavy and thinks little, one turns a lot and thinks at length, one plays
    the oracle. Episodes run as the driver runs them (`run_episode`, traces written per episode),
    without Ray."""
    import yaml

    from env.sets import set_dir
    from orchestrator.sweep import SWEEPS_DIR, load_sweep
    from testing.scripted_server import ScriptedServer

    root = tmp_path_factory.mktemp("scripted")
    mazes = root / "mazes"
    mazes.mkdir()
    for mid in scripted_mazes():
        (mazes / f"{mid}.json").write_text((set_dir("eval") / f"{mid}.json").read_text())
    servers = {
        "claude": ScriptedServer(_scripted_replies([1, 1, 6, 1, 1, 0.1], (2, 30), seed=1)),
        "kimi": ScriptedServer(_scripted_replies([3, 3, 4, 1, 1, 0.1], (40, 300), seed=2)),
        "qwen": ScriptedServer(mode="oracle", mazes=str(mazes)),
    }
    sweep_data = yaml.safe_load((SWEEPS_DIR / "main.yaml").read_text())
    assert [m["name"] for m in sweep_data["models"]] == list(servers)
    out = root / "results" / "main"
    with contextlib.ExitStack() as stack:
        for srv in servers.values():
            stack.enter_context(srv)
        sweep_data["models"] = [{"name": n, "model": f"openai/{n}", "api_base": s.url, "client": "openai",
                                 "price": {"input": 1e-6, "output": 4e-6}} for n, s in servers.items()]
        (root / "main.yaml").write_text(yaml.safe_dump(sweep_data))
        sweep = load_sweep(root / "main.yaml", mazes=str(mazes))

        async def play(spec):
            agent = build_agent(spec.model.config, spec.condition.protocol, seed=spec.seed)
            try:
                result = await run_episode(spec.maze, agent, spec.condition.protocol, spec.identity("main"))
            finally:
                await agent.aclose()
            write_episode(out, result)

        async def play_all():
            await asyncio.gather(*(play(spec) for spec in sweep.episodes()))

        asyncio.run(play_all())
    write_manifest(out, run="main", sweep=sweep.resolved(), mazes={m.checksum: m.to_dict() for m in sweep.mazes},
                   invocation={"command": ["test"]})
    return out


@pytest.mark.slow
def test_report_of_the_main_sweep_has_every_section_and_the_study_comparison(scripted_main_run):
    from analysis.study import FINDINGS

    run = scripted_main_run
    episodes = pd.read_parquet(run / "episodes")
    assert len(episodes) == 3 * len(scripted_mazes()) and (episodes["termination"] != "error").all()
    r = _cli("report", str(run))
    assert r.returncode == 0, r.stderr
    report = run / "report"
    metrics = _check_report_folder(report, episodes)
    assert set(SECTIONS) <= set(metrics["definitions"])
    html = (report / "report.html").read_text()
    md = (report / "report.md").read_text()
    for key in SECTIONS:
        assert f"<h2 id='{key}'>" in html
    # the headline table per arm opens the report, before the first detailed section
    assert html.index(">overview <small>") < html.index("<h2 id='solves'>")
    assert md.index("**overview**") < md.index("## Solves")
    # section texts are markdown: inline code and emphasis render, no backticks show
    assert "<code>progress_action</code>" in html and "<strong>Definition used:</strong>" in html
    body = html.split("<body>", 1)[1]
    assert "`" not in body.replace("data:image", "")

    tables = metrics["tables"]
    assert {"overview", "budgets", "study_findings", "near_goal", "failure_onset", "failure_onset_episodes",
            "thinking_quarters", "thinking_after"} <= set(tables)
    assert {"near_goal.png", "failure_onset.png", "thinking_quarters.png", "thinking_after.png"} <= set(
        metrics["figures"])
    assert {row["definition"] for row in tables["thinking_after"]} == {"state", "distance"}
    assert {row["arm"] for row in tables["overview"]} == {"claude", "kimi", "qwen", "all"}
    h = metrics["headline"]
    assert {"ended_near_unsolved", "near_unsolved", "budget_warnings", "solves_with_key_door"} <= set(h)
    assert h["budget_warnings"] == []  # budgets are not in these traces: nothing to compare

    # the study's findings beside this run's, in the report and in metrics.json
    findings = metrics["study_findings"]
    assert list(findings) == [f.key for f in FINDINGS] == [row["key"] for row in tables["study_findings"]]
    for key, f in findings.items():
        assert f["study"] and f["this_run"] and f["this_run"] != "not computed for this run", key
    assert findings["solves"]["this_run"].startswith(f"{h['solves']} of {h['episodes']} episodes")
    assert findings["solves"]["values"]["per_arm"]["qwen"] == len(scripted_mazes())  # the oracle server solves all
    solves = {row["arm"]: row["solves"] for row in tables["solves"]}
    assert findings["solves"]["values"]["per_arm"] == {a: solves[a] for a in ("claude", "kimi", "qwen")}
    assert "6 of 150" in findings["solves"]["study"]
