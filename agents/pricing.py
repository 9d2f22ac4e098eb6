"""What one model answer costs, in USD at the model entry's tier (docs/providers.md, *Tiers*).

The standard price is the entry's ``price`` when it has one, then the adapter's list price where
litellm's table is behind the provider (``ProviderAPI.prices``); otherwise what the transport's
answers can be priced by (``Transport.priced_by``): litellm's reading of its own response,
litellm's price table (a provider batch's answers), or nothing (the OpenAI-compatible client has
no price table: 0, which the run's summary shows as unknown). The tier's factor multiplies it.
Where litellm's reading misses a provider's cache reads (``ProviderFamily.litellm_misses_cache_reads``),
they are priced from the usage gridbench read.
"""

from __future__ import annotations

from typing import Any

from agents.litellm_transport import litellm_module
from agents.model import ModelConfig
from agents.providers import Price, list_price
from agents.transport import PricedBy
from agents.usage import Usage


def table_price(model: str) -> Price | None:
    """The standard price of ``model``: its adapter's list price where litellm's table is behind
    (``agents.providers.list_price``), else litellm's table's; None when neither has one."""
    listed = list_price(model)
    if listed is not None:
        return listed
    try:
        info = litellm_module().get_model_info(model)
        return Price(float(info["input_cost_per_token"]), float(info["output_cost_per_token"]),
                     info.get("cache_read_input_token_cost"))
    except Exception:
        return None


def answer_cost(config: ModelConfig, priced_by: PricedBy, usage: Usage, response: Any = None) -> float:
    """USD of one answer of ``config``'s model that used ``usage``; ``response``: the provider's
    own, where ``priced_by`` is ``litellm``."""
    factor = config.tier_facts.price_factor
    price = config.price or (list_price(config.model, config.family) if priced_by != "none" else None)
    if price is not None:
        return factor * price.cost(usage.tokens_in, usage.tokens_out, usage.tokens_cached)
    if priced_by == "none":
        return 0.0
    if priced_by == "table" or (usage.tokens_cached and config.family.litellm_misses_cache_reads):
        price = table_price(config.model)
        return factor * price.cost(usage.tokens_in, usage.tokens_out, usage.tokens_cached) if price else 0.0
    try:
        # the standard figure, whatever tier the answer names: litellm prices an answer that says
        # `service_tier: flex` at the flex rate unless told the tier (None defers to the answer,
        # and OpenAI's flex answers say flex), and the tier's factor above would halve it again
        return factor * float(litellm_module().completion_cost(completion_response=response,
                                                               service_tier="default") or 0.0)
    except Exception:
        return 0.0  # not in litellm's table: give the model a `price` in the sweep
