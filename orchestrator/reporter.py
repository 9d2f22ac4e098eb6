"""``Reporter``: what the driver tells a progress display about a run as it goes.

Its own module, free of Ray, so that the ``run`` command's display can subclass it without
importing the driver (and Ray) when the command line starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from orchestrator.sweep import EpisodeSpec, Sweep
    from traces import EpisodeRecord


class Reporter:
    """What the driver tells a progress display; the default shows nothing."""

    def start(self, sweep: Sweep, planned: dict[str, int], done: dict[str, int]) -> None: ...

    def episode_done(self, episode: EpisodeRecord) -> None: ...

    def retrying(self, spec: EpisodeSpec, attempts: int, reason: str) -> None: ...

    def suspended(self, spec: EpisodeSpec, steps: int) -> None: ...

    def stopping(self, in_flight: int, grace_s: float) -> None:
        """The run was interrupted: ``in_flight`` episodes get ``grace_s`` to finish their turn."""

    def spending(self, ledger: dict[str, dict[str, float | None]], concurrency: dict[str, int]) -> None:
        """The ledger (per model: spent, limit) and each called model's current concurrency."""

    def batches(self, progress: dict[str, dict[str, Any]]) -> None:
        """Per batch arm: its rounds, requests submitted and batches in flight with their ages
        (``orchestrator.batching.BatchBroker.progress``)."""

    def finish(self) -> None: ...
