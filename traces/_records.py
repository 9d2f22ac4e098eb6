"""The trace records, declared once: ``StepRecord`` and ``EpisodeRecord``.

Each record is a frozen dataclass whose fields are the Parquet columns; every field carries its
Arrow type and its documentation in its metadata. From them come the fixed schemas
(``traces._schema``), the rows written to Parquet and read back for resume, and the column
tables of docs/traces.md (``python -m traces`` prints them; a test compares).
Nested records (``EpisodeIdentity``, ``MazeSummary``, ``agents.usage.Usage`` and ``Budget``) are
flattened into columns, so a usage field added once appears in steps and episodes alike.

Reading traces needs this module and pyarrow only: nothing here imports the agents, the
environment's dynamics or the oracle.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, get_args, get_type_hints

import pyarrow as pa

from agents.usage import Budget, Usage

if TYPE_CHECKING:
    from env.maze import Maze

ARROW_TYPES = {
    "string": pa.string(), "bool": pa.bool_(), "int8": pa.int8(), "int32": pa.int32(), "int64": pa.int64(),
    "float64": pa.float64(), "timestamp": pa.timestamp("us", tz="UTC"), "list<string>": pa.list_(pa.string()),
}
# what the docs call each Arrow type
TYPE_NAMES = {"timestamp": "timestamp[us, UTC]"}
USAGE_ARROW = {"tokens_in": "int64", "tokens_out": "int64", "tokens_reasoning": "int64", "tokens_cached": "int64",
               "reasoning_estimated": "bool", "cost_usd": "float64", "latency_s": "float64", "retries": "int32",
               "calls": "int32", "reasks": "int32"}
BUDGET_ARROW = {"thinking": "bool", "thinking_budget": "int32", "reasoning_effort": "string", "max_output_tokens": "int32",
                "constraint": "string"}
# the Arrow types of the agents' records, which stay free of pyarrow
NESTED_ARROW = {Usage: USAGE_ARROW, Budget: BUDGET_ARROW}


def col(arrow: str, doc: str, **kwargs: Any) -> Any:
    """A column: its Arrow type (a key of ``ARROW_TYPES``) and its documentation."""
    return field(metadata={"arrow": arrow, "doc": doc}, **kwargs)


def nested(doc_suffix: str = "", rename: dict[str, str] | None = None, **kwargs: Any) -> Any:
    """A record flattened into columns; ``doc_suffix`` completes each column's documentation."""
    return field(metadata={"flatten": True, "suffix": doc_suffix, "rename": rename or {}}, **kwargs)


@dataclass(frozen=True)
class Column:
    name: str
    arrow: str
    doc: str
    path: tuple[str, ...]  # attribute names from the record down to the value


def _columns(cls: type) -> tuple[Column, ...]:
    out: list[Column] = []
    for f in fields(cls):
        if f.metadata.get("flatten"):
            inner_type = _field_class(cls, f.name)
            arrows = NESTED_ARROW.get(inner_type)
            for c in _columns(inner_type) if arrows is None else _plain_columns(inner_type, arrows):
                name = f.metadata["rename"].get(c.name, c.name)
                doc = f"{c.doc}; {f.metadata['suffix']}" if f.metadata["suffix"] else c.doc
                out.append(Column(name, c.arrow, doc, (f.name, *c.path)))
        else:
            out.append(Column(f.name, f.metadata["arrow"], f.metadata["doc"], (f.name,)))
    return tuple(out)


def _plain_columns(cls: type, arrows: dict[str, str]) -> list[Column]:
    return [Column(f.name, arrows[f.name], f.metadata["doc"], (f.name,)) for f in fields(cls)]


def _field_class(cls: type, name: str) -> type:
    hint = get_type_hints(cls)[name]
    assert isinstance(hint, type) and is_dataclass(hint), f"{cls.__name__}.{name} is flattened but is not a record"
    return hint


class TraceRecord:
    """Columns, schema and rows of a record class."""

    @classmethod
    @cache
    def columns(cls) -> tuple[Column, ...]:
        return _columns(cls)

    @classmethod
    @cache
    def schema(cls) -> pa.Schema:
        return pa.schema([(c.name, ARROW_TYPES[c.arrow]) for c in cls.columns()])

    def row(self) -> dict[str, Any]:
        """The record as one flat row, column by column."""
        out: dict[str, Any] = {}
        for c in self.columns():
            value: Any = self
            for name in c.path:
                value = getattr(value, name)
            out[c.name] = list(value) if c.arrow == "list<string>" else value
        return out

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Any:
        """The record a row (``row()``'s output, or a Parquet row) came from."""
        return _build(cls, row, {c.path: c.name for c in cls.columns()}, ())


