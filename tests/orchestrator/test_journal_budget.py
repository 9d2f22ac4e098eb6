"""The parts that keep a sweep from paying twice, without Ray: the step journal (torn lines,
gaps, stale attempts, resume counts), the cost ledger, the adaptive concurrency, and the cost
estimate of a dry run."""

from __future__ import annotations

import asyncio

import pytest

from agents import Protocol, build_agent
from env import resolve_maze
from episodes.episode import run_episode
from orchestrator.budget import Concurrency, Ledger
from orchestrator.estimate import TYPICAL_TURNS, Observed, estimate
from orchestrator.sweep import load_sweep, parse_sweep
from traces import EpisodeIdentity, Journals


@pytest.fixture(scope="module")
def rows():
    maze = resolve_maze("example")
    identity = EpisodeIdentity(run="r", episode_id="e", model_name="m", model="builtin/oracle", condition="c",
                               repeat=0, maze_id=maze.id)
    result = asyncio.run(run_episode(maze, build_agent("builtin/oracle", Protocol()), Protocol(), identity))
    return [s.row() for s in result.steps]


def test_journal_keeps_the_valid_prefix_and_counts_resumptions(tmp_path, rows):
    w = Journals(tmp_path)
    assert w.append("e", 1, [Journals.step_line(r) for r in rows[:5]], sync=True)
    assert [r["step"] for r in Journals(tmp_path).read("e").rows] == [1, 2, 3, 4, 5]
    # a crash mid-write leaves a torn line: it and anything after it are ignored
    with open(w.path("e"), "a") as f:
        f.write(Journals.step_line(rows[5])[:40])
    assert len(Journals(tmp_path).read("e").rows) == 5
    # a second attempt continues from the first 4 steps: the fifth is dropped, a resume is counted
    w.start("e", 2, keep=4)
    j = Journals(tmp_path).read("e")
    assert len(j.rows) == 4 and j.resumed == 1 and j.steps[-1].step == 4
    # the dead attempt's late step is refused; the new attempt's steps go on from step 5
    assert not w.append("e", 1, [Journals.step_line(rows[4])], sync=False)
    assert w.append("e", 2, [Journals.step_line(r) for r in rows[4:7]], sync=False)
    w.start("e", 3, keep=7)
    j = Journals(tmp_path).read("e")
    assert len(j.rows) == 7 and j.resumed == 2
    # a gap ends the valid part
    w.append("e", 3, [Journals.step_line(rows[8])], sync=False)
    assert len(Journals(tmp_path).read("e").rows) == 7
    assert Journals(tmp_path).ids() == {"e"}
    w.start("e", 4, keep=0)  # nothing to continue from: the journal goes
    assert Journals(tmp_path).ids() == set() and Journals(tmp_path).read("e").rows == []
    w.append("f", 1, [Journals.step_line(rows[0])], sync=False)
    w.remove("f")
    assert not w.path("f").exists()


def test_journal_folder_is_the_run_folder_or_the_cache_for_object_storage(tmp_path, monkeypatch):
    assert Journals.of_run(tmp_path / "run").folder == tmp_path / "run" / "partial"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    remote = Journals.of_run("s3://bucket/runs/main").folder
    assert remote.parent == tmp_path / "cache" / "gridbench" / "partial"
    assert remote != Journals.of_run("s3://bucket/runs/other").folder


def test_ledger_counts_finished_and_journaled_spend_against_each_limit():
    ledger = Ledger(limits={"a": 1.0}, total_limit=1.5, finished={"a": 0.5})
    assert not ledger.exhausted("a") and not ledger.exhausted("b")
    ledger.add_step("a", "e1", 0.3)
    ledger.add_step("b", "e2", 0.4)
    assert ledger.spent("a") == pytest.approx(0.8) and not ledger.exhausted("a")
    ledger.add_step("a", "e1", 0.25)
    assert ledger.exhausted("a") and not ledger.exhausted("b")
    ledger.finish("a", "e1", 0.55)  # the episode's journaled cost becomes finished cost, not twice
    assert ledger.spent("a") == pytest.approx(1.05) and ledger.total() == pytest.approx(1.45)
    ledger.add_step("b", "e2", 0.1)
    assert ledger.exhausted("b")  # the run's own limit
    ledger.set_running("b", "e2", 0.2)  # a resumed attempt starts from its journal's cost
    assert ledger.snapshot()["b"] == {"spent": pytest.approx(0.2), "limit": None}


