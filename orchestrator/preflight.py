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

Money (``check_balances``): where an arm's adapter reads the account's balance
(``ProviderAPI.reads_balance``), the balance of each account (provider, endpoint and key
variable) is held against the run's upper bound of what its arms spend there: the dry run's
upper bound of their episodes still to run (every call at its step cap and output cap), or, where
smaller, what the budgets let them spend (an arm's ``max_cost``, the run's ``--max-cost``) plus
the calls that may be in flight when a budget is reached. A bound above the balance is
``BadInput`` on ``models[i].api_key_env`` of the account's first arm, unless the run is told to
go over it (``--over-balance``); a balance in another currency than USD, or a bound that is
unknown (no price), is said and not compared.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agents.model import OPENAI_COMPATIBLE_PREFIXES, ModelConfig
from agents.providers import Balance, ListingError, api_of
from agents.providers.api import CONNECT_TIMEOUT_S, READ_TIMEOUT_S, connection_cause, get_json
from agents.secrets import scrub
from env.errors import BadInput

if TYPE_CHECKING:
    from orchestrator.serving.server_pool import ServerPool
    from orchestrator.sweep import EpisodeSpec, ModelEntry, Sweep
    from traces import RunStore

SKIP_HINT = "(--no-preflight skips this check)"
OVER_BALANCE_HINT = "--over-balance runs it anyway"


@dataclass(frozen=True)
class Checked:
    """One arm's preflight: what was asked, and whether it could be checked at all."""

    name: str
    where: str  # the listing asked (a URL, or "<provider> model listing")
    checked: bool  # False: no free check exists for it
    seconds: float


def openai_listing(api_base: str, key: str | None, timeout: float = READ_TIMEOUT_S,
                   connect: float = CONNECT_TIMEOUT_S) -> list[str]:
    """The model ids ``GET {api_base}/models`` lists; ``ListingError`` when it does not answer 200.
    The one reading of that listing: the preflight's, and a model server's health check's."""
    url = f"{api_base.rstrip('/')}/models"
    try:
        data = get_json(url, key, timeout, connect).get("data")
        return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]
    except (AttributeError, TypeError):
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
        raise ListingError("unreachable", connection_cause(err)) from None
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


@dataclass(frozen=True)
class Funds:
    """One account's balance against the run's upper bound of what its arms spend there."""

    arms: tuple[str, ...]
    where: str  # the balance asked ("<provider>'s balance", and its endpoint)
    balance: Balance | None  # None: not read (``unread`` says why)
    bound: float | None  # USD; None: an arm of the account has no known price
    bounded_by: str  # what sets the bound
    seconds: float
    over_balance: bool = False  # the run was told to go over the balance
    unread: str = ""

    @property
    def compared(self) -> bool:
        return self.balance is not None and self.balance.currency == "USD" and self.bound is not None

    @property
    def short(self) -> bool:
        """The bound is above the balance."""
        return self.compared and self.bound is not None and self.balance is not None \
            and self.bound > self.balance.amount

    def _against(self) -> str:
        """The balance against the bound, in words."""
        assert self.balance is not None
        has = f"balance {self.balance.shown()} at {self.balance.where}"
        if self.bound is None:
            return f"{has}; the run's upper bound there is unknown ({self.bounded_by}): not compared"
        bound = f"${self.bound:,.2f} ({self.bounded_by})"
        if not self.compared:
            return f"{has}; the run's upper bound there, {bound}, is in USD: not compared"
        return f"{has} {'is below' if self.short else 'covers'} the run's upper bound there, {bound}"

    def line(self) -> str:
        """The preflight's line on stderr."""
        names = ", ".join(self.arms)
        if self.balance is None:
            return (f"preflight: {names}: balance not read ({self.where} answered {self.unread}); "
                    "the run's upper bound is not held against it")
        if self.short:
            return f"preflight: {names}: {self._against()}: running anyway (--over-balance)"
        return f"preflight: {names}: {self._against()} ({self.seconds:.1f} s)"

    def refusal(self, source: str, i: int, m: ModelEntry) -> BadInput:
        """The one line for a bound above the balance, on the key variable of its account's first arm."""
        key_env = m.config.api_key_env
        account = f"the account of the key in {key_env}" if key_env else "the account of its key"
        arms = f", arms {', '.join(self.arms)}" if len(self.arms) > 1 else ""
        return BadInput(source, f"models[{i}].api_key_env",
                        scrub(f"{m.name}: {self._against()} ({account}{arms}) ({OVER_BALANCE_HINT})"))


