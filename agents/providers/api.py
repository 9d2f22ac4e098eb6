"""A provider adapter: everything gridbench knows of one provider API, in one module.

Each module of ``agents.providers`` other than this one, ``family`` and ``batches`` is one
adapter and defines ``API``, an instance of a ``ProviderAPI`` subclass (Inspect AI's ``ModelAPI``
in spirit: a provider overrides only what differs). It declares:

- ``families``: its rows of the provider table (``ProviderFamily``: the request fields that carry
  the protocol's intent, what the provider refuses, where its answer's parts come back, its tiers
  and their prices, the study's model that stands for it in a cost estimate);
- ``family``: which model strings it claims (a litellm prefix and a name);
- ``batches``: its batch endpoints, where a family sells a ``batch`` tier;
- ``listing`` (with ``reads_listing``): the preflight's model listing, where litellm's is
  missing or wrong;
- ``prices``: list prices where litellm's table is behind the provider's (each with its source
  in docs/providers.md);
- ``balance`` (with ``reads_balance``): what the account of a key has left to spend, where the
  provider documents an endpoint for it (the preflight holds a run's upper bound against it).

What it does not declare, it shares with every provider: the request body and the reading of the
answer are litellm's one translation (``agents.litellm_transport``), for a synchronous call and a
batch line alike, and a failure is classed by litellm's exception or the HTTP status
(``agents.transport``). The registry (``agents.providers``) finds adapters by listing the
package: a new provider is a new module here, its docs and its tests (docs/providers.md,
*Adding a provider*).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from agents.providers.family import Price, ProviderFamily

if TYPE_CHECKING:
    from agents.model import ModelConfig
    from agents.providers.batches import ProviderBatches

# an endpoint that takes longer than this to accept a connection is unreachable for a run too
CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 20.0


class ProviderAPI:
    """One provider API (see the module's docstring)."""

    name: ClassVar[str]
    families: ClassVar[tuple[ProviderFamily, ...]]
    # claims every model no other adapter claims (the registry asks it last)
    fallback: ClassVar[bool] = False
    # the preflight asks ``listing`` for the provider's models, not litellm's listing
    reads_listing: ClassVar[bool] = False
    # standard prices by the model's name at the provider, where litellm's table is behind
    prices: ClassVar[dict[str, Price]] = {}
    # the preflight asks ``balance`` what the key's account has left to spend
    reads_balance: ClassVar[bool] = False

    def family(self, prefix: str, name: str) -> ProviderFamily | None:
        """The family of a litellm model string ``prefix/name``; None when it is not this API's."""
        return None

    def batches(self, config: ModelConfig) -> ProviderBatches:
        """The batch endpoints for ``config`` (a family of this API with a ``batch`` tier)."""
        raise NotImplementedError(f"{self.name} sells no batch tier")

    def listing(self, config: ModelConfig, key: str | None) -> list[str]:
        """The ids of the models the provider lists for ``key`` (``reads_listing``); raises
        ``ListingError`` when the listing does not answer, naming no key."""
        raise NotImplementedError(f"{self.name} reads no listing of its own")

    def balance(self, config: ModelConfig, key: str | None) -> Balance:
        """What the account of ``key`` has left to spend (``reads_balance``); raises
        ``ListingError`` when the provider does not answer, naming no key."""
        raise NotImplementedError(f"{self.name} reads no balance")


@dataclass(frozen=True)
class Balance:
    """An account's balance as its provider reports it: ``amount`` in ``currency`` (an ISO
    code: ``USD``, ``CNY``), read at ``where`` (a URL, which names no key)."""

    amount: float
    currency: str
    where: str

    def shown(self) -> str:
        return f"${self.amount:,.2f}" if self.currency == "USD" else f"{self.amount:,.2f} {self.currency}"


class ListingError(Exception):
    """A listing that did not answer: ``kind`` is ``unreachable``, ``refused`` or ``status``."""

    def __init__(self, kind: str, detail: str, status: int | None = None):
        super().__init__(detail)
        self.kind, self.detail, self.status = kind, detail, status


def connection_cause(err: Exception) -> str:
    """Why a connection failed, in a few words, without the request (its headers hold the key)."""
    import httpx

    if isinstance(err, httpx.TimeoutException):
        return f"no answer within {CONNECT_TIMEOUT_S:g} s" if isinstance(err, httpx.ConnectTimeout) \
            else f"no answer within {READ_TIMEOUT_S:g} s"
    text = str(err) or type(err).__name__
    # the OS's own words ("[Errno 111] Connection refused"): the last part of a chained message
    return text.rsplit("] ", 1)[-1] if "[Errno" in text else text


def get_json(url: str, key: str | None, timeout: float = READ_TIMEOUT_S, connect: float = CONNECT_TIMEOUT_S) -> Any:
    """``GET url`` with ``key`` as a bearer token: the answer's JSON when it is 200, else
    ``ListingError`` (``unreachable``; ``refused``: HTTP 401 or 403; ``status``: any other status,
    or an answer that is not JSON). Its errors never hold what the server sent back: a provider
    may echo the key."""
    import httpx

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        r = httpx.get(url, headers=headers, timeout=httpx.Timeout(timeout, connect=connect))
    except httpx.HTTPError as err:
        raise ListingError("unreachable", connection_cause(err)) from None
    if r.status_code in (401, 403):
        raise ListingError("refused", f"HTTP {r.status_code}", r.status_code)
    if r.status_code != 200:
        raise ListingError("status", f"HTTP {r.status_code}", r.status_code)
    try:
        return r.json()
    except ValueError:
        raise ListingError("status", "an answer that is not JSON") from None


__all__ = ["CONNECT_TIMEOUT_S", "READ_TIMEOUT_S", "Balance", "ListingError", "ProviderAPI", "connection_cause",
           "get_json"]
