"""``gridbench calibrate`` on the `frontier` sweep against the scripted server's provider personas
(OpenAI's reasoning models for the sample's Terra and for Astra, Anthropic for Opus 5.5), on a
real local Ray: the printed projection is the product of what the runs measured, recomputed here
from their traces; `run --dry-run` then takes its typical figure from the stored calibration; a
paid calibration needs --max-cost, and --max-cost stops it."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd
import pytest
import yaml

from app.cli import main
from env.oracle import solve
from episodes.termination import step_cap_for
from orchestrator.calibration import (
    Calibration,
    Profile,
    QueriesPerEpisode,
    load,
    probe_maze,
    save,
    typical_for,
)
from orchestrator.estimate import price_of
from orchestrator.sweep import SWEEPS_DIR, load_sweep, model_conditions
from testing.scripted_server import ScriptedServer
from traces import open_store

MAZES = Path(__file__).resolve().parent / "mazes"
TEST_KEY_ENV = "GRIDBENCH_TEST_SCRIPTED_KEY"  # set (to a fake key) by conftest's ray_cluster before Ray starts
# three sample mazes of 10, 11 and 19 actions: the probe plays the median, scale-10
SAMPLE_MAZES = [str(MAZES / n) for n in ("switch-8.json", "scale-10.json", "distract-10.json")]
FAST = {"timeout": 30, "retries": 2}


def shipped(name: str) -> dict:
    return yaml.safe_load((SWEEPS_DIR / f"{name}.yaml").read_text())


def write_sweeps(tmp_path: Path, terra_url: str, astra_url: str, opus_url: str) -> tuple[Path, Path]:
    """The shipped `frontier` and `calibrate` sweeps as they are, pointed at the personas: each
    entry gets the server's address and the test key; the sample gets three small mazes."""
    frontier, sample = shipped("frontier"), shipped("calibrate")
    for entry, url in zip(frontier["models"], (astra_url, opus_url), strict=True):
        entry.update(api_base=url, api_key_env=TEST_KEY_ENV)
        entry["params"] = {**entry.get("params", {}), **FAST}
    (terra,) = sample["models"]
    terra.update(api_base=terra_url, api_key_env=TEST_KEY_ENV)
    terra["params"] = {**terra["params"], **FAST}
    sample["mazes"] = SAMPLE_MAZES
    paths = tmp_path / "frontier.yaml", tmp_path / "calibrate.yaml"
    for path, data in zip(paths, (frontier, sample), strict=True):
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return paths


def cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def usd(v: float) -> str:
    return f"${v:,.4f}" if v < 1 else f"${v:,.2f}"


