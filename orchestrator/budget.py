"""What a sweep may spend and how hard it may push a provider: the cost ledger and the adaptive
concurrency of each model. Plain Python (the driver's journal actor and the driver hold them).

``Ledger``: USD spent per model, the finished episodes of the run plus every journaled step of
an unfinished one, against the per-model ``max_cost`` of the sweep and the run's ``--max-cost``.
Once a limit is reached no episode of that model (any model, for the run's limit) starts, and
running ones stop after their current turn, resumable.

``Concurrency``: how many episodes of a model may be in flight, additive increase and
multiplicative decrease on the provider's 429s: halved on a rate limit (at most once per
``cooldown_s``, and no sooner than its Retry-After), one more after a window of successful calls,
never above the entry's ``max_concurrency`` nor below 1. Its history is kept for the manifest. The
driver starts no episode of a model beyond its limit, and its running episodes take turn slots of
the same number, so that the calls in flight follow the limit at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field


@dataclass
class Ledger:
    limits: dict[str, float] = field(default_factory=dict)  # model name -> USD; absent: no limit
    total_limit: float | None = None
    finished: dict[str, float] = field(default_factory=dict)  # model name -> USD of finished episodes
    running: dict[str, dict[str, float]] = field(default_factory=dict)  # model -> episode -> journaled USD

    def spent(self, model: str) -> float:
        return self.finished.get(model, 0.0) + sum(self.running.get(model, {}).values())

    def total(self) -> float:
        models = set(self.finished) | set(self.running)
        return sum(self.spent(m) for m in models)

    def exhausted(self, model: str) -> bool:
        limit = self.limits.get(model)
        if limit is not None and self.spent(model) >= limit:
            return True
        return self.total_limit is not None and self.total() >= self.total_limit

    def add_step(self, model: str, episode_id: str, cost: float) -> None:
        episodes = self.running.setdefault(model, {})
        episodes[episode_id] = episodes.get(episode_id, 0.0) + cost

    def set_running(self, model: str, episode_id: str, cost: float) -> None:
        """An episode continued from ``cost`` USD of journaled steps (a resumed attempt)."""
        self.running.setdefault(model, {})[episode_id] = cost

    def finish(self, model: str, episode_id: str, cost: float) -> None:
        self.running.get(model, {}).pop(episode_id, None)
        self.finished[model] = self.finished.get(model, 0.0) + cost

    def snapshot(self) -> dict[str, dict[str, float | None]]:
        models = sorted(set(self.finished) | set(self.running) | set(self.limits))
        return {m: {"spent": self.spent(m), "limit": self.limits.get(m)} for m in models}


@dataclass
class Concurrency:
    """Episodes of one model allowed in flight (AIMD on rate limits)."""

    ceiling: int
    limit: int = 0
    cooldown_s: float = 1.0
    successes: int = 0
    history: list[tuple[float, int, str]] = field(default_factory=list)  # (seconds since start, limit, why)
    _quiet_until: float = 0.0
    _t0: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.limit = self.limit or self.ceiling
        self.history.append((0.0, self.limit, "start"))

    def rate_limited(self, retry_after: float | None = None, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        self.successes = 0
        if now < self._quiet_until:
            return  # the 429s of one burst halve the limit once
        self.limit = max(1, self.limit // 2)
        self._quiet_until = now + max(self.cooldown_s, retry_after or 0.0)
        self.history.append((round(now - self._t0, 3), self.limit, "rate limited"))

    def succeeded(self, calls: int = 1, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        if self.limit >= self.ceiling or now < self._quiet_until:
            return
        self.successes += calls
        if self.successes >= self.limit:  # a window of calls at this limit went through
            self.successes = 0
            self.limit += 1
            self.history.append((round(now - self._t0, 3), self.limit, "recovered"))
