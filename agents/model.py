"""The one validated description of how to call a model: ``ModelConfig``.

A sweep's model entry is parsed into a ``ModelConfig`` once, when the sweep is loaded
(``parse_model_config``), and that object travels unchanged to every actor that builds an agent
from it; every rule of the entry an agent could reject is checked here (and each condition
against the entry's provider family where the sweep's conditions are known, in
``orchestrator.sweep``), so ``gridbench run --dry-run`` refuses a bad entry with the same one-line
``BadInput`` instead of every episode ending in error; the agent checks none of it again.
Placement (servers, concurrency, budgets, a model's own mazes) is the orchestrator's business
and lives in ``orchestrator.sweep.ModelEntry``, which holds a ``ModelConfig``; nothing here knows
how a model is served (a served entry's provider family comes in as ``served_as``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from agents.providers import Price, ProviderFamily, Tier, check_provider, check_tier, family_for
from env.errors import BadInput
from env.names import check_name

ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
KNOWN_BUILTINS = ("oracle", "random", "explorer")
BUILTIN_PREFIX = "builtin/"


def is_builtin(model: str) -> bool:
    """Whether a model string names a built-in agent (``builtin/<name>``): a reference point that
    needs no model, which the report keeps apart from the models (docs/report.md)."""
    return str(model).startswith(BUILTIN_PREFIX)

CLIENTS = ("auto", "litellm", "openai")
# params that would put a secret or a second endpoint into a sweep file, or stack litellm's
# retries under the agent's own policy
FORBIDDEN_PARAMS = {
    "api_key": "keys go in api_key_env", "api_base": "endpoints go in api_base",
    "base_url": "endpoints go in api_base", "extra_headers": "headers could carry keys",
    "headers": "headers could carry keys", "num_retries": "retries come from params.retries",
    "max_retries": "retries come from params.retries",
}
# the key sent to an endpoint that takes none: OpenAI-compatible clients refuse to send no key
NO_KEY = "EMPTY"
DEFAULT_TIMEOUT_S = 900.0  # a 64k-token thinking turn can take many minutes
DEFAULT_RETRIES = 8
# a batch arm's driver: how often it asks the provider about a batch in flight (the
# providers' guides poll about once a minute), and how long a round waits for its last episodes
DEFAULT_BATCH_POLL_S = 60.0
DEFAULT_BATCH_ROUND_WAIT_S = 5.0
# Prefixes of litellm model strings that name an OpenAI-compatible server; the server knows the
# model by the rest (``hosted_vllm/Qwen/Qwen3-8B`` is ``Qwen/Qwen3-8B`` to vLLM).
OPENAI_COMPATIBLE_PREFIXES = frozenset({
    "openai", "hosted_vllm", "custom_openai", "openai_like", "llamafile", "lm_studio",
})


@dataclass(frozen=True)
class ModelConfig:
    """How to reach one model. Built only by ``parse_model_config`` (or ``for_model``)."""

    name: str
    model: str
    family: ProviderFamily  # what the requests speak: agents/providers/
    api_base: str | None = None
    api_key_env: str | None = None
    params: dict[str, Any] = field(default_factory=dict)  # as the sweep wrote them
    price: Price | None = None
    client: str | None = None  # "litellm" | "openai"; None for built-in and human agents
    provider: str | None = None  # the entry's own choice of provider family (docs/providers.md)
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    tier: str = "standard"  # standard | flex | batch: how its answers are bought (docs/providers.md)
    batch_poll_s: float = DEFAULT_BATCH_POLL_S
    batch_round_wait_s: float = DEFAULT_BATCH_ROUND_WAIT_S

    @property
    def tier_facts(self) -> Tier:
        return self.family.tier(self.tier)

    @property
    def builtin(self) -> bool:
        return is_builtin(self.model)

    @property
    def human(self) -> bool:
        return self.model.startswith("human/")

    @property
    def request_name(self) -> str:
        """The name an OpenAI-compatible server knows this model by."""
        return request_name(self.model)

    def identity(self) -> dict[str, Any]:
        """What makes this model's answers what they are (part of every episode id)."""
        out: dict[str, Any] = {"model": self.model, "params": self.params}
        if self.provider is not None:
            out["provider"] = self.provider
        if self.tier != "standard":  # left out at its default: ids from before tiers stay the same
            out["tier"] = self.tier
        return out

    @property
    def request_params(self) -> dict[str, Any]:
        """``params`` as they go into each request: the agent's own ``timeout`` and ``retries``
        removed, and ``image_detail``, which goes into every image part instead (``image_detail``)."""
        return {k: v for k, v in self.params.items() if k not in ("timeout", "retries", "image_detail")}

    @property
    def image_detail(self) -> str | None:
        """OpenAI's ``image_url.detail`` for every image of every request (``params.image_detail``)."""
        value = self.params.get("image_detail")
        return str(value) if value is not None else None

    def public(self) -> dict[str, Any]:
        """The entry as a manifest records it: names of key variables only, never their values."""
        out: dict[str, Any] = {"name": self.name, "model": self.model}
        for k in ("api_base", "api_key_env", "client", "provider"):
            if getattr(self, k) is not None:
                out[k] = getattr(self, k)
        if self.tier != "standard":
            out["tier"] = self.tier
            if self.tier == "batch":
                out["batch"] = {"poll_s": self.batch_poll_s, "round_wait_s": self.batch_round_wait_s}
        if self.price is not None:
            out["price"] = {k: v for k, v in self.price.__dict__.items() if v is not None}
        if self.params:
            out["params"] = self.params
        return out

    def api_key(self, endpoint: str | None = None) -> str | None:
        """The key from the environment variable ``api_key_env`` names; ``BadInput`` when unset.
        An endpoint of its own (``api_base``, or ``endpoint``: a server the run started) without a
        key variable gets ``NO_KEY``, never a provider key from the environment by accident; None
        lets the provider's client read its own variable."""
        if self.api_key_env:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise BadInput(self.name, "api_key_env", f"environment variable {self.api_key_env} is not set")
            return key
        if self.api_base or endpoint:
            return NO_KEY
        return None

    @classmethod
    def for_model(cls, model: str, **entry: Any) -> ModelConfig:
        """A config from keyword fields, validated like a sweep entry (tests, scripts)."""
        return parse_model_config({"model": model, **entry}, source=model)


