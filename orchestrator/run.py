"""A run as one call: ``run_sweep`` checks the sweep's keys and endpoints, joins or starts Ray,
starts the sweep's model servers (and checks each replica), drives the matrix (``Driver``: the
journals, the batch brokers, the budgets, a stop and its grace), shuts everything down, and
compacts the run when it finished. It returns what happened (``RunResult``); the ``gridbench run``
and ``calibrate`` commands only present it.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

from orchestrator.driver import Driver, RunOutcome
from orchestrator.reporter import Reporter
from orchestrator.sweep import Sweep
from traces import CompactionResult, RunStore


@dataclass(frozen=True)
class RunResult:
    """What one invocation did: the driver's outcome, the seconds from Ray up to the end (the
    compaction included), and the compaction (None: an interrupted run is left for its rerun)."""

    outcome: RunOutcome
    seconds: float
    compaction: CompactionResult | None


def _quiet(line: str) -> None:
    """Say nothing."""


def run_sweep(sweep: Sweep, store: RunStore, *, address: str | None = None, retry_errors: bool = False,
              command: Sequence[str] = (), preflight: bool = True, reporter: Reporter | None = None,
              say: Callable[[str], None] = _quiet,
              compact_progress: Callable[[str, int, int], None] | None = None,
              interruptible: bool = True, arms_checked: bool = False, over_balance: bool = False) -> RunResult:
    """Run ``sweep`` into ``store``, resuming whatever an earlier invocation left.

    - ``address``: a Ray cluster to join (None: ``RAY_ADDRESS``, or an embedded local Ray); one
      already connected is used and left connected;
    - ``preflight``: before Ray starts, each called arm's endpoint, key and model is checked by its
      free model listing and, where its provider tells it, the account's balance is held against
      the run's upper bound there (unless the caller did both already: ``arms_checked``;
      ``over_balance``: a bound above the balance is said, not refused), and each served arm's
      replicas once up (``BadInput`` naming the arm);
    - ``say``: where the checks' lines and "starting model servers" go;
    - ``interruptible``: on the main thread, Ctrl-C asks the driver to stop (gracefully, then at
      once); a third press raises ``KeyboardInterrupt``.

    A model server that does not start raises ``ServerStartError`` (its log's tail in the message);
    a key that is not set raises ``BadInput`` before anything starts.
    """
    from orchestrator.connect import connect, disconnect
    from orchestrator.preflight import check_balances, check_called, check_servers, summary
    from orchestrator.serving.server_pool import ServerPool
    from traces import compact

    sweep.check_keys()  # before Ray starts: a missing key is bad input, not a sweep of errors
    if preflight and not arms_checked:  # a dead endpoint or a refused key is one line in seconds
        for line in summary(check_called(sweep)):
            say(line)
        for funds in check_balances(sweep, store, retry_errors=retry_errors, over_balance=over_balance):
            say(funds.line())
    started = connect(address)
    since = time.monotonic()
    pool = None
    try:
        # model servers first: episodes of served models get their endpoint and node from the pool;
        # their logs go into the run (first into a local folder when the run is in object storage)
        pool = ServerPool.for_sweep(store.local_dir(), sweep) or None
        if pool is not None:
            say(f"starting model servers for {', '.join(pool.models)} ...")
            pool.on_event = say  # a server placed again after its node was lost says so
            pool.start()
            if preflight:  # each replica answers for its model before any episode is sent to it
                for line in summary(check_servers(sweep, pool), "every server up and listing its model"):
                    say(line)
        driver = Driver(sweep, store, run=sweep.run_name, retry_errors=retry_errors, pool=pool, reporter=reporter,
                        command=list(command), max_cost=sweep.max_cost)
        with stop_on_interrupt(driver.request_stop) if interruptible else nullcontext():
            outcome = driver.execute()
    finally:
        if pool is not None:
            pool.stop()
            if not store.local:
                store.child("servers").put_folder(store.local_dir() / "servers")
        if started:
            disconnect()
    compaction = compact(store, progress=compact_progress) if outcome.stop is None else None
    return RunResult(outcome, time.monotonic() - since, compaction)


@contextmanager
def stop_on_interrupt(request_stop: Callable[[], None]) -> Iterator[None]:
    """While the driver runs, Ctrl-C asks it to stop (gracefully, then at once); a third one
    raises ``KeyboardInterrupt`` as usual, should the driver not get to act on the first two."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread (a test may run the command elsewhere)
        return
    presses = 0

    def on_sigint(signum: int, frame: object) -> None:
        nonlocal presses
        presses += 1
        if presses > 2:
            raise KeyboardInterrupt
        request_stop()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
