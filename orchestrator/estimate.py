"""What a sweep will cost before it spends anything (``gridbench run --dry-run``), and how long
each of its episodes is expected to run (``Lengths``: the order they start in).

Per model, over the episodes still to run, three figures: an upper bound, a typical figure,
and where the typical figure comes from.

- **calls**: at most ``calls_bound``: each episode's step cap times the calls one turn may make
  under its protocol (``Protocol.calls_per_turn``: three with ``reask``, ``requery_limit`` with
  ``requery``);
  typically the mean calls per episode of this model's finished episodes in the run, else the
  sweep's calibration (``gridbench calibrate``: the sample's mean queries per episode,
  ``orchestrator.calibration``), else the study's queries per episode for the model's provider
  family (``agents.providers.STUDY_PRIORS``, docs/providers.md), else ``TYPICAL_TURNS``; never
  more than the upper bound.
- **prompt tokens**: measured by rendering each episode's first turn (litellm's token counter
  for the model); a multi-turn conversation grows by the second turn's increment every turn.
- **output tokens**: the upper bound prices every call at the output cap it carries; the typical
  figure at the mean output per call of this model's finished episodes in the run, else the
  calibration's probe of the arm, else the study's mean output per query for the family (never
  above the cap), else it is unknown. A calibrated typical cost is the probe's USD per query (its
  measured input, cached input and output at the price) times the calls, as the calibration's
  ``mean`` scenario projects it.
- **price**: the model entry's ``price``, else litellm's price table, times the entry's tier's
  factor (``tier: batch`` or ``flex``: docs/providers.md); the standard figures stand beside
  them. A model neither knows is reported as unknown, never guessed. A self-hosted vLLM model is costed in GPU-hours instead:
  its output tokens at the study's throughput (``STUDY_OUTPUT_TOKENS_PER_GPU_HOUR``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from agents.model import ModelConfig, Price
from agents.prompt import build_messages
from agents.protocol import Protocol
from agents.providers import STUDY_PRIORS
from agents.types import PastStep, Turn
from env.maze import Maze
from env.state import initial_state, step
from env.study_facts import STUDY_OUTPUT_TOKENS_PER_GPU_HOUR
from orchestrator.serving.limits import count_tokens, step_cap_of
from orchestrator.sweep import EpisodeSpec, ModelEntry
from traces import RunStore

# Without a prior for the family: the study's observed episode length, one model's 1,600 turns
# that followed a move over its 50 episodes (the stall watchdog ended most of them), so about 33
# turns with the first one.
TYPICAL_TURNS = 33


@dataclass(frozen=True)
class Observed:
    """What a model's finished episodes of this run spent."""

    episodes: int
    calls: int
    tokens_out: int

    @property
    def calls_per_episode(self) -> float:
        return self.calls / self.episodes

    @property
    def output_per_call(self) -> float:
        return self.tokens_out / self.calls


@dataclass(frozen=True)
class Calibrated:
    """What a calibration measured for one arm x condition (``orchestrator.calibration.typical_for``)."""

    calls_per_episode: float
    output_per_call: float
    usd_per_call_standard: float | None  # at the standard price; None when no price was known
    source: str


def observed(run: RunStore) -> dict[str, Observed]:
    """Per model, what a run's finished episodes spent (the typical figure's first source)."""
    from traces import ERROR, read_episodes

    finished = read_episodes(run)
    out: dict[str, Observed] = {}
    for name, g in finished[finished["termination"] != ERROR].groupby("model_name") if len(finished) else ():
        calls = int(g["steps"].sum() + g["reasks"].sum())
        if calls > 0:
            out[str(name)] = Observed(episodes=len(g), calls=calls, tokens_out=int(g["tokens_out"].sum()))
    return out