def _build(cls: type, row: dict[str, Any], names: dict[tuple[str, ...], str], prefix: tuple[str, ...]) -> Any:
    values: dict[str, Any] = {}
    for f in fields(cls):
        path = (*prefix, f.name)
        if f.metadata.get("flatten"):
            values[f.name] = _build(_field_class(cls, f.name), row, names, path)
        else:
            value = row.get(names[path])
            values[f.name] = tuple(value) if isinstance(value, list | tuple) else value
    return cls(**values)


# ---- the outcome vocabulary ------------------------------------------------------------------

# every way an episode can end that is a model's outcome (docs/design.md §5)
Ending = Literal["solved", "died", "step_cap", "stall", "parse_failed", "exhausted"]
ENDINGS: tuple[Ending, ...] = get_args(Ending)
# an infrastructure failure after retries: never a model's outcome, left out of every metric
ERROR: Final = "error"
Termination: TypeAlias = Ending | Literal["error"]  # what the `termination` column holds


# ---- the nested parts ------------------------------------------------------------------------

@dataclass(frozen=True)
class EpisodeIdentity:
    """Which episode a row belongs to: in every episodes row and every steps row."""

    run: str = col("string", "run name (the folder name under `results/`)")
    episode_id: str = col("string", "content hash of the work (see Episode ids)")
    model_name: str = col("string", "the sweep's short name for the model entry (`claude`, `oracle`)")
    model: str = col("string", "litellm model string, `builtin/<agent>` or `human/<name>`")
    condition: str = col("string", "the sweep condition (`baseline`, `no-thinking`; `default` when the sweep has none)")
    repeat: int = col("int32", "repeat index, 0-based")
    maze_id: str = col("string", "the maze's id")


@dataclass(frozen=True)
class MazeSummary:
    """What the analyses need to know of an episode's maze."""

    maze_checksum: str = col("string", "sha256 of the maze's canonical content; the maze itself is in "
                                       "`manifest.json` under `mazes`")
    grid_width: int = col("int32", "grid width in cells")
    grid_height: int = col("int32", "grid height in cells")
    grid: str = col("string", '`"<width>x<height>"`, e.g. `"10x10"`')
    category: str | None = col("string", "`scale`, `mechanism` or `distractor`; null for mazes without meta")
    n_keys: int = col("int32", "keys in the maze")
    n_doors: int = col("int32", "doors in the maze")
    n_switches: int = col("int32", "switches in the maze")
    n_gates: int = col("int32", "gates in the maze")
    n_distractors: int = col("int32", "entries of `meta.distractors` (decoy objects and dead ends)")
    chain_length: int = col("int32", "entries of `meta.chain`")
    variant: str | None = col("string", "for a maze that is a variant of another (docs/variants.md): its name "
                                        "(`mirror-tb`, `no-switches`, `reskin`, ...); null for an original")
    variant_kind: str | None = col("string", "the variant's kind (`rotate`, `mirror`, `recolor`, `reskin`, "
                                             "`no-switches`, `no-keys`, `no-distractors`, `drop-link`, "
                                             "`control-none`, `control-other`, `projection`); null for an original")
    variant_family: str | None = col("string", "`isomorphic`, `near-isomorphic`, `reskin`, `ablation`, "
                                               "`control` or `projection`; null for an original")
    twin_of: str | None = col("string", "the id of the maze this one is a variant of; null for an original")
    twin_of_checksum: str | None = col("string", "that maze's checksum; null for an original")

    @classmethod
    def of(cls, maze: Maze) -> MazeSummary:
        meta = maze.meta
        variant = ((meta.model_extra or {}).get("variant") if meta else None) or {}
        return cls(
            maze_checksum=maze.checksum, grid_width=maze.width, grid_height=maze.height,
            grid=f"{maze.width}x{maze.height}", category=maze.category, n_keys=len(maze.keys),
            n_doors=len(maze.doors), n_switches=len(maze.switches), n_gates=len(maze.gates),
            n_distractors=len(meta.distractors) if meta else 0, chain_length=len(meta.chain) if meta else 0,
            variant=variant.get("name"), variant_kind=variant.get("kind"), variant_family=variant.get("family"),
            twin_of=variant.get("twin_of"), twin_of_checksum=variant.get("twin_of_checksum"),
        )


# ---- the records -----------------------------------------------------------------------------

