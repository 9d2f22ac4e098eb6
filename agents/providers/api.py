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
  in docs/providers.md).

What it does not declare, it shares with every provider: the request body and the reading of the
answer are litellm's one translation (``agents.litellm_transport``), for a synchronous call and a
batch line alike, and a failure is classed by litellm's exception or the HTTP status
(``agents.transport``). The registry (``agents.providers``) finds adapters by listing the
package: a new provider is a new module here, its docs and its tests (docs/providers.md,
*Adding a provider*).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from agents.providers.family import Price, ProviderFamily

if TYPE_CHECKING:
    from agents.model import ModelConfig
    from agents.providers.batches import ProviderBatches


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


class ListingError(Exception):
    """A listing that did not answer: ``kind`` is ``unreachable``, ``refused`` or ``status``."""

    def __init__(self, kind: str, detail: str, status: int | None = None):
        super().__init__(detail)
        self.kind, self.detail, self.status = kind, detail, status


__all__ = ["ListingError", "ProviderAPI"]