class Lengths:
    """How long each episode is expected to run, in turns (steps and re-asks: the calls of a called
    model), for the order episodes start in (``orchestrator.scheduling.Pending.fill``: longest
    first). Built from this run's finished episodes (``of_run``, or given them):

    - the arm has finished episodes on the same maze (any condition, any repeat): their mean
      turns, never above the episode's call bound (``calls_bound``);
    - else, the episode's step cap times the arm's share of its caps (its finished episodes' turns
      over their step caps), so that a measured maze and a maze known by its cap compare;
    - else (no finished episode of the arm: a first run) the episode's step cap.

    A calibration (``orchestrator.calibration``) says nothing here: its queries per episode are one
    figure for every arm and maze, and its probe plays one maze outside the panel, so neither ranks
    one episode of an arm above another (docs/cluster.md, *The order episodes start in*).
    """

    def __init__(self, finished: Iterable[tuple[EpisodeSpec, int]] = ()):
        self._caps: dict[tuple[str, float], int] = {}
        turns: dict[tuple[str, str], list[int]] = {}
        totals: dict[str, list[int]] = {}  # arm -> [turns, step caps]
        for spec, n in finished:
            turns.setdefault((spec.model.name, spec.maze.checksum), []).append(n)
            total = totals.setdefault(spec.model.name, [0, 0])
            total[0] += n
            total[1] += self.step_cap(spec)
        self.by_maze = {key: sum(v) / len(v) for key, v in turns.items()}
        self.share = {arm: n / caps for arm, (n, caps) in totals.items() if caps}

    @classmethod
    def of_run(cls, run: RunStore, specs: Iterable[EpisodeSpec]) -> Lengths:
        """From the run's finished episodes among ``specs`` (those that ended in error left out)."""
        from traces import ERROR, read_episodes

        by_id = {s.episode_id: s for s in specs}
        rows = read_episodes(run, ids=by_id)
        if not len(rows):
            return cls()
        rows = rows[rows["termination"] != ERROR]
        return cls((by_id[i], int(steps) + int(reasks))
                   for i, steps, reasks in zip(rows["episode_id"], rows["steps"], rows["reasks"], strict=True))

    def step_cap(self, spec: EpisodeSpec) -> int:
        factor = spec.condition.protocol.step_cap_factor
        key = (spec.maze.checksum, factor)
        if key not in self._caps:  # a search of the maze, once per maze and factor
            self._caps[key] = step_cap_of(spec.maze, factor)
        return self._caps[key]

    def expected(self, spec: EpisodeSpec) -> float:
        """The turns ``spec`` is expected to take (see the class)."""
        cap = self.step_cap(spec)
        seen = self.by_maze.get((spec.model.name, spec.maze.checksum))
        if seen is not None:
            return min(seen, float(calls_bound(spec, cap)))
        return cap * self.share.get(spec.model.name, 1.0)


def calls_bound(spec: EpisodeSpec, cap: int | None = None) -> int:
    """The most calls an episode can make: its step cap times the calls a turn may make
    (``Protocol.calls_per_turn``). The one count of it: the estimate, the calibration's projection
    and the dry run all read it. ``cap``: the episode's step cap, where the caller has it already
    (it costs a search of the maze)."""
    protocol = spec.condition.protocol
    if cap is None:
        cap = step_cap_of(spec.maze, protocol.step_cap_factor)
    return cap * protocol.calls_per_turn


@dataclass
class ModelEstimate:
    name: str
    episodes: int = 0
    calls_max: int = 0
    calls_typical: float = 0.0
    prompt_tokens_first: int = 0  # summed over episodes: the first turn's prompt
    output_cap: int | None = None  # the largest over the model's conditions
    output_cap_min: int | None = None  # the smallest (a condition can give a model its own cap)
    output_typical: float | None = None  # output tokens per call in the typical figure (the last condition's)
    output_tokens_max: int = 0
    output_tokens_typical: float | None = 0.0
    cost_max: float | None = 0.0  # USD, at the entry's tier
    cost_typical: float | None = 0.0
    tier: str = "standard"
    cost_max_standard: float | None = 0.0  # the same at the standard price
    cost_call_max: float | None = 0.0  # USD at the entry's tier: the dearest one call (the longest prompt, the output cap)
    cost_typical_standard: float | None = 0.0
    typical_source: str = ""
    price_source: str = ""
    price: dict[str, float] | None = None  # the standard USD per token: input, output, cached_input
    gpus: int | None = None  # a self-hosted vLLM model: GPUs its replicas hold
    gpu_hours_max: float | None = None
    gpu_hours_typical: float | None = None

    @property
    def mean_prompt_tokens(self) -> float:
        return self.prompt_tokens_first / self.episodes if self.episodes else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "mean_prompt_tokens_first": self.mean_prompt_tokens}


