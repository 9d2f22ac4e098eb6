"""Calibrate before spending (``gridbench calibrate``; docs/cluster.md, *Calibrating before spending*).

The study's recipe (docs/study.md, *After R1*), measured rather than guessed:

- a **sample**: a cheap model plays a few mazes outside the panel (the shipped sweep
  ``calibrate``); its finished episodes give the **queries per episode** (model calls, re-asks
  included: the episodes' ``calls``);
- a **probe**: every called arm x condition of the target sweep plays one maze (by default the
  sample's maze of median optimal length, which was the study's last probe: 47 actions of its
  30/42/47/61/80); its finished episodes give the arm's **tokens per query** (input, of it cached,
  output with reasoning) and so its USD per query at the arm's price and tier;
- the **projection** per arm: USD per query x queries per episode, summed over the target's
  episodes, under three scenarios of queries per episode: ``mean`` (the sample's mean, the study's
  own scenario), ``p90`` (its 90th percentile, linear interpolation: a harder panel than the
  sample's middle), ``cap`` (each episode's call bound: its step cap, three calls a turn with
  ``invalid_output: reask``; the most an episode can make). ``mean`` and ``p90`` never exceed an
  episode's cap. The suggested ``--max-cost`` is the ``cap`` scenario rounded up to the cent: the
  run cannot spend more unless its queries cost more than the probe's.

The result is stored with its provenance as ``<out>/calibration/<sweep>.json``; ``gridbench run
SWEEP --dry-run`` then takes its "typical" figure per arm from it (``typical_for``), as long as
the arm and its condition are what was probed.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd

from agents.model import Price
from env.errors import BadInput
from env.maze import Maze
from orchestrator.estimate import Calibrated, calls_bound, price_of
from orchestrator.sweep import EpisodeSpec, Sweep
from traces import ERROR, RunStore

FORMAT = "gridbench.calibration/1"
FOLDER = "calibration"  # under --out: <out>/calibration/<sweep>.json
SCENARIOS = ("mean", "p90", "cap")
P90 = 90.0


def file_name(sweep_name: str) -> str:
    return f"{sweep_name}.json"


def probe_maze(mazes: list[Maze]) -> Maze:
    """The maze of median optimal length (the lower of two middles; ties by id)."""
    from env.oracle import solve

    ranked = sorted(mazes, key=lambda m: (solve(m).optimal_actions or 0, m.id))
    return ranked[(len(ranked) - 1) // 2]


def probe_sweep(target: Sweep, maze: Maze, run_name: str, max_cost: float | None) -> Sweep:
    """The target's called arms, every condition, on ``maze`` alone. A ``tier: batch`` arm probes
    at standard: a lockstep batch round per query would make one maze take as many batch windows
    as it has steps; its requests are the same and its projection is priced at its own tier."""
    models = [replace(m, mazes=None, config=replace(m.config, tier="standard") if m.config.tier == "batch"
                      else m.config) for m in target.models if m.called]
    return replace(target, sources=[maze], mazes_spec=maze.id, variants=[], models=models, run_name=run_name,
                   max_cost=max_cost, _twins=None)


@dataclass(frozen=True)
class QueriesPerEpisode:
    """The sample's finished episodes' model calls."""

    episodes: int
    mean: float
    p90: float
    max: int

    @classmethod
    def of(cls, episodes: pd.DataFrame) -> QueriesPerEpisode:
        calls = finished(episodes)["calls"].astype(int).to_numpy()
        if not len(calls):
            raise ValueError("no finished episode")
        return cls(len(calls), float(calls.mean()), float(np.percentile(calls, P90)), int(calls.max()))


def finished(episodes: pd.DataFrame) -> pd.DataFrame:
    """Episodes that ended for a reason of the episode (an ``error`` one is infrastructure)."""
    return episodes[episodes["termination"] != ERROR] if len(episodes) else episodes


@dataclass(frozen=True)
class Profile:
    """One arm x condition of the target, measured on the probe: its queries' tokens and price."""

    arm: str
    condition: str
    identity: dict[str, Any]  # the target's model entry identity (``ModelEntry.identity``)
    protocol_hash: str
    tier: str  # the arm's tier in the target (its projection's price)
    episodes: int
    calls: int
    tokens_in: int
    tokens_cached: int
    tokens_out: int
    tokens_reasoning: int
    spent_usd: float  # what the probe's episodes recorded
    usd_per_query: float | None  # at the target tier's price; None when no price is known
    usd_per_query_standard: float | None  # the same at the standard price
    price_source: str

    @property
    def output_per_query(self) -> float:
        return self.tokens_out / self.calls

    def standard_usd_per_query(self, price: Price | None) -> float | None:
        """USD per query at ``price`` (standard tier), from the measured tokens."""
        return None if price is None else price.cost(self.tokens_in, self.tokens_out, self.tokens_cached) / self.calls

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "input_per_query": self.tokens_in / self.calls,
                "cached_per_query": self.tokens_cached / self.calls, "output_per_query": self.output_per_query,
                "reasoning_per_query": self.tokens_reasoning / self.calls}


