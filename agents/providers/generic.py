"""Any other provider litellm reaches: no thinking controls known, the standard tier only.

Its requests and answers are litellm's; a model no other adapter claims is this family's.
"""

from __future__ import annotations

from agents.providers.api import ProviderAPI
from agents.providers.family import ProviderFamily

GENERIC = ProviderFamily(
    name="generic", title="another provider (no thinking controls known)",
    switch=None, image_detail=True,
    unconstrained_why=("is not known to take a constraint on a plain reply (name provider: "
                       "llama-cpp or vllm when the endpoint is one of those servers)"),
    reasoning_text="message.reasoning_content or message.reasoning, where the provider sends one",
    reasoning_tokens="usage.completion_tokens_details.reasoning_tokens, where reported",
    cached_tokens="usage.prompt_tokens_details.cached_tokens, where reported",
)


class GenericAPI(ProviderAPI):
    name = "generic"
    families = (GENERIC,)
    fallback = True

    def family(self, prefix: str, name: str) -> ProviderFamily | None:
        return GENERIC


API = GenericAPI()