@dataclass(frozen=True)
class StepRecord(TraceRecord):
    """One step of an episode. State columns describe the state after the step."""

    identity: EpisodeIdentity = nested("as in episodes, for joins and filters")
    step: int = col("int32", "1-based step index")
    action: str | None = col("string", "`left`, `right`, `forward`, `pickup`, `toggle`, `done`; null when the "
                                       "reply was invalid (a no-op step)")
    parse: str = col("string", "how the reply was read: `exact`, `lenient`, `invalid`; `builtin` for built-in agents")
    reply: str = col("string", "the model's raw reply text (re-asks joined by a `[re-asked]` line)")
    reasoning: str = col("string", "the model's reasoning / thinking text, when the provider returns it")
    event: str = col("string", "exactly one of `moved turned bump pickup swap door_unlocked door_opened door_closed "
                               "switch_on switch_off noop goal`, under multinet-r1 also `teleported reset frozen`, under "
                               "multinet-pr57 `teleported died froze frozen rode` (each later tile's, `env.state.EVENTS`; "
                               "docs/design.md §3); `noop` for invalid replies")
    x: int = col("int32", "agent column after the step (from the left)")
    y: int = col("int32", "agent row after the step (from the top)")
    dir: int = col("int8", "facing after the step: 0 east, 1 south, 2 west, 3 north")
    carrying: str | None = col("string", "id of the carried key; null when empty-handed")
    mechanisms: str = col("string", 'JSON `{"doors": {id: "locked"/"closed"/"open"}, "gates": {id: open?}, '
                                    '"keys": {id: [x, y] or null while carried (multinet-r1: or used up)}, '
                                    '"switches": {id: on?}}`, plus what each later tile of the maze keeps beside '
                                    '(`Mechanic.info`): `"frozen": n` (actions still swallowed) in mazes with frozen '
                                    'tiles, `"arrows": {id: direction}` in mazes with rotating tiles and `"latched": '
                                    'bool` (on the cell a teleporter sent the agent to) in multinet-pr57 mazes with '
                                    'teleporters')
    novel: bool = col("bool", "this step reached a never-seen signature under the episode's termination rules "
                              "(gridbench style: position, carried key, mechanism state; study style: the study's "
                              "watchdog signature); the start counts as seen; `stall_window` steps in a row "
                              "without novelty end the episode")
    action_distance: int | None = col("int32", "oracle action distance to the goal; null when the goal can no "
                                               "longer be reached")
    tile_distance: int | None = col("int32", "tile distance to the goal (walls only; doors, gates and keys passable)")
    usage: Usage = nested("this step's model calls")
    finish_reason: str = col("string", "the provider's finish reason (`stop`, `length`, ...)")
    budget: Budget = nested("as sent with this step's request")
    prompt_hash: str = col("string", "short sha256 of the whole prompt (every message's text, images by their hashes)")
    image_hashes: tuple[str, ...] = col("list<string>", "short sha256 of each image's PNG bytes, in the order sent")
    token: str | None = col("string", "study style: the reply's action token this step carries out (`MOVE_NORTH` "
                                      "for each turn and the forward it becomes); null otherwise")
    plan: tuple[str, ...] = col("list<string>", "study style: every action token this step's query returned, on "
                                                "the query's first step (later steps of its list: empty)")
    subgoal: str | None = col("string", "subgoal querying: the sub-goal this step's query named; null otherwise")
    tier: str | None = col("string", "how this step's calls were bought: `standard`, `flex` or `batch` (the model "
                                     "entry's `tier`, docs/providers.md); `cost_usd` is at its price; null for "
                                     "built-in agents")
    batch_id: str | None = col("string", "the provider batch(es) this step's calls went through (ids joined by "
                                         "`,`); null when none (a standard or flex call, a step from an action list)")
    failures: str | None = col("string", "the failed attempts of this step's calls that were retried, as JSON "
                                         "`[{\"class\": ..., \"at\": ..., \"waited_s\": ...}]`: the failure's class as "
                                         "litellm names it (`RateLimitError`, `InternalServerError`, "
                                         "`ServiceUnavailableError`, `Timeout`, `APIConnectionError`, "
                                         "`BatchRequestFailed`, ...), when it failed (UTC, ISO 8601) and the seconds "
                                         "then waited before the next attempt (backoff or Retry-After); never a "
                                         "message; null when none, and in runs recorded before the column existed")