def request_name(model: str) -> str:
    """The name the endpoint knows ``model`` by: without its provider prefix (``openai/gpt-5``:
    ``gpt-5``; a served ``hosted_vllm/Qwen/Qwen3``:
    ``Qwen/Qwen3``), what litellm sends; a name whose first part is no provider is kept whole.
    The one translation of a model's name into a request: synchronous calls through the openai
    client and every batch line use it."""
    provider, sep, rest = model.partition("/")
    if sep and rest and (provider in OPENAI_COMPATIBLE_PREFIXES or provider in litellm_providers()):
        return rest
    return model


_PROVIDERS: frozenset[str] | None = None


def litellm_providers() -> frozenset[str]:
    """litellm's own provider prefixes (imported lazily: litellm takes seconds to import, so the
    prefixes of OpenAI-compatible servers, all litellm's too, are recognised without it)."""
    global _PROVIDERS
    if _PROVIDERS is None:
        # before litellm's first import: otherwise it fetches its price table online
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        _PROVIDERS = frozenset(str(getattr(p, "value", p)) for p in litellm.provider_list)
    return _PROVIDERS


def _model_string(source: str, where: str, model: Any) -> str:
    if not isinstance(model, str) or not model.strip():
        raise BadInput(source, where, "is required: a litellm model string, builtin/<agent> or human/<name>")
    prefix, _, rest = model.partition("/")
    if not rest:
        raise BadInput(source, where, f"{model!r} has no provider prefix (e.g. openai/gpt-5, builtin/oracle)")
    if prefix == "builtin":
        if rest not in KNOWN_BUILTINS:
            raise BadInput(source, where, f"unknown built-in agent {rest!r} (known: {', '.join(KNOWN_BUILTINS)})")
    elif prefix == "human":
        check_name(source, where, rest)
    elif prefix not in OPENAI_COMPATIBLE_PREFIXES and prefix not in litellm_providers():
        raise BadInput(source, where, f"unknown model prefix {prefix!r}: not builtin, human, or a litellm provider")
    return model


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _price(source: str, where: str, price: Any) -> Price | None:
    if price is None:
        return None
    allowed = ("input", "output", "cached_input")
    if not isinstance(price, dict) or set(price) - set(allowed):
        raise BadInput(source, where, "must be {input: USD per token, output: USD per token[, cached_input: ...]}")
    for k in allowed:
        v = price.get(k)
        if (v is None and k != "cached_input") or (v is not None and (not _number(v) or v < 0)):
            raise BadInput(source, f"{where}.{k}", f"must be a number >= 0 of USD per token (got {v!r})")
    return Price(**{k: float(v) for k, v in price.items()})


def _params(source: str, where: str, params: Any) -> tuple[dict[str, Any], float, int]:
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise BadInput(source, where, "must be a mapping of extra request arguments")
    for k in params:
        why = FORBIDDEN_PARAMS.get(str(k).lower())
        if why:
            raise BadInput(source, f"{where}.{k}", f"not allowed here: {why}")
    timeout = params.get("timeout", DEFAULT_TIMEOUT_S)
    if not _number(timeout) or timeout <= 0:
        raise BadInput(source, f"{where}.timeout", f"must be a positive number of seconds (got {timeout!r})")
    retries = params.get("retries", DEFAULT_RETRIES)
    if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
        raise BadInput(source, f"{where}.retries", f"must be a whole number, 0 or more (got {retries!r})")
    return dict(params), float(timeout), retries