def profiles(target: Sweep, probe_episodes: pd.DataFrame) -> list[Profile]:
    """A profile per arm x condition of ``target`` that the probe finished with at least one call."""
    from orchestrator.sweep import model_conditions

    done = finished(probe_episodes)
    out = []
    for m in target.models:
        if not m.called:
            continue
        for c in model_conditions(m, target.conditions):
            mine = done[(done["model_name"] == m.name) & (done["condition"] == c.name)] if len(done) else done
            calls = int(mine["calls"].sum()) if len(mine) else 0
            if not calls:
                continue
            tokens = {k: int(mine[k].sum()) for k in ("tokens_in", "tokens_cached", "tokens_out", "tokens_reasoning")}
            price, source = price_of(m)
            profile = Profile(m.name, c.name, m.identity(), c.protocol.hash, m.config.tier, len(mine), calls,
                              spent_usd=float(mine["cost_usd"].sum()), usd_per_query=None,
                              usd_per_query_standard=None, price_source=source, **tokens)
            standard = profile.standard_usd_per_query(price)
            out.append(replace(profile, usd_per_query_standard=standard,
                               usd_per_query=None if standard is None else m.config.tier_facts.price_factor * standard))
    return out


@dataclass(frozen=True)
class Projection:
    """One arm's projected spend over the target's episodes, per scenario."""

    arm: str
    episodes: int
    queries: dict[str, float]  # per scenario, summed over the episodes
    usd: dict[str, float | None]  # per scenario; None when the arm has no profile or no price
    suggested_max_cost: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def ceil_cents(usd: float) -> float:
    return math.ceil(round(usd * 100, 6)) / 100


def project(specs: list[EpisodeSpec], qpe: QueriesPerEpisode, measured: list[Profile]) -> list[Projection]:
    """Per called arm of ``specs``: USD per query (its condition's profile) x queries per episode
    (each scenario, never above the episode's call bound), summed over its episodes."""
    by_key = {(p.arm, p.condition): p for p in measured}
    rows: dict[str, dict[str, Any]] = {}
    for spec in specs:
        if not spec.model.called:
            continue
        row = rows.setdefault(spec.model.name, {"episodes": 0, "queries": dict.fromkeys(SCENARIOS, 0.0),
                                                "usd": dict.fromkeys(SCENARIOS, 0.0)})
        row["episodes"] += 1
        bound = calls_bound(spec)
        per_query = getattr(by_key.get((spec.model.name, spec.condition.name)), "usd_per_query", None)
        for scenario, queries in (("mean", min(qpe.mean, bound)), ("p90", min(qpe.p90, bound)), ("cap", bound)):
            row["queries"][scenario] += queries
            row["usd"][scenario] = (None if per_query is None or row["usd"][scenario] is None
                                    else row["usd"][scenario] + queries * per_query)
    out = []
    for arm, row in rows.items():
        cap = row["usd"]["cap"]
        out.append(Projection(arm, row["episodes"], row["queries"], row["usd"],
                              None if cap is None else ceil_cents(cap)))
    return out


SCENARIO_NOTES = {
    "mean": "the sample's mean queries per episode (the study's own scenario)",
    "p90": "the sample's 90th percentile of queries per episode (numpy, linear interpolation)",
    "cap": "each episode's call bound: its step cap times the calls a turn may make (3 with invalid_output: "
           "reask, requery_limit with requery); the most it can make",
}


