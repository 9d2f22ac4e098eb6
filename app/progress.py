"""Progress of a long command on stderr, wherever stderr goes.

On a terminal it is rich's live bar, gone when the work ends. Rich draws nothing live on a
console that is not a terminal (a pipe, a log file, CI), so there the same progress is a plain
line when the work starts, then at most every ``LINE_EVERY_S`` seconds, and when it ends: a long
command never sits silent in a log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

LINE_EVERY_S = 10.0


class ProgressBar:
    """``update(done, total)`` or ``advance(n)`` as work is done; use it as a context manager.
    The bar (or the first line) appears with the first update, so work that needs none shows none."""

    def __init__(self, what: str, console: Console | None = None):
        self.what = what
        self.console = console or Console(stderr=True)
        self.live = self.console.is_terminal and not self.console.is_dumb_terminal
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.done, self.total = 0, 0
        self.started = time.monotonic()
        self.last_line: float | None = None  # when the last plain line was printed
        self.last_done = -1  # and what it said was done

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.bar is not None:
            self.bar.stop()
        elif self.last_line is not None and kind is None and self.done != self.last_done:
            self._line()

    def advance(self, n: int = 1) -> None:
        self.update(self.done + n, self.total)

    def update(self, done: int, total: int) -> None:
        self.done, self.total = done, total
        if self.live:
            if self.bar is None:
                self.bar = Progress(TextColumn(self.what), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                    console=self.console, transient=True)
                self.bar.start()
                self.task = self.bar.add_task(self.what, total=total)
            assert self.task is not None
            self.bar.update(self.task, completed=done, total=total)
            return
        now = time.monotonic()
        if self.last_line is None or now - self.last_line >= LINE_EVERY_S or done >= total:
            self._line()

    def _line(self) -> None:
        self.last_line, self.last_done = time.monotonic(), self.done
        self.console.print(f"{self.what}: {self.done}/{self.total} ({self.last_line - self.started:.0f} s)",
                           markup=False, highlight=False, soft_wrap=True)


@contextmanager
def building_twins() -> Iterator[Callable[[int, int], None]]:
    """Progress on stderr while a sweep's twins are built (shown once building starts)."""
    with ProgressBar("building variants") as bar:
        yield bar.update