def _client(source: str, where: str, client: Any, model: str, api_base: str | None, served: bool) -> str | None:
    """``auto``: the lean OpenAI-compatible client for self-hosted servers (``served``: started by
    the run, or ``hosted_vllm/`` with an ``api_base``), whose many concurrent episodes would
    otherwise spend their CPU in litellm; litellm for everything else."""
    if client not in CLIENTS:
        raise BadInput(source, where, f"must be one of {', '.join(CLIENTS)} (got {client!r})")
    if model.startswith(("builtin/", "human/")):
        if client != "auto":
            raise BadInput(source, where, "only models that are called have a client")
        return None
    endpoint = served or api_base is not None
    if client == "auto":
        return "openai" if served or (model.startswith("hosted_vllm/") and endpoint) else "litellm"
    if client == "openai" and not endpoint:
        raise BadInput(source, where, "openai needs an OpenAI-compatible endpoint: api_base or serve")
    return client


AGENT_KEYS = ("name", "model", "api_base", "api_key_env", "params", "price", "client", "provider", "tier", "batch")


def parse_model_config(entry: dict[str, Any], source: str, where: str = "", *,
                       served_as: str | None = None) -> ModelConfig:
    """Validate the agent-facing keys of a model entry (``AGENT_KEYS``); ``where`` prefixes field
    names in errors (``models[2]``). ``served_as``: the run starts this model's servers, whose URL
    comes at run time and which speak this provider family (the orchestrator's serve spec says
    which: ``ServeSpec.speaks``); the entry's own ``provider`` still wins."""
    served = served_as is not None
    at = f"{where}." if where else ""
    if "thinking" in entry:
        raise BadInput(source, f"{at}thinking", "thinking is set in the protocol now (thinking, effort, "
                                                "thinking_budget; docs/providers.md): use the entry's protocol")
    model = _model_string(source, f"{at}model", entry.get("model"))
    name = check_name(source, f"{at}name", entry.get("name", model.rsplit("/", 1)[-1]))
    api_base = entry.get("api_base")
    if api_base is not None and (not isinstance(api_base, str) or not re.match(r"^https?://", api_base)):
        raise BadInput(source, f"{at}api_base", "must be an http(s):// URL")
    key_env = entry.get("api_key_env")
    if key_env is not None and (not isinstance(key_env, str) or not ENV_NAME_PATTERN.match(key_env)):
        # never echo the value: it may be the key itself, pasted where its variable's name belongs
        raise BadInput(source, f"{at}api_key_env", "must be the NAME of an environment variable, not a key")
    params, timeout, retries = _params(source, f"{at}params", entry.get("params"))
    price = _price(source, f"{at}price", entry.get("price"))
    provider = check_provider(source, f"{at}provider", entry.get("provider"))
    client = _client(source, f"{at}client", entry.get("client", "auto"), model, api_base, served)
    if model.startswith(("builtin/", "human/")):
        for k in ("api_base", "api_key_env", "params", "price", "provider"):
            if entry.get(k) is not None:
                raise BadInput(source, f"{at}{k}", f"{model} is not called over an API: it takes no {k}")
    family = family_for(model, provider=provider if provider is not None else served_as)
    controlled = family.refusal_of_params(params)
    if controlled is not None:
        raise BadInput(source, f"{at}{controlled[0]}", controlled[1])
    tier = check_tier(source, f"{at}tier", entry.get("tier"), family)
    poll_s, wait_s = _batch(source, f"{at}batch", entry.get("batch"), tier)
    return ModelConfig(name=name, model=model, api_base=api_base, api_key_env=key_env, params=params,
                       price=price, client=client, provider=provider, family=family,
                       timeout_s=timeout, retries=retries, tier=tier, batch_poll_s=poll_s, batch_round_wait_s=wait_s)


def _batch(source: str, where: str, batch: Any, tier: str) -> tuple[float, float]:
    """A batch arm's ``batch: {poll_s, round_wait_s}`` (both optional)."""
    if batch is None:
        return DEFAULT_BATCH_POLL_S, DEFAULT_BATCH_ROUND_WAIT_S
    if tier != "batch":
        raise BadInput(source, where, "only a model entry with tier: batch takes batch settings")
    if not isinstance(batch, dict) or set(batch) - {"poll_s", "round_wait_s"}:
        raise BadInput(source, where, "must be {poll_s: seconds, round_wait_s: seconds} (both optional)")
    out = []
    for key, default in (("poll_s", DEFAULT_BATCH_POLL_S), ("round_wait_s", DEFAULT_BATCH_ROUND_WAIT_S)):
        value = batch.get(key, default)
        if not _number(value) or value <= 0:
            raise BadInput(source, f"{where}.{key}", f"must be a positive number of seconds (got {value!r})")
        out.append(float(value))
    return out[0], out[1]