@dataclass
class Calibration:
    """What ``<out>/calibration/<sweep>.json`` holds."""

    sweep: str
    sweep_source: str
    created_at: str
    gridbench_version: str
    command: list[str]
    sample: dict[str, Any]  # sweep, source, run, episodes (id, maze, arm, calls), spent_usd
    probe: dict[str, Any]  # run, maze_id, maze_checksum, spent_usd
    queries_per_episode: QueriesPerEpisode
    profiles: list[Profile]
    projections: list[Projection]
    format: str = FORMAT
    scenarios: dict[str, str] = field(default_factory=lambda: dict(SCENARIO_NOTES))

    @property
    def suggested_max_cost(self) -> float | None:
        values = [p.suggested_max_cost for p in self.projections]
        return None if not values or None in values else ceil_cents(sum(v for v in values if v is not None))

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "sweep": self.sweep, "sweep_source": self.sweep_source,
                "created_at": self.created_at, "gridbench_version": self.gridbench_version, "command": self.command,
                "sample": self.sample, "probe": self.probe, "queries_per_episode": asdict(self.queries_per_episode),
                "scenarios": self.scenarios, "profiles": [p.to_dict() for p in self.profiles],
                "projections": [p.to_dict() for p in self.projections],
                "suggested_max_cost": self.suggested_max_cost}

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str) -> Calibration:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise BadInput(source, "format", f"must be {FORMAT!r}")
        try:
            names = {f for f in Profile.__dataclass_fields__}
            return cls(
                sweep=data["sweep"], sweep_source=data["sweep_source"], created_at=data["created_at"],
                gridbench_version=data["gridbench_version"], command=list(data["command"]),
                sample=dict(data["sample"]), probe=dict(data["probe"]),
                queries_per_episode=QueriesPerEpisode(**data["queries_per_episode"]),
                profiles=[Profile(**{k: v for k, v in p.items() if k in names}) for p in data["profiles"]],
                projections=[Projection(**p) for p in data["projections"]],
                scenarios=dict(data.get("scenarios") or SCENARIO_NOTES))
        except (KeyError, TypeError) as err:
            raise BadInput(source, str(err).strip("'"), "missing or malformed") from None

    def note(self) -> str:
        """The dry run's assumption line for a typical figure taken from this calibration."""
        q = self.queries_per_episode
        return (f"calibration: {q.mean:.1f} queries an episode (the mean of {q.episodes} episodes of "
                f"{self.sample['sweep']}) x each arm's output tokens a query on a one-maze probe "
                f"({self.probe['maze_id']}), measured {self.created_at}; `gridbench calibrate {self.sweep}` redoes it")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def save(root: RunStore, calibration: Calibration) -> str:
    """Write the calibration (atomically) under ``root``; returns where, for display."""
    store = root.child(FOLDER)
    rel = file_name(calibration.sweep)
    store.put(rel, (json.dumps(calibration.to_dict(), indent=2) + "\n").encode())
    return store.display(rel)


def load(root: RunStore, sweep_name: str) -> Calibration | None:
    """The stored calibration of ``sweep_name`` under ``root``; None when there is none."""
    store = root.child(FOLDER)
    rel = file_name(sweep_name)
    if not store.exists(rel):
        return None
    source = store.display(rel)
    try:
        data = json.loads(store.read_bytes(rel))
    except (ValueError, UnicodeDecodeError):
        raise BadInput(source, "(file)", "not valid JSON") from None
    return Calibration.from_dict(data, source)


def typical_for(calibration: Calibration, sweep: Sweep) -> dict[tuple[str, str], Calibrated]:
    """Per (arm, condition) of ``sweep`` that the calibration probed as it is now (same model
    entry identity, same protocol): its calls per episode, output tokens per call and USD per
    call at the entry's price now (the measured tokens priced again: a price edited since counts)."""
    from orchestrator.sweep import model_conditions

    by_key = {(p.arm, p.condition): p for p in calibration.profiles}
    source = f"calibration ({calibration.created_at[:10]})"
    out = {}
    for m in sweep.models:
        for c in model_conditions(m, sweep.conditions):
            p = by_key.get((m.name, c.name))
            if p is not None and p.identity == m.identity() and p.protocol_hash == c.protocol.hash:
                out[(m.name, c.name)] = Calibrated(calibration.queries_per_episode.mean, p.output_per_query,
                                                   p.standard_usd_per_query(price_of(m)[0]), source)
    return out
