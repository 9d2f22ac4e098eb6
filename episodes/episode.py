"""One episode: an env, an agent, the termination rules, and the trace records.

``run_episode`` is plain asyncio with no Ray in sight, so an episode can be run, tested and
debugged in a loop; the Ray actors in ``orchestrator.driver`` call exactly this function. The
parts are small and separate: ``Playthrough`` applies decisions to the env and builds each
``StepRecord`` (and replays recorded steps when an episode resumes) around the outcome columns
that ``episodes.step_row`` builds and checks (the code ``gridbench replay`` checks a stored run
with), ``TerminationRules`` decide when it ends, ``Usage`` sums itself, and ``episode_record``
builds the one ``EpisodeRecord`` of a finished or failed episode alike.

An interrupted episode resumes from its durable steps (``recorded``): the env is rebuilt by
replaying the recorded actions and checked against the recorded outcome of every step (a
mismatch is an error naming the step and column, never a silent restart), the agent is given each recorded
turn to rebuild what it remembers (``Agent.resume``), and play goes on with the next turn.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from agents.protocol import Protocol
from agents.secrets import scrub
from agents.types import Agent, Decision, InfraError, PastStep, ResumeMismatch, Turn
from agents.usage import Usage
from env import ENV_VERSION, Maze, MazeEnv
from env.oracle import DistanceTable, distance_table, tile_distance
from env.render import check_renderable
from env.state import ACTIONS, MazeState, initial_state
from episodes.step_row import StepOutcome, StepRows, progress
from episodes.termination import TerminationRules
from traces import (
    ERROR,
    EpisodeIdentity,
    EpisodeRecord,
    HoldsEpisode,
    MazeSummary,
    StepRecord,
    Termination,
)

# Error messages travel into traces and onto the terminal; cap them so a provider's HTML error
# page cannot bloat a run.
MAX_ERROR_CHARS = 2000

StepHook = Callable[[StepRecord], Awaitable[Any] | Any]


@dataclass
class EpisodeResult(HoldsEpisode):
    """One finished or failed episode's records."""

    episode: EpisodeRecord
    steps: list[StepRecord] = field(default_factory=list)


@dataclass(frozen=True)
class Suspended:
    """An episode stopped between turns because a budget ran out: it has no termination, is
    never written, and resumes later from its durable steps (its journal stays)."""

    episode_id: str
    steps: int


@lru_cache(maxsize=1)
def gridbench_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("gridbench")
    except PackageNotFoundError:
        return "unknown"


def decision_of(record: StepRecord) -> Decision:
    """The decision a recorded step carried (what an agent is given back when it resumes)."""
    return Decision(
        action=ACTIONS.index(record.action) if record.action is not None else None,
        parse=record.parse,  # type: ignore[arg-type]  # the trace column holds a ParseStatus as a plain string
        reply=record.reply, reasoning=record.reasoning, finish_reason=record.finish_reason,
        usage=record.usage, budget=record.budget, prompt_hash=record.prompt_hash,
        image_hashes=tuple(record.image_hashes), token=record.token, plan=tuple(record.plan),
        subgoal=record.subgoal or "", tier=record.tier, batch_id=record.batch_id,
        failures=record.failures,
    )


def failed_calls(usage: Usage, acted: bool) -> int:
    """Model calls whose reply gave no action, of a step (``acted``: it had an action) or of the
    calls that ended an episode: every call but the one that gave the action."""
    return max(0, usage.calls - (1 if acted else 0))