def test_concurrency_halves_on_rate_limits_once_per_burst_and_climbs_back():
    c = Concurrency(ceiling=8, cooldown_s=5.0)
    assert c.limit == 8
    c.rate_limited(retry_after=1.0, now=100.0)
    c.rate_limited(retry_after=1.0, now=100.5)  # the same burst
    assert c.limit == 4
    c.succeeded(10, now=101.0)  # still cooling down
    assert c.limit == 4
    c.rate_limited(retry_after=30.0, now=106.0)
    assert c.limit == 2
    c.succeeded(1, now=120.0)
    assert c.limit == 2  # Retry-After keeps it down longer than the cooldown
    for t in range(40):
        c.succeeded(1, now=140.0 + t)
    assert c.limit == 8 and [limit for _, limit, _ in c.history] == [8, 4, 2, 3, 4, 5, 6, 7, 8]
    c.rate_limited(now=500.0)
    c.rate_limited(now=600.0)
    c.rate_limited(now=700.0)
    c.rate_limited(now=800.0)
    assert c.limit == 1  # never below one


def test_estimate_bounds_calls_and_cost_from_the_protocol_and_the_price(maze_dir):
    sweep = parse_sweep({
        "name": "e", "mazes": [str(maze_dir / "keydoor-8.json")], "repeats": 2,
        "protocol": {"observation": "text", "thinking": False, "max_output_tokens": 100, "step_cap_factor": 2},
        "models": [{"name": "priced", "model": "openai/scripted", "api_base": "http://127.0.0.1:1/v1",
                    "price": {"input": 1e-6, "output": 2e-6}},
                   {"name": "unpriced", "model": "hosted_vllm/nobody-knows", "api_base": "http://127.0.0.1:1/v1"},
                   {"name": "oracle", "model": "builtin/oracle"}],
    }, "e.yaml")
    by = {e.name: e for e in estimate(sweep.episodes())}
    from env.oracle import solve

    cap = 2 * solve(resolve_maze(str(maze_dir / "keydoor-8.json"))).optimal_actions
    p = by["priced"]
    assert (p.episodes, p.calls_max, p.calls_typical, p.output_cap) == (2, 2 * cap, 2 * min(cap, TYPICAL_TURNS), 100)
    prompt = p.prompt_tokens_first / 2
    assert p.cost_max == pytest.approx(2 * cap * (prompt * 1e-6 + 100 * 2e-6))
    # the dearest one call (what a budget lets run on when it is reached: the preflight's balance check)
    assert p.cost_call_max == pytest.approx(prompt * 1e-6 + 100 * 2e-6)
    assert by["unpriced"].cost_call_max is None
    # no finished episodes and no study prior for a provider of unknown family: the typical figure is
    # unknown, never the cap presented as typical
    assert p.cost_typical is None and p.typical_source == "unknown"
    assert by["unpriced"].cost_max is None and "unknown" in by["unpriced"].price_source
    assert by["oracle"].calls_max == 0 and by["oracle"].cost_max == 0.0
    # a finished model's observed calls and output per call make the typical figure
    seen = Observed(episodes=4, calls=40, tokens_out=400)  # 10 calls an episode, 10 tokens a call
    typical = {e.name: e for e in estimate(sweep.episodes(), {"priced": seen})}["priced"]
    calls = min(cap, 10)
    assert typical.calls_typical == 2 * calls and typical.typical_source == "this run (4 episodes)"
    assert typical.cost_typical == pytest.approx(2 * calls * (prompt * 1e-6 + 10 * 2e-6))


def test_estimate_takes_the_study_prior_per_family_and_gpu_hours_for_self_hosted_models():
    """The study's realised usage (docs/providers.md) as the typical figure: Claude 1,097 output
    tokens over 37.52 queries an episode, Qwen's in GPU-hours at 48.0M tokens per 165 A100-hours."""
    sweep = load_sweep("main", mazes="example")
    by = {e.name: e for e in estimate(sweep.episodes())}
    claude, qwen = by["claude"], by["qwen"]
    assert claude.typical_source == "study: Claude Opus 4.8" and claude.output_typical == 1097
    assert claude.calls_typical == pytest.approx(min(1876 / 50, claude.calls_max))
    assert claude.cost_max is not None and claude.cost_typical is not None and claude.cost_typical < claude.cost_max / 20
    assert qwen.cost_max is None and qwen.price_source == "self-hosted" and qwen.gpus == 2
    calls = min(3045 / 50, qwen.calls_max)
    assert qwen.gpu_hours_typical == pytest.approx(calls * 15769 / (48.0e6 / 165))
    assert qwen.gpu_hours_max == pytest.approx(qwen.calls_max * 64000 / (48.0e6 / 165))