def check_balances(sweep: Sweep, store: RunStore | None = None, *, retry_errors: bool = False,
                   over_balance: bool = False) -> list[Funds]:
    """Each account of the sweep's billed arms whose adapter reads a balance, held against the run's
    upper bound of what it spends there (the module's docstring), over the episodes ``store``'s
    run has still to run (every episode without a store). The first account whose bound is above
    its balance is ``BadInput`` unless ``over_balance``; a key refused or an endpoint unreachable
    is ``BadInput`` as the listing's would be."""
    accounts: dict[tuple[str, str | None, str | None], list[tuple[int, ModelEntry]]] = {}
    for i, m in enumerate(sweep.models):
        api = api_of(m.config.family)
        if m.billed and api.reads_balance:
            accounts.setdefault((api.name, m.config.api_base, m.config.api_key_env), []).append((i, m))
    if not accounts:
        return []
    todo = _to_run(sweep, store, retry_errors, {m.name for arms in accounts.values() for _, m in arms})
    if not todo:
        return []
    from orchestrator.estimate import estimate

    rows = {e.name: e for e in estimate(todo)}
    out = []
    for (provider, api_base, _key_env), arms in accounts.items():
        arms = [(i, m) for i, m in arms if m.name in rows]
        if not arms:
            continue
        i, first = arms[0]
        t0 = time.monotonic()
        where = f"{provider}'s balance" + (f" at {api_base}" if api_base else "")
        bound, bounded_by = _bound(sweep, [(m, rows[m.name]) for _, m in arms])
        names = tuple(m.name for _, m in arms)
        try:
            balance = api_of(first.config.family).balance(first.config, first.config.api_key())
        except ListingError as err:
            if err.kind in ("unreachable", "refused"):
                raise _refusal(sweep.source, i, first, where, err) from None
            out.append(Funds(names, where, None, bound, bounded_by, time.monotonic() - t0, over_balance, err.detail))
            continue
        funds = Funds(names, where, balance, bound, bounded_by, time.monotonic() - t0, over_balance)
        if funds.short and not over_balance:
            raise funds.refusal(sweep.source, i, first)
        out.append(funds)
    return out


def _to_run(sweep: Sweep, store: RunStore | None, retry_errors: bool, arms: set[str]) -> list[EpisodeSpec]:
    """The episodes of ``arms`` the run has still to run."""
    from traces import completed_ids

    done = completed_ids(store, include_errors=not retry_errors) if store is not None else set()
    return [s for s in sweep.episodes() if s.model.name in arms and s.episode_id not in done]


def _bound(sweep: Sweep, arms: list[tuple[ModelEntry, Any]]) -> tuple[float | None, str]:
    """The most ``arms`` (each with its ``ModelEstimate``) may spend in the run, and what sets it:
    every call at its step cap and output cap; or a budget (the arm's ``max_cost``, the run's
    ``--max-cost``) where smaller, plus a call of each episode that may be running when it is
    reached (a budget stops turns from starting, not the calls in flight)."""
    total, in_flight, budgets = 0.0, 0.0, []
    for m, e in arms:
        if e.cost_max is None:
            return None, f"no price known for {m.name}"
        flight = min(e.episodes, m.max_concurrency or e.episodes) * (e.cost_call_max or 0.0)
        in_flight += flight
        if m.max_cost is not None and m.max_cost + flight < e.cost_max:
            total += m.max_cost + flight
            budgets.append(f"{m.name}'s max_cost")
        else:
            total += e.cost_max
    if sweep.max_cost is not None and sweep.max_cost + in_flight < total:
        return sweep.max_cost + in_flight, f"--max-cost {sweep.max_cost:,.2f} and the calls in flight when it is reached"
    if budgets:
        return total, f"{', '.join(budgets)} and the calls in flight when it is reached"
    return total, "every call at its step cap and output cap"