class Playthrough:
    """The env of one episode and what has happened in it: the state, the history shown to the
    agent, the step records, the closest approach to the goal and the termination rules."""

    def __init__(self, maze: Maze, protocol: Protocol, identity: EpisodeIdentity, table: DistanceTable,
                 d_start: int):
        self.maze, self.protocol, self.identity, self.table = maze, protocol, identity, table
        check_renderable(maze, protocol.render, maze.id)  # the sweep checked; a twin or a resumed run may not have
        self.env = MazeEnv(maze, tile_size=protocol.tile_size, drop=protocol.drop)
        self.env.reset(seed=protocol.seed)
        self.rows = StepRows(maze, protocol, table, self.env.state, d_start)
        self.d_start = d_start
        self.d_start_tile = tile_distance(maze, self.state.pos)
        self.closest = d_start
        self.history: list[PastStep] = []
        self.steps: list[StepRecord] = []

    @property
    def state(self) -> MazeState:
        return self.rows.state

    @property
    def termination(self) -> TerminationRules:
        return self.rows.termination

    @property
    def next_step(self) -> int:
        return len(self.steps) + 1

    def turn(self) -> Turn:
        return Turn(maze=self.maze, protocol=self.protocol, step=self.next_step, state=self.state,
                    history=tuple(self.history), step_cap=self.termination.step_cap)

    def _move(self, action: int) -> tuple[MazeState, str]:
        _, _, _, _, info = self.env.step(action)
        return self.env.state, info["event"]

    def apply(self, decision: Decision) -> StepRecord:
        """Take one step with ``decision`` and return its record (an invalid reply is a no-op step)."""
        return self._take(decision)[0]

    def _take(self, decision: Decision) -> tuple[StepRecord, StepOutcome]:
        before, step_no = self.state, self.next_step
        outcome = self.rows.take(decision.action, self._move)
        if outcome.action_distance is not None:
            self.closest = min(self.closest, outcome.action_distance)
        record = StepRecord(
            identity=self.identity, step=step_no,
            action=ACTIONS[decision.action] if decision.action is not None else None,
            parse=decision.parse, reply=decision.reply, reasoning=decision.reasoning, **outcome.columns(),
            usage=decision.usage, finish_reason=decision.finish_reason, budget=decision.budget,
            prompt_hash=decision.prompt_hash, image_hashes=tuple(decision.image_hashes), token=decision.token,
            plan=decision.plan, subgoal=decision.subgoal or None, tier=decision.tier, batch_id=decision.batch_id,
            failures=decision.failures,
        )
        self.steps.append(record)
        self.history.append(PastStep(step=step_no, action=decision.action, event=outcome.event,
                                     state_before=before, state_after=self.state, token=decision.token))
        return record, outcome

    def replay(self, recorded: StepRecord) -> None:
        """Re-take a recorded step; ``ResumeMismatch`` when the env does not reproduce its row."""
        if recorded.step != self.next_step:
            raise ResumeMismatch(f"step {self.next_step}: the durable log has step {recorded.step} here")
        _, outcome = self._take(decision_of(recorded))
        mismatch = outcome.check(recorded.step, recorded)
        if mismatch is not None:
            raise ResumeMismatch(str(mismatch))
        self.steps[-1] = recorded  # keep what was recorded: its usage, hashes and texts

    def close(self) -> None:
        self.env.close()


def episode_record(identity: EpisodeIdentity, maze: Maze, protocol: Protocol, *, termination: Termination,
                   play: Playthrough | None = None, error: tuple[str, str] | None = None, attempts: int = 1,
                   resumed: int = 0, started_at: datetime | None = None, wall_s: float = 0.0,
                   ending: Decision | None = None, serving: str | None = None) -> EpisodeRecord:
    """The record of an episode: finished (``play`` ended with ``termination``, by the agent's
    ``ending`` decision when it ended the episode without a step), failed while playing (``play``
    and ``error``), or failed before it could start (``error`` alone)."""
    now = datetime.now(UTC)
    steps = play.steps if play is not None else []
    ending_usage = ending.usage if ending is not None else Usage()
    solved = termination == "solved"
    d_end = d_end_tile = None
    if play is not None:
        d_end = play.table.action_distance(play.state)
        d_end_tile = tile_distance(maze, play.state.pos)
    error_class, message = error if error is not None else (None, None)
    return EpisodeRecord(
        identity=identity, protocol=protocol.to_json(), protocol_hash=protocol.hash, maze=MazeSummary.of(maze),
        optimal_actions=play.d_start if play else None,
        step_cap=play.termination.step_cap if play else None,
        termination=termination, solved=solved, steps=len(steps),
        progress_action=progress(play.d_start, d_end, solved) if play else None,
        progress_tile=progress(play.d_start_tile, d_end_tile, solved) if play else None,
        d_start_action=play.d_start if play else None, d_end_action=d_end,
        d_start_tile=play.d_start_tile if play else None, d_end_tile=d_end_tile,
        closest_action=play.closest if play else None,
        invalid_outputs=sum(1 for s in steps if s.action is None),
        parse_failures=sum(failed_calls(s.usage, s.action is not None) for s in steps)
        + failed_calls(ending_usage, False),
        ending_reply=ending.reply if ending is not None and ending.usage.calls else None,
        ending_reasoning=ending.reasoning if ending is not None and ending.usage.calls else None,
        usage=Usage.total(s.usage for s in steps) + ending_usage, wall_s=wall_s, attempts=attempts, resumed=resumed,
        error_class=error_class,
        error_message=scrub(message)[:MAX_ERROR_CHARS] if message is not None else None,
        serving=serving, gridbench_version=gridbench_version(), env_version=ENV_VERSION,
        started_at=started_at or now, finished_at=now,
    )