def estimate(specs: list[EpisodeSpec], observed: dict[str, Observed] | None = None,
             progress: Callable[[int, int], None] | None = None,
             calibrated: dict[tuple[str, str], Calibrated] | None = None) -> list[ModelEstimate]:
    """One estimate per model of ``specs``, in the order models first appear; ``progress(done,
    total)`` as it goes (each episode of a called model renders and counts its first turn);
    ``calibrated``: per (model, condition), what the sweep's calibration measured."""
    out: dict[str, ModelEstimate] = {}
    for done, spec in enumerate(specs, 1):
        if progress is not None and not spec.model.builtin:
            progress(done, len(specs))
        m = spec.model
        e = out.setdefault(m.name, ModelEstimate(m.name))
        e.episodes += 1
        if m.builtin:
            e.price_source = e.typical_source = "built-in (free)"
            continue
        protocol = spec.condition.protocol
        cap = step_cap_of(spec.maze, protocol.step_cap_factor)
        calls_max = calls_bound(spec, cap)
        out_cap = protocol.max_output_tokens
        seen = (observed or {}).get(m.name)
        measured = (calibrated or {}).get((m.name, spec.condition.name))
        prior = STUDY_PRIORS.get(m.config.family.name)
        usd_per_call: float | None = None  # a calibrated call's measured price (standard tier)
        if seen is not None and seen.calls:
            calls, per_call = seen.calls_per_episode, seen.output_per_call
            e.typical_source = f"this run ({seen.episodes} episodes)"
        elif measured is not None:
            calls, per_call = measured.calls_per_episode, float(min(measured.output_per_call, out_cap))
            usd_per_call = measured.usd_per_call_standard
            e.typical_source = measured.source
        elif prior is not None:
            calls, per_call = prior.queries_per_episode, float(min(prior.mean_output_tokens, out_cap))
            e.typical_source = f"study: {prior.model}"
        else:
            calls, per_call = float(TYPICAL_TURNS), None
            e.typical_source = "unknown"
        calls = min(float(calls_max), calls)
        e.calls_max += calls_max
        e.calls_typical += calls
        first, growth = _prompt_tokens(m.config, spec.maze, protocol)
        e.prompt_tokens_first += first
        e.output_cap = max(e.output_cap or 0, out_cap)
        e.output_cap_min = min(e.output_cap_min or out_cap, out_cap)
        e.output_typical = per_call
        e.output_tokens_max += calls_max * out_cap
        e.output_tokens_typical = None if per_call is None or e.output_tokens_typical is None else \
            e.output_tokens_typical + calls * per_call
        if m.serve is not None and m.serve.engine == "vllm":
            e.gpus = m.serve.replicas * m.serve.tensor_parallel_size
            e.gpu_hours_max = e.output_tokens_max / STUDY_OUTPUT_TOKENS_PER_GPU_HOUR
            e.gpu_hours_typical = (None if e.output_tokens_typical is None
                                   else e.output_tokens_typical / STUDY_OUTPUT_TOKENS_PER_GPU_HOUR)
        e.tier = m.config.tier
        price, e.price_source = price_of(m)
        if price is not None:
            e.price = {k: v for k, v in asdict(price).items() if v is not None}
        if price is None or e.cost_max_standard is None:
            e.cost_max = e.cost_typical = e.cost_max_standard = e.cost_typical_standard = e.cost_call_max = None
            continue
        call_max = (first + growth * (cap - 1)) * price.input + out_cap * price.output  # the last turn's call
        e.cost_call_max = max(e.cost_call_max or 0.0, call_max)
        # each of a turn's calls sends that turn's prompt again (a re-ask adds a reply and a line)
        e.cost_max_standard += protocol.calls_per_turn * (_prompt_sum(first, growth, cap) * price.input
                                                          + cap * out_cap * price.output)
        if per_call is None or e.cost_typical_standard is None:
            e.cost_typical_standard = None
        elif usd_per_call is not None:
            e.cost_typical_standard += calls * usd_per_call
        else:
            e.cost_typical_standard += (_prompt_sum(first, growth, calls) * price.input
                                        + calls * per_call * price.output)
    for e in out.values():
        tier_factor = 1.0 if e.price_source == "built-in (free)" else _factor(specs, e.name)
        e.cost_max = None if e.cost_max_standard is None else e.cost_max_standard * tier_factor
        e.cost_typical = None if e.cost_typical_standard is None else e.cost_typical_standard * tier_factor
        e.cost_call_max = None if e.cost_call_max is None else e.cost_call_max * tier_factor
    return list(out.values())


