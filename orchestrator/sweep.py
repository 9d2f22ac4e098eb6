"""Sweep files (docs/design.md §6): parse, validate, and expand into episodes.

A sweep names a maze set, models, a base protocol and conditions; its matrix is
mazes x models x conditions x repeats, each maze followed by the twins its ``variants:`` name
(``orchestrator.sweep_variants``). Every rule breaks with one ``BadInput`` line naming the
file and the field. Shipped sweeps live in ``orchestrator/sweeps/`` and resolve by name
(``gridbench run main``).

An episode id is the content hash of the work it stands for: the maze's content checksum, the
model's identity (``model``, ``params``, ``serve``: what changes the answers, not where or how
fast they come), the resolved protocol, the repeat index and ``env.ENV_VERSION``. Renaming a
model entry or a condition, moving an endpoint or raising a concurrency limit therefore never
reruns finished work.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from agents.model import AGENT_KEYS, OPENAI_COMPATIBLE_PREFIXES, ModelConfig, parse_model_config
from agents.protocol import Protocol, resolve_protocol
from env import ENV_VERSION, Maze, resolve_mazes
from env.errors import BadInput
from env.names import check_name, is_name
from env.sets import sealed_of
from orchestrator.serving.bundled import is_bundled
from orchestrator.serving.spec import ServeSpec, Weights, parse_serve
from orchestrator.sweep_variants import (
    VARIANT_SEED,
    LeftOut,
    Twins,
    check_projections,
    parse_variants,
    projected_condition,
    views,
    with_twins,
)
from traces import EpisodeIdentity

SWEEPS_DIR = Path(__file__).resolve().parent / "sweeps"
SWEEP_KEYS = ("name", "description", "mazes", "variants", "repeats", "protocol", "models", "conditions")
MODEL_KEYS = (*AGENT_KEYS, "max_concurrency", "max_cost", "serve", "mazes", "protocol")
DEFAULT_LLM_CONCURRENCY = 4
DEFAULT_CONDITION = "default"


@dataclass(frozen=True)
class ModelEntry:
    """A sweep's model entry: how to call the model (``config``, handed unchanged to every agent
    built for it) and where and how its episodes run."""

    config: ModelConfig
    # episodes of this model in flight at once: DEFAULT_LLM_CONCURRENCY unless the entry says;
    # None only for a built-in agent (as many as the cluster has room for) and a human
    max_concurrency: int | None = None
    max_cost: float | None = None  # USD this model may spend in the run (finished and journaled steps)
    serve: ServeSpec | None = None
    # this model's own mazes (replacing the sweep's) and protocol fields (over every condition's):
    # a slow local model can run a few text-only mazes in the same sweep as fast models
    mazes: tuple[Maze, ...] | None = None
    protocol: dict[str, Any] = field(default_factory=dict)
    # what the model's servers serve, as they report it once started (``Sweep.with_weights``);
    # not part of the identity: a file's path is, and its checksum is recorded with each episode
    weights: Weights | None = None

    def __post_init__(self) -> None:
        if self.max_concurrency is None and self.called:
            object.__setattr__(self, "max_concurrency", DEFAULT_LLM_CONCURRENCY)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def model(self) -> str:
        return self.config.model

    @property
    def builtin(self) -> bool:
        return self.config.builtin

    @property
    def called(self) -> bool:
        """A model the run calls (at a provider, or at a server the sweep starts): neither built in
        nor a human. The one statement of that rule."""
        return not self.builtin and not self.config.human

    @property
    def billed(self) -> bool:
        """A called model the run does not serve itself: its calls are paid to a provider or go to
        an endpoint the sweep names (what the preflight checks before Ray starts)."""
        return self.called and self.serve is None

    @property
    def serving(self) -> str | None:
        """How the sweep serves the model (the episodes' ``serving`` column): the engine, the
        weights its servers reported (``model=<file> sha256=<hex>``) and vLLM's reasoning parser;
        None: not served."""
        if self.serve is None:
            return None
        parser = self.serve.reasoning_parser if self.serve.engine == "vllm" else None
        parts = [self.serve.engine, self.weights.describe() if self.weights else None,
                 f"reasoning_parser={parser}" if parser else None]
        return " ".join(p for p in parts if p)

    def identity(self) -> dict[str, Any]:
        """What makes this model's answers what they are; part of every episode id. The client is
        not: both send the same request."""
        return {**self.config.identity(), "serve": self.serve.identity() if self.serve is not None else None}

    def public(self) -> dict[str, Any]:
        """The entry as the manifest records it: names of key variables only, never their values."""
        out = self.config.public()
        for key in ("max_concurrency", "max_cost"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.serve is not None:
            out["serve"] = self.serve.model_dump(mode="json")
        if self.weights is not None:
            out["weights"] = self.weights.to_dict()
        if self.mazes is not None:
            out["maze_ids"] = [m.id for m in self.mazes]
        if self.protocol:
            out["protocol"] = self.protocol
        return out

    def __hash__(self) -> int:
        return hash(self.name)


@dataclass(frozen=True)
class Condition:
    name: str
    protocol: Protocol
    changed: str | None  # the one field it changes from the base protocol; None for the base
    # protocol fields this condition sets for one model only (model name -> fields), laid over
    # that model's own: a condition that changes model settings, such as the study's thinking one
    models: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def is_baseline(self) -> bool:
        return self.changed is None and not self.models


@dataclass(frozen=True)
class EpisodeSpec:
    """One cell of the matrix: everything an actor needs to run the episode."""

    episode_id: str
    maze: Maze
    model: ModelEntry
    condition: Condition
    repeat: int

    @property
    def seed(self) -> int:
        return self.condition.protocol.seed + self.repeat

    def identity(self, run: str) -> EpisodeIdentity:
        return EpisodeIdentity(run=run, episode_id=self.episode_id, model_name=self.model.name,
                               model=self.model.model, condition=self.condition.name, repeat=self.repeat,
                               maze_id=self.maze.id)


@dataclass
class Sweep:
    name: str
    source: str
    mazes_spec: Any
    sources: list[Maze]  # the sweep's mazes as it lists them; ``mazes`` adds their twins
    repeats: int
    protocol: Protocol
    models: list[ModelEntry]
    conditions: list[Condition]
    description: str = ""
    run_name: str = ""  # the run's folder name (``--name``; the sweep's name by default)
    max_cost: float | None = None  # USD the whole run may spend (``--max-cost``)
    # ``variants:``: the kinds of twin each maze runs with (its twins follow it in ``mazes``), built
    # when first needed (``build_twins``)
    variants: list[str] = field(default_factory=list)
    # the sealed set its mazes draw on ({"commitment", "set"}; docs/sealed.md), which the manifest records
    sealed: dict[str, str] | None = None
    _twins: Twins | None = field(default=None, repr=False, compare=False)

    def build_twins(self, progress: Callable[[int, int], None] | None = None) -> Twins:
        """The twins of every maze of the sweep (its own and every model's), built or read from the
        cache on first use (``orchestrator.sweep_variants``); ``progress(done, total)`` meanwhile."""
        if self._twins is None:
            from traces import cache_home

            every = [*self.sources, *(mz for m in self.models if m.mazes is not None for mz in m.mazes)]
            self._twins = with_twins(every, self.variants, cache_home(), progress)
        return self._twins

    @property
    def mazes(self) -> list[Maze]:
        """The sweep's mazes, each followed by its twins."""
        return self.build_twins().expand(self.sources) if self.variants else self.sources

    @property
    def left_out(self) -> list[LeftOut]:
        """The twins ``variants:`` names that the sweep does not run, each with the reason."""
        return self.build_twins().left_out if self.variants else []

    def model_mazes(self, model: ModelEntry) -> list[Maze] | None:
        """A model's own mazes, each followed by its twins; None for a model that has none."""
        if model.mazes is None:
            return None
        return self.build_twins().expand(model.mazes) if self.variants else list(model.mazes)

    def episodes(self) -> list[EpisodeSpec]:
        """The matrix, grouped by maze so that one actor can reuse a maze's distance table."""
        out = []
        conditions = {m.name: model_conditions(m, self.conditions) for m in self.models}
        sweep_mazes = {mz.checksum for mz in self.mazes}
        own = {m.name: {mz.checksum for mz in self.model_mazes(m) or ()} for m in self.models if m.mazes is not None}
        seen: set[str] = set()
        for maze in self.all_mazes:
            for model in self.models:
                if maze.checksum not in own.get(model.name, sweep_mazes):
                    continue
                for each in conditions[model.name]:
                    # a projection twin runs under its own observation and render, in its arm
                    cond = projected_condition(each, maze)
                    if cond is None:  # the arm already shows the maze that way (shown_already)
                        continue
                    for r in range(self.repeats):
                        eid = episode_id(maze, model, cond.protocol, r)
                        if eid not in seen:  # a model's own protocol can make two conditions one
                            seen.add(eid)
                            out.append(EpisodeSpec(eid, maze, model, cond, r))
        return out

    def shown_already(self) -> list[tuple[Maze, str, str]]:
        """The projection twins an arm does not run, as (twin, model, condition): the arm's own
        protocol already shows the maze that way, so its original's episodes are the twin's."""
        if not self.variants:
            return []
        out = []
        for maze in self.all_mazes:
            for model in self.models:
                out += [(maze, model.name, c.name) for c in model_conditions(model, self.conditions)
                        if projected_condition(c, maze) is None]
        return out

    @property
    def all_mazes(self) -> list[Maze]:
        """The sweep's mazes and every model's own, each once, in order."""
        seen: dict[str, Maze] = {}
        for maze in [*self.mazes, *(mz for m in self.models for mz in self.model_mazes(m) or ())]:
            seen.setdefault(maze.checksum, maze)
        return list(seen.values())

    def resolved(self) -> dict[str, Any]:
        """The sweep with every default filled in, as the manifest records it."""
        return {
            "name": self.name,
            "description": self.description,
            "source": self.source,
            "mazes": self.mazes_spec if isinstance(self.mazes_spec, (str, list)) else str(self.mazes_spec),
            "maze_ids": [m.id for m in self.mazes],
            "repeats": self.repeats,
            "protocol": self.protocol.to_dict(),
            "models": [m.public() for m in self.models],
            "conditions": [
                {"name": c.name, "changed": c.changed, "models": c.models, "protocol_hash": c.protocol.hash,
                 "protocol": c.protocol.to_dict()}
                for c in self.conditions
            ],
            "episodes": len(self.episodes()),
            "env_version": ENV_VERSION,
            **({"variants": {"kinds": self.variants, "seed": VARIANT_SEED,
                             "left_out": [v.to_dict() for v in self.left_out]}} if self.variants else {}),
        }

    def serve_spec(self, model: ModelEntry) -> ServeSpec:
        """A served model's spec with what this sweep decides filled in (``resolve_serve``)."""
        return resolve_serve(model, self.conditions, self.model_mazes(model) or self.mazes)

    def with_weights(self, weights: dict[str, Weights]) -> Sweep:
        """This sweep with what each served model's servers serve (``ServerPool.weights``), so
        that every episode records it."""
        return replace(self, models=[replace(m, weights=weights.get(m.name, m.weights)) for m in self.models])

    def check_keys(self) -> list[str]:
        """Every model's key variable is set (``BadInput`` naming the first that is not); returns
        the variables checked. Checked when a run starts, not when a sweep is loaded, so that a
        dry run and its cost estimate need no keys."""
        for i, m in enumerate(self.models):
            try:
                m.config.api_key()
            except BadInput as err:
                raise BadInput(self.source, f"models[{i}].api_key_env", err.message) from None
        return [m.config.api_key_env for m in self.models if m.config.api_key_env]

    def select(self, model_names: list[str] | None = None) -> Sweep:
        """This sweep restricted to some models (by name or model string)."""
        models = self.models
        if model_names:
            known = {m.name for m in self.models} | {m.model for m in self.models}
            for wanted in model_names:
                if wanted not in known:
                    raise BadInput(
                        "--model", "", f"{wanted!r} is not a model of sweep {self.name!r} "
                        f"(known: {', '.join(m.name for m in self.models)})",
                    )
            models = [m for m in self.models if m.name in model_names or m.model in model_names]
        return Sweep(**{**self.__dict__, "models": models})


def model_conditions(model: ModelEntry, conditions: list[Condition]) -> list[Condition]:
    """The conditions as this model runs them: its own protocol fields laid over each one, then
    the condition's fields for this model."""
    out = []
    for c in conditions:
        own = {**model.protocol, **c.models.get(model.name, {})}
        out.append(replace(c, protocol=resolve_protocol({**c.protocol.to_dict(), **own})) if own else c)
    return out


def resolve_serve(model: ModelEntry, conditions: list[Condition], mazes: Sequence[Maze]) -> ServeSpec:
    """``model.serve`` with what the sweep decides filled in (docs/cluster.md): vLLM's image
    limit and ``max_model_len`` from the largest request the model's conditions can render
    (``orchestrator.serving.limits``), ``max_num_seqs`` from its concurrency."""
    from orchestrator.serving.limits import images_per_request, longest_request

    spec = model.serve
    if spec is None:
        raise ValueError(f"{model.name} is not served")
    concurrency = model.max_concurrency
    assert concurrency is not None  # a served model is called: ModelEntry gives it one
    if spec.engine != "vllm":
        return spec.resolved(max_concurrency=concurrency)
    runs = [view for c in model_conditions(model, conditions) for view in views(c.protocol, mazes)]
    images = max(images_per_request(shown[0], protocol) for protocol, shown in runs)
    length = None
    if spec.max_model_len is None:
        length = max(longest_request(model.model, shown, protocol) for protocol, shown in runs)
    return spec.resolved(max_concurrency=concurrency, images=images, max_model_len=length)


def episode_id(maze: Maze, model: ModelEntry, protocol: Protocol, repeat: int) -> str:
    """Content hash of the work: the same maze, model, protocol, repeat and env give the same id."""
    work = {
        "maze": maze.checksum,
        "model": model.identity(),
        "protocol": protocol.to_dict(),
        "repeat": repeat,
        "env_version": ENV_VERSION,
    }
    text = json.dumps(work, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


# ---- finding and loading --------------------------------------------------------------------

def shipped_sweeps() -> list[str]:
    return sorted(p.stem for p in SWEEPS_DIR.glob("*.yaml"))


def find_sweep(spec: str | os.PathLike) -> Path:
    """A sweep file from a path, or the name of a shipped sweep (``main``, ``ablation``, ...)."""
    p = Path(spec)
    if p.is_file():
        return p
    text = str(spec)
    if is_name(text) and not text.endswith((".yaml", ".yml")):
        shipped = SWEEPS_DIR / f"{text}.yaml"
        if shipped.is_file():
            return shipped
    raise BadInput(text, "", f"no such sweep file or shipped sweep (shipped: {', '.join(shipped_sweeps())})")


def load_sweep(spec: str | os.PathLike, mazes: Any = None, *, models: list[str] | None = None,
               run_name: str | None = None, max_cost: float | None = None) -> Sweep:
    """Load a sweep by path or shipped name, with what the command line lays over it: ``mazes``
    (``--mazes``) replaces the file's maze set, ``models`` (``--model``) keeps only those,
    ``run_name`` (``--name``) and ``max_cost`` (``--max-cost``, the whole run's budget). A run
    plays no human model (``gridbench play`` does)."""
    sweep = _read_sweep(spec, mazes).select(models)
    for m in sweep.models:
        if m.config.human:
            raise BadInput(sweep.source, "models", f"{m.model}: a human plays with `gridbench play`, not in a sweep run")
    run_name = check_name("--name", "", run_name or sweep.name, "run name")
    if max_cost is not None and not max_cost > 0:
        raise BadInput("--max-cost", "", f"must be a number of USD > 0 (got {max_cost})")
    return replace(sweep, run_name=run_name, max_cost=max_cost)


def _read_sweep(spec: str | os.PathLike, mazes: Any) -> Sweep:
    path = find_sweep(spec)
    source = str(path) if Path(spec).is_file() else f"sweeps/{path.name}"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or "syntax error"
        raise BadInput(source, "(file)", f"not valid YAML: {problem}{where}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise BadInput(source, "", f"cannot read: {err.__class__.__name__}") from None
    return parse_sweep(data, source, base_dir=path.parent, mazes=mazes)


# ---- validation -----------------------------------------------------------------------------

def _unknown(source: str, where: str, mapping: dict, known: tuple[str, ...]) -> None:
    for k in mapping:
        if k not in known:
            raise BadInput(source, f"{where}{k}", f"unknown key (known: {', '.join(known)})")


def _located(spec: Any, base_dir: Path | None) -> Any:
    """A maze spec naming a folder relative to the sweep file, as that folder's path."""
    if isinstance(spec, str) and base_dir is not None and not Path(spec).exists():
        relative = base_dir / spec
        if relative.is_dir():
            return str(relative)
    return spec


def _resolve_maze_spec(spec: Any, source: str, where: str, base_dir: Path | None) -> list[Maze]:
    if spec is None:
        raise BadInput(source, where or "mazes", "is required (a named set, a list of maze ids, or a folder)")
    spec = _located(spec, base_dir)
    if not isinstance(spec, (str, list)):
        raise BadInput(source, where or "mazes", "must be a named set, a list of maze ids, or a folder")
    try:
        mazes = resolve_mazes(spec)
    except BadInput as err:
        raise BadInput(source, where or "mazes", err.line()) from None
    if not mazes:
        raise BadInput(source, where or "mazes", f"{spec!r} holds no mazes")
    seen: dict[str, str] = {}
    unique = []
    for m in mazes:
        if m.checksum in seen:
            continue  # the same maze listed twice is the same work
        seen[m.checksum] = m.id
        unique.append(m)
    return unique


def _parse_model(source: str, i: int, entry: Any, base_dir: Path | None = None,
                 protocol: Protocol | None = None) -> ModelEntry:
    where = f"models[{i}]"
    if isinstance(entry, str):
        entry = {"model": entry}
    if not isinstance(entry, dict):
        raise BadInput(source, where, "a model entry is a mapping with at least `model`")
    _unknown(source, f"{where}.", entry, MODEL_KEYS)
    serve = entry.get("serve")
    if serve is not None:
        try:
            serve = parse_serve(serve, source)
        except BadInput as err:
            raise BadInput(source, f"{where}.{err.field}", err.message) from None
        if serve.model is not None and not is_bundled(serve.model) and base_dir is not None:
            # a GGUF path relative to the sweep file, as its mazes are
            serve = serve.model_copy(update={"model": str((base_dir / Path(serve.model).expanduser()).resolve())})
    config = parse_model_config({k: entry[k] for k in AGENT_KEYS if k in entry}, source, where,
                                served_as=serve.speaks if serve is not None else None)
    if serve is not None and (config.builtin or config.human):
        raise BadInput(source, f"{where}.serve", "only litellm models are served")
    if serve is not None and config.model.partition("/")[0] not in OPENAI_COMPATIBLE_PREFIXES:
        raise BadInput(source, f"{where}.model", "a served model is asked over an OpenAI-compatible API: "
                                                 f"name it openai/... or hosted_vllm/... (got {config.model!r})")
    conc = entry.get("max_concurrency")
    if conc is not None and (isinstance(conc, bool) or not isinstance(conc, int) or conc < 1):
        raise BadInput(source, f"{where}.max_concurrency", f"must be a whole number >= 1 (got {conc!r})")
    max_cost = entry.get("max_cost")
    if max_cost is not None:
        if isinstance(max_cost, bool) or not isinstance(max_cost, int | float) or max_cost <= 0:
            raise BadInput(source, f"{where}.max_cost", f"must be a number of USD > 0 (got {max_cost!r})")
        max_cost = float(max_cost)
    own_mazes = None
    if entry.get("mazes") is not None:
        own_mazes = tuple(_resolve_maze_spec(entry["mazes"], source, f"{where}.mazes", base_dir))
    own_protocol = entry.get("protocol") or {}
    if not isinstance(own_protocol, dict) or "preset" in own_protocol:
        raise BadInput(source, f"{where}.protocol", "must be a mapping of protocol fields (no preset)")
    try:
        resolve_protocol({**(protocol or resolve_protocol(None)).to_dict(), **own_protocol}, source)
    except BadInput as err:
        raise BadInput(source, f"{where}.protocol.{err.field}", err.message) from None
    return ModelEntry(config=config, max_concurrency=conc, max_cost=max_cost, serve=serve, mazes=own_mazes,
                      protocol=own_protocol)


def _check_provider(source: str, i: int, model: ModelEntry, conditions: list[Condition]) -> None:
    """Every condition, as this model runs it, is one its provider family can honour
    (docs/providers.md): otherwise a request would be refused, or sent and recorded as if a
    setting had been applied that the provider drops."""
    if not model.called:
        return
    config = model.config
    for j, c in enumerate(model_conditions(model, conditions)):
        refused = config.family.refusal(c.protocol, config.request_params)
        if refused is None:
            continue
        field, why = refused
        if field.startswith("params."):
            where = f"models[{i}].{field}"
        elif field in c.models.get(model.name, {}):
            where = f"conditions[{j}].models.{model.name}.{field}"
        elif field in model.protocol:
            where = f"models[{i}].protocol.{field}"
        elif c.changed == field:
            where = f"conditions[{j}].{field}"
        else:
            where = f"protocol.{field}"
        raise BadInput(source, where, f"{model.name} ({config.model}) in condition {c.name!r}: {why}")


def _check_serve_limits(source: str, i: int, model: ModelEntry, conditions: list[Condition], sweep: Sweep) -> None:
    """A vLLM limit the sweep gives holds every request the model's conditions render on its mazes
    (twins included: they are built here only when there is a limit to check): vLLM would answer
    the others with HTTP 400, and every such episode would end in error."""
    spec = model.serve
    if spec is None or spec.engine != "vllm" or (spec.limit_mm_per_prompt is None and spec.max_model_len is None):
        return
    mazes = sweep.model_mazes(model) or sweep.mazes
    from orchestrator.serving.limits import images_per_request, longest_request

    for c, (protocol, shown) in ((cond, v) for cond in model_conditions(model, conditions) for v in views(cond.protocol, mazes)):
        given = spec.limit_mm_per_prompt
        if given is not None:
            n = images_per_request(shown[0], protocol)
            if n > given.get("image", 0):
                raise BadInput(source, f"models[{i}].serve.limit_mm_per_prompt",
                               f"condition {c.name!r} sends {n} images in one request, more than the "
                               f"{given.get('image', 0)} allowed")
        if spec.max_model_len is not None:
            need = longest_request(model.model, shown, protocol)
            if need > spec.max_model_len:
                raise BadInput(source, f"models[{i}].serve.max_model_len",
                               f"condition {c.name!r} needs {need} tokens (its longest prompt and its output "
                               f"cap of {protocol.max_output_tokens}), more than the {spec.max_model_len} given")


def _parse_conditions(source: str, raw: Any, base: Protocol, model_names: list[str]) -> list[Condition]:
    if raw is None:
        return [Condition(DEFAULT_CONDITION, base, None)]
    if not isinstance(raw, list) or not raw:
        raise BadInput(source, "conditions", "must be a non-empty list of {name: ..., <field>: <value>}")
    out: list[Condition] = []
    names: set[str] = set()
    by_hash: dict[str, str] = {}
    baseline: str | None = None
    for i, c in enumerate(raw):
        where = f"conditions[{i}]"
        if isinstance(c, str):
            c = {"name": c}
        if not isinstance(c, dict) or "name" not in c:
            raise BadInput(source, where, "a condition is a mapping with a `name`")
        name = check_name(source, f"{where}.name", c["name"])
        if name in names:
            raise BadInput(source, f"{where}.name", f"{name!r} is used twice")
        names.add(name)
        fields = {k: v for k, v in c.items() if k not in ("name", "models")}
        if "preset" in fields:
            raise BadInput(source, f"{where}.preset", "a condition changes fields of the sweep's protocol, not its preset")
        try:
            protocol = resolve_protocol({**base.to_dict(), **fields}, source)
        except BadInput as err:
            raise BadInput(source, f"{where}.{err.field}", err.message) from None
        per_model = _condition_models(source, f"{where}.models", c.get("models"), model_names, protocol)
        changed = protocol.changed_fields(base)
        if len(changed) > 1:
            raise BadInput(source, where, f"condition {name!r} changes {len(changed)} fields ({', '.join(changed)}); "
                                          "each condition changes one (or, with models:, the models' settings)")
        if name == "baseline" and (changed or per_model):
            what = changed[0] if changed else "models"
            raise BadInput(source, f"{where}.{what}", "`baseline` is the sweep's protocol itself and changes nothing")
        if not changed and not per_model:
            if baseline is not None:
                raise BadInput(source, where, f"conditions {baseline!r} and {name!r} both change nothing")
            baseline = name
        key = json.dumps([protocol.hash, per_model], sort_keys=True)
        if key in by_hash:
            raise BadInput(source, where, f"condition {name!r} is the same as {by_hash[key]!r}")
        by_hash[key] = name
        out.append(Condition(name, protocol, changed[0] if changed else None, per_model))
    return out


def _condition_models(source: str, where: str, raw: Any, model_names: list[str],
                      protocol: Protocol) -> dict[str, dict[str, Any]]:
    """A condition's ``models:``: for each named model, protocol fields of its own."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not raw:
        raise BadInput(source, where, "must map model names to protocol fields ({claude: {effort: low}})")
    out: dict[str, dict[str, Any]] = {}
    for name, fields in raw.items():
        if name not in model_names:
            raise BadInput(source, f"{where}.{name}", f"no model of the sweep is named {name!r} "
                                                      f"(known: {', '.join(model_names)})")
        if not isinstance(fields, dict) or not fields or "preset" in fields:
            raise BadInput(source, f"{where}.{name}", "must be a mapping of protocol fields (no preset)")
        try:
            resolve_protocol({**protocol.to_dict(), **fields}, source)
        except BadInput as err:
            raise BadInput(source, f"{where}.{name}.{err.field}", err.message) from None
        out[name] = dict(fields)
    return out


def parse_sweep(data: Any, source: str = "sweep", base_dir: Path | None = None, mazes: Any = None) -> Sweep:
    """Validate a parsed sweep document; any broken rule is one ``BadInput`` line. The twins of
    ``variants:`` are built when first needed (``Sweep.build_twins``).

    ``mazes`` replaces the document's maze set (the command line's ``--mazes``).
    """
    if not isinstance(data, dict):
        raise BadInput(source, "(file)", "a sweep is a YAML mapping (name, mazes, models, ...)")
    _unknown(source, "", data, SWEEP_KEYS)
    name = check_name(source, "name", data.get("name", Path(source).stem))
    description = data.get("description") or ""
    if not isinstance(description, str):
        raise BadInput(source, "description", "must be text")
    repeats = data.get("repeats", 1)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise BadInput(source, "repeats", f"must be a whole number >= 1 (got {repeats!r})")
    try:
        protocol = resolve_protocol(data.get("protocol"), source)
    except BadInput as err:
        raise BadInput(source, f"protocol.{err.field}" if err.field else "protocol", err.message) from None
    raw_models = data.get("models")
    if not isinstance(raw_models, list) or not raw_models:
        raise BadInput(source, "models", "must be a non-empty list of model entries")
    models = [_parse_model(source, i, m, base_dir, protocol) for i, m in enumerate(raw_models)]
    seen_names: dict[str, int] = {}
    seen_identity: dict[str, int] = {}
    for i, m in enumerate(models):
        if m.name in seen_names:
            raise BadInput(source, f"models[{i}].name", f"{m.name!r} is used twice (also models[{seen_names[m.name]}])")
        seen_names[m.name] = i
        ident = json.dumps(m.identity(), sort_keys=True, default=str)
        if ident in seen_identity:
            raise BadInput(source, f"models[{i}]", f"the same model as models[{seen_identity[ident]}] (same model, params and serve)")
        seen_identity[ident] = i
    conditions = _parse_conditions(source, data.get("conditions"), protocol, [m.name for m in models])
    for i, m in enumerate(models):
        _check_provider(source, i, m, conditions)
        if m.serve is not None and m.serve.engine == "llama_cpp":
            for c in model_conditions(m, conditions):
                if c.protocol.uses_image:
                    raise BadInput(source, f"models[{i}].protocol.observation",
                                   f"{m.name} is served by llama_cpp, which reads text only "
                                   f"(condition {c.name!r} sends images): use observation: text")
    if mazes is None:
        mazes_spec, resolved = data.get("mazes"), _resolve_maze_spec(data.get("mazes"), source, "mazes", base_dir)
    else:
        mazes_spec, resolved = mazes, _resolve_maze_spec(mazes, "--mazes", "", None)
        # mazes asked for on the command line are every model's mazes
        models = [replace(m, mazes=None) for m in models]
    specs = [mazes] if mazes is not None else [_located(data.get("mazes"), base_dir), *(
        _located(m.get("mazes"), base_dir) for m in raw_models if isinstance(m, dict))]
    try:
        sealed = sealed_of(specs)
    except BadInput as err:
        raise BadInput(source, "mazes", err.line()) from None
    kinds = parse_variants(data["variants"], source) if data.get("variants") is not None else []
    check_projections(kinds, [(f"{m.name} in condition {c.name!r}", c.protocol) for m in models
                              for c in model_conditions(m, conditions)], source)
    sweep = Sweep(name=name, source=source, mazes_spec=mazes_spec, sources=resolved, repeats=repeats,
                  protocol=protocol, models=models, conditions=conditions, description=description, run_name=name,
                  variants=kinds, sealed=sealed)
    for i, m in enumerate(models):
        _check_serve_limits(source, i, m, conditions, sweep)
    _check_renderable(source, sweep)
    return sweep


def _check_renderable(source: str, sweep: Sweep) -> None:
    """Refuse at load a maze a condition's frames cannot draw (the 3D frames draw fewer kinds)."""
    from env.render import check_renderable

    for m in sweep.models:
        for c in model_conditions(m, sweep.conditions):
            if c.protocol.uses_image and c.protocol.render.is_3d:
                for maze in m.mazes if m.mazes is not None else sweep.sources:
                    check_renderable(maze, c.protocol.render, source)