@dataclass(frozen=True)
class EpisodeRecord(TraceRecord):
    """One episode, finished or failed: the same record either way."""

    identity: EpisodeIdentity = nested()
    protocol: str = col("string", "the resolved protocol as canonical JSON (every field of docs/protocol.md; `render` only when it is not the 2D default)")
    protocol_hash: str = col("string", "16 hex digits of sha256 over `protocol`")
    maze: MazeSummary = nested()
    optimal_actions: int | None = col("int32", "shortest action count from the start (exact BFS); null when the "
                                               "episode never started")
    step_cap: int | None = col("int32", "`ceil(step_cap_factor x optimal_actions)`")
    termination: Termination = col("string", "`solved`, `died` (the agent dead on a kill cell, the episode over: docs/maze-format.md), `step_cap`, "
                                     "`stall`, `parse_failed` (`requery_limit` replies in a "
                                     "row gave no action), `exhausted` (a trajectory's actions ran out) or `error` "
                                     "(infrastructure failure: leave it out of metrics)")
    solved: bool = col("bool", "the agent entered the goal")
    steps: int = col("int32", "steps taken (with `invalid_output: noop`, a reply with no action is a no-op step)")
    progress_action: float | None = col("float64", "`clip(1 - d_end_action / d_start_action, 0, 1)`; 1 when "
                                                   "solved; 0 when the goal became unreachable; null for errors "
                                                   "that never started")
    progress_tile: float | None = col("float64", "the same with tile distances")
    d_start_action: int | None = col("int32", "action distance to the goal at the start")
    d_end_action: int | None = col("int32", "action distance at the end; null when the goal can no longer be reached")
    d_start_tile: int | None = col("int32", "tile distance at the start")
    d_end_tile: int | None = col("int32", "tile distance at the end")
    closest_action: int | None = col("int32", "smallest action distance reached during the episode (start included)")
    invalid_outputs: int = col("int32", "no-op steps: replies with no readable action under `invalid_output: noop`")
    parse_failures: int = col("int32", "model calls whose reply gave no action: re-asked or re-queried ones, no-op "
                                       "steps, and the calls that ended the episode `parse_failed`")
    ending_reply: str | None = col("string", "`parse_failed`: the replies of the calls that ended the episode "
                                             "without a step (joined by `[re-asked]` lines); null otherwise")
    ending_reasoning: str | None = col("string", "`parse_failed`: their reasoning text; null otherwise")
    usage: Usage = nested("all the episode's model calls together (its steps' and those that ended it)",
                          rename={"latency_s": "model_latency_s"})
    wall_s: float = col("float64", "seconds from the episode's start to its end in the actor (a resumed episode: its last part)")
    attempts: int = col("int32", "times the episode was started; more than 1 when its actor, node or model "
                                 "server died")
    resumed: int = col("int32", "times the episode was continued from its durable steps after an interruption")
    error_class: str | None = col("string", "for `error`: the failure's class (`RateLimitError`, `RayActorError`, "
                                            "...); else null")
    error_message: str | None = col("string", "for `error`: the failure's message, secrets removed; else null")
    serving: str | None = col("string", "how the sweep served the model: the engine (`vllm`, `llama_cpp`), then what "
                                        "its server served, `model=<repository>` (vLLM) or `model=<file> "
                                        "sha256=<checksum>` (llama.cpp), then `reasoning_parser=<name>` when vLLM "
                                        "returned reasoning apart from the reply (without one it comes inline); "
                                        "null for a model called at its provider or a built-in agent")
    gridbench_version: str = col("string", "package version")
    env_version: str = col("string", "`env.ENV_VERSION` (part of the episode id)")
    started_at: datetime = col("timestamp", "wall-clock start (UTC)")
    finished_at: datetime = col("timestamp", "wall-clock end (UTC)")


class HoldsEpisode:
    """Anything carrying an episode's record as ``episode`` (a result, its encoded files)."""

    episode: EpisodeRecord

    @property
    def episode_id(self) -> str:
        return self.episode.identity.episode_id

    @property
    def termination(self) -> Termination:
        return self.episode.termination


def markdown_table(cls: type[TraceRecord]) -> str:
    """The column table docs/traces.md shows for a record."""
    lines = ["| column | type | meaning |", "|---|---|---|"]
    for c in cls.columns():
        kind = TYPE_NAMES.get(c.arrow, c.arrow).replace("<", "&lt;").replace(">", "&gt;")
        lines.append(f"| `{c.name}` | {kind} | {c.doc} |")
    return "\n".join(lines) + "\n"


def json_default(value: Any) -> Any:
    """JSON for the values a row holds beyond JSON's own (timestamps)."""
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")