def _factor(specs: list[EpisodeSpec], name: str) -> float:
    """The price factor of the tier model ``name`` is bought at."""
    config = next(s.model.config for s in specs if s.model.name == name)
    return config.tier_facts.price_factor


def prior_notes(rows: list[ModelEstimate]) -> list[str]:
    """One line per study prior and assumption a typical figure of ``rows`` rests on."""
    used = {e.typical_source for e in rows}
    notes = [f"study: {p.model}: {p.mean_output_tokens:,} output tokens a query and {p.queries_per_episode:.1f} "
             f"queries an episode in the study's final run (capped here at each episode's caps)"
             for p in dict.fromkeys(STUDY_PRIORS.values()) if f"study: {p.model}" in used]
    if "unknown" in used:
        notes.append(f"unknown: no finished episodes in this run and no study prior for the provider family; "
                     f"calls ~ counts {TYPICAL_TURNS} turns an episode")
    if any(e.gpus is not None for e in rows):
        notes.append(f"GPU-h: output tokens at the study's {STUDY_OUTPUT_TOKENS_PER_GPU_HOUR:,.0f} output tokens per "
                     "A100-hour (48.0M on ~165 A100-hours); wall-clock hours are GPU-h / GPUs")
    return notes


def _prompt_sum(first: int, growth: int, turns: float) -> float:
    """Prompt tokens over ``turns`` turns that start at ``first`` and grow by ``growth`` a turn."""
    return turns * first + growth * turns * (turns - 1) / 2


def price_of(model: ModelEntry) -> tuple[Price | None, str]:
    """The price per token and where it came from."""
    config = model.config
    if config.price is not None:
        return config.price, "sweep price"
    if model.serve is not None:
        return None, "self-hosted"
    from agents.llm import table_price
    from agents.providers import list_price

    if (listed := list_price(config.model, config.family)) is not None:
        return listed, "list price (docs/providers.md)"
    price = table_price(config.model)
    return (price, "litellm table") if price is not None else (None, "unknown: give the entry a price")


def _prompt_tokens(config: ModelConfig, maze: Maze, protocol: Protocol) -> tuple[int, int]:
    """(prompt tokens of the first turn, growth per turn of a multi-turn conversation)."""
    start = initial_state(maze)
    first = Turn(maze, protocol, 1, start, (), 1)
    tokens = count_tokens(config.model, build_messages(first, []))
    if protocol.conversation != "multi":
        return tokens, 0
    moved, event = step(maze, start, 2)
    second = Turn(maze, protocol, 2, moved, (PastStep(1, 2, event, start, moved),), 2)
    return tokens, max(0, count_tokens(config.model, build_messages(second, ["ACTION: forward"])) - tokens)