@pytest.mark.slow
def test_calibrate_projects_the_frontier_sweep_from_what_it_measured(ray_cluster, tmp_path, capsys):
    out = tmp_path / "results"
    with ScriptedServer(mode="oracle", mazes=SAMPLE_MAZES, persona="openai-reasoning", model="gpt-5.6-terra") as terra, \
            ScriptedServer(mode="oracle", mazes=SAMPLE_MAZES, persona="openai-reasoning", model="gpt-6-astra") as astra, \
            ScriptedServer(mode="oracle", mazes=SAMPLE_MAZES, model="claude-opus-5-5") as opus:
        frontier, sample = write_sweeps(tmp_path, terra.url, astra.url, opus.url.removesuffix("/v1"))
        base = ["calibrate", str(frontier), "--sample", str(sample), "--out", str(out)]

        # a paid calibration shows its bound and refuses to start without --max-cost
        code, shown, err = cli(base, capsys)
        assert code == 2 and "--max-cost" in err and "upper bound $" in err
        assert "what calibrate runs and may spend" in shown
        assert not terra.chat_requests and not astra.chat_requests and not out.exists()

        # --max-cost stops it: the sample runs out of budget, nothing is probed or stored
        code, _, err = cli([*base, "--max-cost", "0.0001"], capsys)
        assert code == 1 and "the sample did not finish" in err
        assert terra.chat_requests and not astra.chat_requests and not opus.chat_requests
        assert not (out / "calibration").exists()

        # with room, the sample goes on where it stopped, then the probe
        code, table, err = cli([*base, "--max-cost", "5"], capsys)
        assert code == 0, err
        answered = {name: sum(r.answered for r in srv.chat_requests)
                    for name, srv in (("terra", terra), ("astra", astra), ("opus55", opus))}
    cal = json.loads((out / "calibration" / "frontier.json").read_text())
    assert cal["sample"]["run"].endswith("calibrate") and cal["command"][:2] == ["gridbench", "calibrate"]

    # queries per episode, from the sample's traces
    sample_eps = pd.read_parquet(out / "calibrate" / "episodes")
    calls = sorted(int(c) for c in sample_eps["calls"])
    # the oracle's optimal counts; each call paid once across the stop and the resume
    assert calls == [10, 11, 19] and sum(calls) == answered["terra"]
    mean, p90 = statistics.fmean(calls), statistics.quantiles(calls, n=10, method="inclusive")[-1]
    assert cal["queries_per_episode"] == pytest.approx({"episodes": 3, "mean": mean, "p90": p90, "max": 19})

    # USD per query of each arm, from the probe's steps at the entry's price and tier (half, both)
    steps = pd.read_parquet(out / "frontier-probe" / "steps")
    assert set(steps["maze_id"]) == {"scale-10"} and cal["probe"]["maze_id"] == "scale-10"
    entries = {m["name"]: m for m in shipped("frontier")["models"]}
    per_query = {}
    for arm in ("astra", "opus55"):
        mine = steps[steps["model_name"] == arm]
        n = int(mine["calls"].sum())
        assert n == answered[arm] == 11
        price = entries[arm]["price"]
        cached = int(mine["tokens_cached"].sum())
        standard = ((int(mine["tokens_in"].sum()) - cached) * price["input"]
                    + cached * price.get("cached_input", price["input"]) + int(mine["tokens_out"].sum()) * price["output"])
        per_query[arm] = 0.5 * standard / n
        profile = next(p for p in cal["profiles"] if p["arm"] == arm)
        assert profile["usd_per_query"] == pytest.approx(per_query[arm], rel=1e-9)
        assert profile["output_per_query"] == pytest.approx(mine["tokens_out"].sum() / n)
        assert profile["tier"] == entries[arm]["tier"]

    # the projection over frontier's 50 episodes per arm: USD per query x queries, each episode's
    # queries at most its step cap times the calls a turn may make (the study's requery: 3)
    target = load_sweep(frontier)
    caps = [step_cap_for(solve(s.maze).optimal_actions or 0, s.condition.protocol.step_cap_factor)
            * s.condition.protocol.calls_per_turn for s in target.episodes() if s.model.name == "astra"]
    assert len(caps) == 50 and {s.condition.protocol.calls_per_turn for s in target.episodes()} == {3}
    queries = {"mean": sum(min(mean, c) for c in caps), "p90": sum(min(p90, c) for c in caps), "cap": sum(caps)}
    suggested = 0.0
    for arm in ("astra", "opus55"):
        row = next(p for p in cal["projections"] if p["arm"] == arm)
        assert row["episodes"] == 50
        assert row["queries"] == pytest.approx(queries)
        expected = {k: q * per_query[arm] for k, q in queries.items()}
        assert row["usd"] == pytest.approx(expected, rel=1e-9)
        assert expected["mean"] < expected["p90"] < expected["cap"]
        assert row["suggested_max_cost"] >= expected["cap"] > row["suggested_max_cost"] - 0.01
        suggested += row["suggested_max_cost"]
        for scenario in ("mean", "p90", "cap"):  # the human table prints the same figures
            assert usd(expected[scenario]) in table, (arm, scenario)
    assert cal["suggested_max_cost"] == pytest.approx(suggested)
    assert f"--max-cost {cal['suggested_max_cost']:.2f}" in table

    # the dry run's typical figure is the calibration's: the sample's mean queries per episode
    # (within each episode's cap) at the probe's output tokens per query
    code, shown, err = cli(["run", str(frontier), "--dry-run", "--json", "--out", str(out)], capsys)
    assert code == 0, err
    dry = json.loads(shown)
    for arm in ("astra", "opus55"):
        row = next(e for e in dry["estimate"] if e["name"] == arm)
        profile = next(p for p in cal["profiles"] if p["arm"] == arm)
        assert row["typical_source"].startswith("calibration")
        assert row["calls_typical"] == pytest.approx(queries["mean"])
        assert row["output_typical"] == pytest.approx(profile["output_per_query"])
        # its cost is the calibration's mean scenario
        assert row["cost_typical"] == pytest.approx(queries["mean"] * per_query[arm], rel=1e-9)
    assert any(line.startswith("calibration:") for line in dry["assumptions"])


