"""Moonshot's Kimi K2.5 / K2.6: the family, its batch tier, its one pricing quirk and the
account's balance.

Requests go through litellm (``moonshot/...``); batches through OpenAI's SDK at Moonshot's
endpoint (Moonshot copies OpenAI's files-and-batches API). litellm's price reading misses the
cache reads Moonshot reports at the top level of ``usage``, so its answers are priced from the
usage gridbench read. The balance is Moonshot's ``GET /v1/users/me/balance``: USD on its
international platform (``api.moonshot.ai``), CNY on its China platform (``api.moonshot.cn``).
Every fact is in docs/providers.md with its source.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from agents.providers.api import Balance, ListingError, ProviderAPI, get_json
from agents.providers.batches import ProviderBatches
from agents.providers.family import CONSTRAINS_JSON_ONLY, STANDARD, ProviderFamily, Switch, Tier
from agents.providers.openai import OpenAIBatches

if TYPE_CHECKING:
    from agents.model import ModelConfig

API_BASE = "https://api.moonshot.ai/v1"
# where litellm finds Moonshot's endpoint and key when the entry names neither
BASE_ENV, KEY_ENV = "MOONSHOT_API_BASE", "MOONSHOT_API_KEY"
# (batch bodies must not carry temperature, top_p, n or the penalties: the family never sends them)
TIERS = (STANDARD, Tier("batch", 0.6, max_bytes=100 * 2**20, window="12 hours to 7 days"))
KIMI_K2 = ProviderFamily(
    name="moonshot-kimi-k2", title="Kimi K2.5 / K2.6 (Moonshot)",
    switch=Switch(on={"thinking": {"type": "enabled"}}, off={"thinking": {"type": "disabled"}}),
    fixed_sampling=("temperature", "top_p", "n", "presence_penalty", "frequency_penalty"),
    fixed_why="Moonshot fixes them for kimi-k2.6: temperature 1.0 with thinking, 0.6 without",
    seed=False, litellm_extra_body=("thinking",), tiers=TIERS,
    unconstrained_why=CONSTRAINS_JSON_ONLY,
    reasoning_text="message.reasoning_content",
    reasoning_tokens="not reported: counted from the reasoning text",
    cached_tokens="usage.cached_tokens (top level), or usage.prompt_tokens_details.cached_tokens",
    litellm_misses_cache_reads=True, prior="kimi",
)
_KIMI_K2 = re.compile(r"kimi-k2\.[56]\b")


class MoonshotAPI(ProviderAPI):
    name = "moonshot"
    families = (KIMI_K2,)
    reads_balance = True

    def family(self, prefix: str, name: str) -> ProviderFamily | None:
        return KIMI_K2 if prefix == "moonshot" and _KIMI_K2.search(name) else None

    def batches(self, config: ModelConfig) -> ProviderBatches:
        return OpenAIBatches(config, API_BASE)

    def balance(self, config: ModelConfig, key: str | None) -> Balance:
        """``GET {base}/users/me/balance``: ``data.available_balance`` (cash and vouchers; at 0 or
        below the inference API refuses calls), in CNY on the China platform, USD elsewhere."""
        base = (config.api_base or os.environ.get(BASE_ENV) or API_BASE).rstrip("/")
        where = f"{base}/users/me/balance"
        answer = get_json(where, key if key is not None else os.environ.get(KEY_ENV))
        try:
            if answer.get("code", 0) != 0:  # 0 is success; the status of another is its code
                raise ListingError("status", f"code {answer['code']!r}")
            amount = float(answer["data"]["available_balance"])
        except (AttributeError, KeyError, TypeError, ValueError):
            raise ListingError("status", "an answer without data.available_balance") from None
        china = (urlparse(base).hostname or "").endswith("moonshot.cn")
        return Balance(amount, "CNY" if china else "USD", where)


API = MoonshotAPI()
