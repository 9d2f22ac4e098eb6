"""The preflight: each called arm of a sweep checked once, without spending, before any episode.

A run whose endpoint is down, whose key is refused or whose model the provider does not have
would otherwise spend minutes retrying and end every episode in ``error``. Before Ray starts,
each arm called at an endpoint or a provider asks for its model listing, which costs nothing:

- an OpenAI-compatible endpoint (an entry with ``api_base`` that the openai client speaks to, or
  an ``openai/``, ``hosted_vllm/``... model with one): ``GET {api_base}/models`` with the
  entry's key, and the model's name (``request_name``) must be among the ids listed;
- a provider reached through litellm: litellm's own listing of that provider's models
  (``ProviderConfigManager.get_provider_model_info(...).get_models``, the call behind
  ``litellm.get_valid_models(check_provider_endpoint=True)``, which hides its errors), and the
  model must be listed, as itself or as the alias of a dated version; a provider litellm has no
  listing for is not checked (the run says so), its first call tells;
- a served arm (``check_servers``, once its servers are up): each replica's ``/v1/models`` must
  list the model, as the server's own health check does.

Unreachable, a refused key (HTTP 401/403) or a model not listed is ``BadInput``: one line naming
the sweep file, the field and the arm, the cause, exit 2, nothing written. ``--no-preflight``
skips it (an endpoint without a model listing, a provider whose listing leaves out an alias).
Errors never echo what a server sent back: a provider may echo the key.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.model import OPENAI_COMPATIBLE_PREFIXES, ModelConfig
from agents.providers import ListingError, api_of
from agents.secrets import scrub
from env.errors import BadInput

if TYPE_CHECKING:
    from orchestrator.serving.server_pool import ServerPool
    from orchestrator.sweep import ModelEntry, Sweep

# an endpoint that takes longer than this to accept a connection is unreachable for a run too
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 20.0
SKIP_HINT = "(--no-preflight skips this check)"


@dataclass(frozen=True)
class Checked:
    """One arm's preflight: what was asked, and whether it could be checked at all."""

    name: str
    where: str  # the listing asked (a URL, or "<provider> model listing")
    checked: bool  # False: no free check exists for it
    seconds: float


def _connection_cause(err: Exception) -> str:
    """Why a connection failed, in a few words, without the request (its headers hold the key)."""
    import httpx

    if isinstance(err, httpx.TimeoutException):
        return f"no answer within {CONNECT_TIMEOUT_S:g} s" if isinstance(err, httpx.ConnectTimeout) \
            else f"no answer within {READ_TIMEOUT_S:g} s"
    text = str(err) or type(err).__name__
    # the OS's own words ("[Errno 111] Connection refused"): the last part of a chained message
    return text.rsplit("] ", 1)[-1] if "[Errno" in text else text


def openai_listing(api_base: str, key: str | None, timeout: float = READ_TIMEOUT_S,
                   connect: float = CONNECT_TIMEOUT_S) -> list[str]:
    """The model ids ``GET {api_base}/models`` lists; ``ListingError`` when it does not answer 200.
    The one reading of that listing: the preflight's, and a model server's health check's."""
    import httpx

    url = f"{api_base.rstrip('/')}/models"
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        r = httpx.get(url, headers=headers, timeout=httpx.Timeout(timeout, connect=connect))
    except httpx.HTTPError as err:
        raise ListingError("unreachable", _connection_cause(err)) from None
    if r.status_code in (401, 403):
        raise ListingError("refused", f"HTTP {r.status_code}", r.status_code)
    if r.status_code != 200:
        raise ListingError("status", f"HTTP {r.status_code}", r.status_code)
    try:
        data = r.json().get("data")
        return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
    except (ValueError, AttributeError, TypeError):
        raise ListingError("status", "an answer that is not a model listing") from None


def _litellm_listing(provider: str) -> Any:
    """litellm's model-listing helper for a provider; None where litellm has none."""
    from agents.model import litellm_providers

    litellm_providers()  # imports litellm the way gridbench always does (its local price table)
    from litellm.types.utils import LlmProviders
    from litellm.utils import ProviderConfigManager

    try:
        return ProviderConfigManager.get_provider_model_info(model=None, provider=LlmProviders(provider))
    except ValueError:
        return None


def provider_listing(info: Any, key: str | None, api_base: str | None) -> list[str]:
    """The model ids litellm's listing ``info`` returns for the provider; ``ListingError`` when it fails."""
    import httpx

    try:
        return [str(m) for m in info.get_models(api_key=key, api_base=api_base)]
    except httpx.HTTPStatusError as err:
        status = err.response.status_code
        raise ListingError("refused" if status in (401, 403) else "status", f"HTTP {status}", status) from None
    except httpx.HTTPError as err:
        raise ListingError("unreachable", _connection_cause(err)) from None
    except Exception as err:  # noqa: BLE001 - litellm wraps a provider's refusal in a plain Exception
        # its text holds the provider's answer, which may echo the key: only the status is kept
        found = re.search(r"\bHTTP (\d{3})\b", str(err))
        if found:
            status = int(found.group(1))
            raise ListingError("refused" if status in (401, 403) else "status", f"HTTP {status}", status) from None
        raise ListingError("status", type(err).__name__) from None


