"""The provider table: every provider API gridbench speaks, one adapter module each.

A model's family (``family_for``) follows from its litellm model string, the engine that serves
it and the model entry's optional ``provider:``; the family (``agents.providers.family``) turns
the protocol's intent into request fields and refuses what its provider cannot honour, and its
adapter (``api_of``, ``agents.providers.api``) holds whatever else is the provider's own: its
batch endpoints, its model listing where litellm's will not do, its tiers and prices.

The adapters are found by listing this package, so a new provider is one new module here
(docs/providers.md, *Adding a provider*); the generic adapter, litellm's reach to any other
provider, is asked last.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any

from agents.providers.api import Balance, ListingError, ProviderAPI
from agents.providers.batches import Outcome, ProviderBatches, errored, failed
from agents.providers.family import (
    CONTROLLED_PARAMS,
    IMAGE_DETAILS,
    TIERS,
    Control,
    Price,
    ProviderFamily,
    Switch,
    Tier,
    controlled_param,
    merge_fields,
)
from env.errors import BadInput
from env.study_facts import STUDY_USAGE

_NOT_ADAPTERS = ("api", "batches", "family")


def _adapters() -> tuple[ProviderAPI, ...]:
    found = []
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        if module not in _NOT_ADAPTERS:
            found.append(importlib.import_module(f"{__name__}.{module}").API)
    return tuple(sorted(found, key=lambda api: api.fallback))


APIS: tuple[ProviderAPI, ...] = _adapters()
FAMILIES: tuple[ProviderFamily, ...] = tuple(f for api in APIS for f in api.families)
BY_NAME: dict[str, ProviderFamily] = {f.name: f for f in FAMILIES}
_API_OF: dict[str, ProviderAPI] = {f.name: api for api in APIS for f in api.families}
assert len(BY_NAME) == len(FAMILIES), "two adapters declare a family of the same name"


def family_for(model: str, *, provider: str | None = None) -> ProviderFamily:
    """The family of a litellm model string. ``provider``: a family chosen by name (the model
    entry's own, or what the run's servers for it speak), which wins."""
    if provider is not None:
        return BY_NAME[provider]
    prefix, _, name = model.partition("/")
    for api in APIS:
        found = api.family(prefix, name)
        if found is not None:
            return found
    raise AssertionError("the generic adapter claims every model")


def api_of(family: ProviderFamily) -> ProviderAPI:
    """The adapter that declares ``family``."""
    return _API_OF[family.name]


def list_price(model: str, family: ProviderFamily | None = None) -> Price | None:
    """The standard price of ``model`` where its adapter knows it better than litellm's table
    (``ProviderAPI.prices``); None: litellm's table serves."""
    return api_of(family or family_for(model)).prices.get(model.partition("/")[2])


def check_tier(source: str, where: str, value: Any, family: ProviderFamily) -> str:
    """A model entry's ``tier:``: ``standard`` (the default) or a tier its family sells."""
    if value is None:
        return "standard"
    if value not in TIERS:
        raise BadInput(source, where, f"must be one of {', '.join(TIERS)} (got {value!r})")
    try:
        family.tier(value)
    except KeyError:
        sold = ", ".join(t.name for t in family.tiers)
        raise BadInput(source, where, f"{family.title} has no {value} tier (it has: {sold})") from None
    return str(value)


def check_provider(source: str, where: str, value: Any) -> str | None:
    """A model entry's ``provider:``: one of the families' names, or left out."""
    if value is None:
        return None
    if value not in BY_NAME:
        raise BadInput(source, where, f"unknown provider family {value!r} (known: {', '.join(BY_NAME)})")
    return str(value)


@dataclass(frozen=True)
class StudyPrior:
    """What one model of the study's final run spent (docs/providers.md, *Realised usage*)."""

    model: str
    name: str  # the study's short name for the model (its sweeps' model entry names)
    queries: int
    episodes: int
    mean_output_tokens: int
    median_output_tokens: int

    @property
    def queries_per_episode(self) -> float:
        return self.queries / self.episodes


# the study's realised usage (env.study_facts), by the study's short name for the model
STUDY_PRIORS_BY_MODEL: dict[str, StudyPrior] = {
    name: StudyPrior(model, name, *numbers) for name, (model, *numbers) in STUDY_USAGE.items()}
# per family: the study's model that stands for it (``ProviderFamily.prior``)
STUDY_PRIORS: dict[str, StudyPrior] = {f.name: STUDY_PRIORS_BY_MODEL[f.prior] for f in FAMILIES if f.prior}


__all__ = [
    "APIS", "BY_NAME", "Balance", "CONTROLLED_PARAMS", "FAMILIES", "IMAGE_DETAILS", "STUDY_PRIORS", "STUDY_PRIORS_BY_MODEL",
    "TIERS", "Control", "ListingError", "Price", "Outcome", "ProviderAPI", "ProviderBatches", "ProviderFamily", "StudyPrior",
    "Switch", "Tier", "api_of", "check_provider", "check_tier", "controlled_param", "errored", "failed", "family_for",
    "list_price",
    "merge_fields",
]
