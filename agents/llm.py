"""The LLM agent: a policy (how a turn becomes calls and a decision) over a caller (how a call
reaches the model), put together from one ``ModelConfig`` and one protocol.

- The policy is the protocol style's (``POLICIES``): ``agents.policy.GridbenchPolicy`` or
  ``agents.study_agent.StudyPolicy``. It never learns which transport sends its calls.
- The transport (``agents.transport``) is the entry's: ``tier: batch`` hands each request to a
  ``BatchGateway`` (the driver's lockstep rounds, ``orchestrator.batching``;
  ``agents.batch_requests``); ``client: openai`` posts to an OpenAI-compatible server
  (``agents.openai_compat``) and never imports litellm on the request path; anything else goes
  through ``litellm.acompletion`` (``agents.litellm_transport``). All read the answer into the same
  ``Completion`` with one ``Usage``.
- One retry loop for all of them (``agents.caller``): a turn that cannot get an answer raises
  ``InfraError``, and the episode records an infrastructure error, never an action. A reply cut
  off by the token limit (``finish_reason == "length"``, often with empty content) is the model's
  answer, not a failure: it is parsed like any other reply.
- What a request carries for the protocol's thinking, effort, budget, output cap and sampling
  comes from the model's provider family (``agents.providers``), and so does the ``Budget`` each
  turn records: the same translation, so the record is what was sent. The entry's ``tier``
  (docs/providers.md) adds its fields (``flex``: ``service_tier: "flex"``, whose 429 "Resource
  Unavailable" is waited out like any rate limit) and its price factor (``agents.pricing``).
- The agent trusts its ``ModelConfig`` (validated when the sweep was loaded). Its API key comes
  only from the environment variable ``api_key_env`` names; every error text is scrubbed
  (``agents.secrets.scrub``) before it leaves the caller.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from agents.batch_requests import BatchTransport
from agents.caller import Caller, RetryPolicy
from agents.litellm_transport import LiteLLMTransport, count_tokens, litellm_module
from agents.model import ModelConfig
from agents.openai_compat import OpenAICompatTransport
from agents.policy import GridbenchPolicy, Model, Policy
from agents.pricing import answer_cost, table_price
from agents.protocol import Protocol
from agents.study_agent import StudyPolicy
from agents.transport import Transport
from agents.types import Decision, Turn
from env.errors import BadInput

if TYPE_CHECKING:
    from agents.batch_requests import BatchGateway

# the policy of each protocol style
POLICIES: dict[str, Callable[[Model], Policy]] = {"gridbench": GridbenchPolicy, "study": StudyPolicy}
# litellm, its token counter and its price table are read from here by the orchestrator too
__all__ = ["POLICIES", "LLMAgent", "count_tokens", "litellm_module", "table_price"]


class LLMAgent:
    """An agent backed by one ``ModelConfig`` (``openai/gpt-5``, ``hosted_vllm/...``, ...).

    ``config.params`` go to ``litellm.acompletion`` (``client="litellm"``) or into the JSON body
    (``client="openai"``) as they are; ``timeout`` and ``retries`` there are the agent's own.
    ``protocol`` is one the model's provider family honours: a sweep checks every model and
    condition when it loads (``orchestrator.sweep``), the one place that check is made.
    ``endpoint``: the URL of a server the sweep started for this model (it wins over
    ``config.api_base``). Cost comes from ``config.price``, else (litellm client) litellm's price
    table; the openai client without a price records 0.
    """

    def __init__(
        self,
        config: ModelConfig,
        protocol: Protocol,
        *,
        seed: int = 0,
        endpoint: str | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        on_rate_limit: Callable[[float | None], Any] | None = None,
        offline: bool = False,
        batch: BatchGateway | None = None,
    ):
        """``offline``: only to build requests (a cost estimate); no key is read, nothing is sent.
        ``batch``: where a ``tier: batch`` model's requests go (the driver's lockstep rounds)."""
        self.config = config
        fields, self.budget = config.family.request_fields(protocol, seed)
        fields.update(config.tier_facts.request_fields)
        if config.tier == "batch" and batch is None and not offline:
            raise BadInput(config.name, "tier", "a batch model's requests go through the sweep driver's batches: "
                                              "run it with `gridbench run`")
        self.protocol = protocol
        self.seed = seed
        self.name = config.name
        self.model = config.model
        self.api_base = endpoint or config.api_base
        if config.client == "openai" and not self.api_base and not offline:
            raise BadInput(self.name, "api_base", "the openai client needs an OpenAI-compatible endpoint")
        api_key = None if offline else config.api_key(endpoint)
        in_batches = batch is not None or config.tier == "batch"
        # a batch model's requests and answers are those its client would send and read synchronously
        sends = not (offline or in_batches)
        self.transport: Transport
        if config.client == "openai":
            self.transport = OpenAICompatTransport(config, fields, self.api_base if sends else None, api_key)
        else:
            self.transport = LiteLLMTransport(config, fields, self.api_base, api_key if sends else None)
        if in_batches:
            self.transport = BatchTransport(self.transport, batch)
        self.caller = Caller(
            self.transport, retry or RetryPolicy(max_retries=config.retries, rate_limited_s=config.timeout_s),
            name=config.name, budget=self.budget, secrets=(api_key,), image_detail=config.image_detail,
            cost=partial(answer_cost, config, self.transport.priced_by), count_tokens=partial(count_tokens, config.model),
            sleep=sleep, rng=random.Random(seed), on_rate_limit=on_rate_limit, seed=seed)
        self.policy = POLICIES[protocol.style](self.caller)

    async def act(self, turn: Turn) -> Decision:
        self.caller.begin_turn(turn.step)
        decision = await self.policy.act(turn)
        return replace(decision, tier=self.config.tier,
                       batch_id=",".join(dict.fromkeys(self.caller.batch_ids)) or None,
                       failures=self.caller.failures_json())

    async def resume(self, turn: Turn, decision: Decision) -> None:
        await self.policy.resume(turn, decision)

    async def aclose(self) -> None:
        await self.caller.aclose()