def listed(model: str, ids: Iterable[str], provider: str | None = None) -> bool:
    """Whether a listing holds the model: its id as is (less a ``models/`` or provider prefix),
    or a dated version of it (``claude-sonnet-4-5`` for ``claude-sonnet-4-5-20250929``, ``gpt-4o``
    for ``gpt-4o-2024-08-06``; a ``-latest`` alias for any dated version of its family)."""
    def bare(i: str) -> str:
        i = i.removeprefix("models/")
        return i.removeprefix(f"{provider}/") if provider else i

    names = {bare(i) for i in ids}
    wanted = bare(model)
    if wanted in names:
        return True
    # a version is the alias and a date: -20250929 or -2024-08-06
    dated = re.compile(re.escape(wanted.removesuffix("-latest")) + r"-(\d{8}|\d{4}-\d{2}-\d{2})")
    return any(dated.fullmatch(n) for n in names)


def _endpoint_kind(config: ModelConfig) -> str:
    """``openai`` (an OpenAI-compatible endpoint), ``provider`` (litellm's listing) or ``none``."""
    prefix = config.model.partition("/")[0]
    if config.api_base is not None and (config.client == "openai" or prefix in OPENAI_COMPATIBLE_PREFIXES):
        return "openai"
    return "provider"


def _refusal(source: str, i: int, m: ModelEntry, where: str, err: ListingError) -> BadInput:
    """The one line for a listing that failed: the field to look at, the arm, the cause."""
    field = "api_base" if m.config.api_base else "model"
    if err.kind == "unreachable":
        why = f"cannot reach {where}: {err.detail}"
    elif err.kind == "refused":
        field = "api_key_env"
        key_env = m.config.api_key_env
        why = f"{where} refused {f'the key in {key_env}' if key_env else 'a request without a key'} ({err.detail})"
    else:
        why = f"{where} answered {err.detail} {SKIP_HINT}"
    return BadInput(source, f"models[{i}].{field}", scrub(f"{m.name}: {why}"))


def check_arm(source: str, i: int, m: ModelEntry) -> Checked:
    """Check one called (not served) arm; ``BadInput`` when it cannot run."""
    t0 = time.monotonic()
    config = m.config
    key = config.api_key()
    provider = config.model.partition("/")[0]
    if _endpoint_kind(config) == "openai":
        assert config.api_base is not None
        where = f"{config.api_base.rstrip('/')}/models"
        fetch: Callable[[], list[str]] = lambda: openai_listing(config.api_base or "", key)  # noqa: E731
        provider_prefix = None
    elif (api := api_of(config.family)).reads_listing:
        where = f"{provider}'s model listing" + (f" at {config.api_base}" if config.api_base else "")
        fetch = lambda: api.listing(config, key)  # noqa: E731
        provider_prefix = provider
    else:
        info = _litellm_listing(provider)
        if info is None:
            return Checked(m.name, f"{provider}: litellm has no model listing", False, time.monotonic() - t0)
        where = f"{provider}'s model listing" + (f" at {config.api_base}" if config.api_base else "")
        fetch = lambda: provider_listing(info, key, config.api_base)  # noqa: E731
        provider_prefix = provider
    try:
        ids = fetch()
    except ListingError as err:
        raise _refusal(source, i, m, where, err) from None
    if not listed(config.request_name, ids, provider_prefix):
        shown = ", ".join(sorted(ids)[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        raise BadInput(source, f"models[{i}].model", scrub(
            f"{m.name}: {where} does not list {config.request_name!r} (it lists {shown or 'no model'}) {SKIP_HINT}"))
    return Checked(m.name, where, True, time.monotonic() - t0)


def check_called(sweep: Sweep) -> list[Checked]:
    """Every arm of the sweep that is called at an endpoint or a provider (not built in, not
    served), checked once; the first that cannot run is ``BadInput``."""
    return [check_arm(sweep.source, i, m) for i, m in enumerate(sweep.models)
            if m.billed]


def check_servers(sweep: Sweep, pool: ServerPool) -> list[Checked]:
    """Every served arm's replicas, once they are up: each one's ``/v1/models`` lists the model."""
    out = []
    for i, m in enumerate(sweep.models):
        if m.serve is None or not pool.serves(m.name):
            continue
        for replica, info in enumerate(pool.info.get(m.name, [])):
            t0 = time.monotonic()
            label, where = f"{m.name}-{replica}", f"{info['url']}/models"
            try:
                ids = openai_listing(info["url"], None)
            except ListingError as err:
                cause = f"cannot reach {where}: {err.detail}" if err.kind == "unreachable" else \
                    f"{where} answered {err.detail}"
                raise BadInput(sweep.source, f"models[{i}].serve",
                               f"{m.name}: server {label}: {cause} (log: servers/{label}.log)") from None
            if m.config.request_name not in ids:
                raise BadInput(sweep.source, f"models[{i}].serve",
                               f"{m.name}: server {label}: {where} does not list {m.config.request_name!r} "
                               f"(log: servers/{label}.log)")
            out.append(Checked(m.name, where, True, time.monotonic() - t0))
    return out


def summary(checked: list[Checked], found: str = "reachable, key accepted, model listed") -> list[str]:
    """Lines for stderr: what was checked and ``found``, and what could not be checked."""
    lines = []
    ok = [c for c in checked if c.checked]
    if ok:
        names = ", ".join(dict.fromkeys(c.name for c in ok))
        lines.append(f"preflight: {names}: {found} ({sum(c.seconds for c in ok):.1f} s)")
    lines += [f"preflight: {c.name} not checked ({c.where}); its first call will tell" for c in checked if not c.checked]
    return lines