def test_the_probe_plays_the_samples_maze_of_median_length():
    mazes = load_sweep("calibrate").mazes
    lengths = {m.id: solve(m).optimal_actions for m in mazes}
    median = statistics.median(lengths.values())
    assert len(lengths) == 5 and probe_maze(mazes).id == min(i for i, n in lengths.items() if n == median)


def stored(sweep) -> Calibration:
    """A calibration of ``sweep`` as `gridbench calibrate` stores it, with made-up measurements."""
    profiles = [Profile(m.name, c.name, m.identity(), c.protocol.hash, m.config.tier, episodes=1, calls=10,
                        tokens_in=4000, tokens_cached=1000, tokens_out=300, tokens_reasoning=100, spent_usd=0.0,
                        usd_per_query=None, usd_per_query_standard=None, price_source="sweep price")
                for m in sweep.models for c in model_conditions(m, sweep.conditions)]
    return Calibration(sweep.name, sweep.source, "2026-12-03T12:00:00+00:00", "0", ["gridbench", "calibrate"],
                       {"sweep": "calibrate"}, {"maze_id": "m"}, QueriesPerEpisode(5, 40.0, 55.0, 60), profiles, [])


def test_a_stored_calibration_describes_only_the_arms_as_they_were_probed(tmp_path):
    frontier = load_sweep("frontier")
    root = open_store(tmp_path)
    save(root, stored(frontier))
    cal = load(root, "frontier")
    assert cal is not None and cal.to_dict() == stored(frontier).to_dict()
    typical = typical_for(cal, frontier)
    assert set(typical) == {("astra", "default"), ("opus55", "default")}
    for (arm, _), t in typical.items():
        price, _ = price_of(next(m for m in frontier.models if m.name == arm))
        assert (t.calls_per_episode, t.output_per_call) == (40.0, 30.0)
        assert t.usd_per_call_standard == pytest.approx(
            (3000 * price.input + 1000 * (price.cached_input or price.input) + 300 * price.output) / 10)
    # an arm whose request changed since (another effort) is not what was probed; a price edited
    # since prices the measured tokens again
    data = shipped("frontier")
    data["models"][0]["protocol"] = {"effort": "high"}
    data["models"][1]["price"] = {"input": 1.0e-6, "output": 1.0e-6}
    path = tmp_path / "frontier.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    changed = typical_for(cal, load_sweep(path))
    assert set(changed) == {("opus55", "default")}
    assert changed[("opus55", "default")].usd_per_call_standard == pytest.approx(4300 * 1.0e-6 / 10)


def test_a_broken_calibration_is_one_line_naming_the_file_and_field(tmp_path, capsys):
    (tmp_path / "calibration").mkdir()
    (tmp_path / "calibration" / "frontier.json").write_text(json.dumps({"format": "gridbench.calibration/1"}))
    code, out, err = cli(["run", "frontier", "--dry-run", "--out", str(tmp_path)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "calibration/frontier.json: sweep:" in err and not (tmp_path / "frontier").exists()


def test_the_dry_run_shows_what_calibrate_would_run_and_its_bound(tmp_path, capsys):
    code, shown, err = cli(["calibrate", "frontier", "--dry-run", "--json", "--out", str(tmp_path)], capsys)
    assert code == 0, err
    plan = json.loads(shown)
    median = probe_maze(load_sweep("calibrate").mazes)
    assert plan["probe_maze"] == median.id and plan["sample"] == "calibrate"
    assert [(row["run"], row["name"], row["episodes"]) for row in plan["plan"]] == [
        ("sample", "terra", 5), ("probe", "astra", 1), ("probe", "opus55", 1)]
    # opus55 is probed at standard (one batch round a query would take a batch window each)
    assert [row["tier"] for row in plan["plan"]] == ["standard", "flex", "standard"]
    assert plan["upper_bound"] == pytest.approx(sum(row["cost_max"] for row in plan["plan"]))
    assert not list(tmp_path.iterdir())  # nothing written, nothing called