def failed_episode(identity: EpisodeIdentity, maze: Maze, protocol: Protocol, error_class: str, message: str,
                   attempts: int, serving: str | None = None) -> EpisodeResult:
    """An ``error`` episode that never got to run (its actor or node died on every attempt)."""
    return EpisodeResult(episode_record(identity, maze, protocol, termination=ERROR,
                                        error=(error_class, message), attempts=attempts, serving=serving))


async def run_episode(
    maze: Maze,
    agent: Agent,
    protocol: Protocol,
    identity: EpisodeIdentity,
    *,
    on_step: StepHook | None = None,
    attempts: int = 1,
    recorded: Sequence[StepRecord] = (),
    resumed: int = 0,
    should_stop: Callable[[], Awaitable[bool] | bool] | None = None,
    serving: str | None = None,
) -> EpisodeResult | Suspended:
    """Play one episode to its end (from its ``recorded`` steps, when it resumes) and return its
    records.

    ``on_step`` (optional, sync or async) sees each new step's record as soon as it exists and is
    awaited before the next turn: the driver makes the step durable there, the human player and
    live viewers show it. ``should_stop`` is asked between turns: when it says so, the episode
    stops, ``Suspended`` (it may also wait there: the driver holds a turn back while its model is
    rate limited). ``serving`` says how the model was served (``ModelEntry.serving``). The agent is
    not closed here; whoever built it closes it.
    """
    started_at = datetime.now(UTC)
    t0 = time.perf_counter()

    def ended(termination: Termination, play: Playthrough | None = None, error: tuple[str, str] | None = None,
              ending: Decision | None = None) -> EpisodeResult:
        record = episode_record(identity, maze, protocol, termination=termination, play=play, error=error,
                                attempts=attempts, resumed=resumed, started_at=started_at,
                                wall_s=time.perf_counter() - t0, ending=ending, serving=serving)
        return EpisodeResult(record, play.steps if play is not None else [])

    try:
        table = distance_table(maze, drop=protocol.drop)
    except OverflowError as err:  # past the oracle's state cap no progress can be scored
        return ended(ERROR, error=("OracleStateCap", str(err)))
    d_start = table.action_distance(initial_state(maze))
    if d_start is None:
        return ended(ERROR, error=("UnsolvableMaze", f"maze {maze.id!r} cannot be solved from its start state"))
    play = Playthrough(maze, protocol, identity, table, d_start)
    try:
        try:
            for rec in recorded:
                turn = play.turn()
                play.replay(rec)
                await agent.resume(turn, decision_of(rec))
        except ResumeMismatch as err:
            return ended(ERROR, play, error=("ResumeMismatch", str(err)))
        while play.termination.reason is None:
            if should_stop is not None:
                stop = should_stop()
                if stop if not inspect.isawaitable(stop) else await stop:
                    return Suspended(identity.episode_id, len(play.steps))
            try:
                decision = await agent.act(play.turn())
            except InfraError as err:
                return ended(ERROR, play, error=(err.error_class, str(err)))
            except Exception as err:  # a bug or a library failure still costs only this episode
                return ended(ERROR, play, error=(type(err).__name__, str(err)))
            if decision.ending is not None:
                return ended(decision.ending, play, ending=decision)
            record = play.apply(decision)
            if on_step is not None:
                maybe = on_step(record)
                if inspect.isawaitable(maybe):
                    await maybe
        return ended(play.termination.reason, play)
    finally:
        play.close()
