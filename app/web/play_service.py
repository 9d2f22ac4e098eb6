"""``gridbench play --serve``: a small service where many people play at once, for a human baseline.

Each visitor is shown the consent line first; accepting it issues a session (an unguessable
token, kept by the page) and a random participant id (``p-`` and twelve hex digits; no name, no
address is ever asked or kept), whose games are model ``human/<participant id>``. Mazes are
assigned one at a time: the least-covered maze the participant has not played yet, among those
still short of their quota of finished games; when every maze has its quota the page and the
terminal say so and the service ends. Each maze is played through ``app.web.play.play_maze``,
the one loop of single-player play, so a participant sees exactly the frames and rules a model
gets.

Writes. ``write_episode`` writes two files named by the episode id (different for every
participant and maze), each through a temporary name that is the same for every writer of this
process (``env.files.temp_path``), and the manifest is read, changed and written whole. So every
write of the service happens on the event loop's thread, one after another (the HTTP threads only
read and answer boards), and the manifest is written once, when the service starts.

A hostile client is kept within bounds by ``app.web.play``: requests only to the allowed host
names, pages and static files from memory by exact path, bodies of at most ``MAX_BODY`` bytes
that must be a JSON object, moves only with a live session's token and the version of the turn
on screen, at most ``max_sessions`` sessions (one more is told 503) and at most twice as many
connections at once (one more is told 503 before a thread is spent on it); an idle session is
dropped after ``idle_s``, its unfinished maze with it.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
from collections import Counter
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agents.protocol import Protocol
from app.web.play import (
    HOST,
    LONG_POLL_S,
    Board,
    Session,
    Sessions,
    allowed_hosts,
    human_model,
    make_handler,
    page_html,
    play_maze,
    show_finished,
    start_server,
)
from env import Maze
from episodes.episode import EpisodeResult
from orchestrator.sweep import episode_id
from traces import (
    EPISODES_DIR,
    EpisodeIdentity,
    open_store,
    read_manifest,
    read_table,
    write_episode,
    write_manifest,
)

DEFAULT_CONSENT = ("Your moves and their timing on these mazes are recorded for research, under a random "
                   "participant id: no name and no address is kept. Play only if you agree.")
QUEUE_LOOK_S = 2.0
PARTICIPANTS_DIR = "participants"  # participants/<id>.json: the consent each participant accepted, and when
PARTICIPANT_FORMAT = "gridbench.participant/1"
FULL = "Thank you: every maze has its quota of players. There is nothing left to play."
PLAYED_ALL = "Thank you: you have played every maze that still needs players."
QUEUED = ("Every maze that still needs you is being played by someone else right now. Keep this page open: "
          "one may come free, or all may be finished.")


class Quotas:
    """Which maze a participant plays next. Only the event loop's thread uses it."""

    def __init__(self, mazes: list[Maze], quota: int, finished: Counter[str]):
        self.mazes = list({m.checksum: m for m in mazes}.values())
        self.quota = quota
        self.finished = Counter({m.checksum: finished[m.checksum] for m in self.mazes})
        self.playing: Counter[str] = Counter()

    def next_for(self, played: set[str]) -> Maze | None:
        """The least-covered maze (games finished and in play) that ``played`` lacks and whose
        quota those games do not fill yet; ties in the set's order."""
        def covered(m: Maze) -> int:
            return self.finished[m.checksum] + self.playing[m.checksum]

        short = [m for m in self.mazes if m.checksum not in played and covered(m) < self.quota]
        return min(short, key=covered, default=None)

    def left_for(self, played: set[str]) -> bool:
        """Whether a maze ``played`` lacks may still need this player (one in play by others may be dropped)."""
        return any(m.checksum not in played and self.finished[m.checksum] < self.quota for m in self.mazes)

    def start(self, maze: Maze) -> None:
        self.playing[maze.checksum] += 1

    def end(self, maze: Maze, *, finished: bool) -> None:
        self.playing[maze.checksum] -= 1
        self.finished[maze.checksum] += finished

    @property
    def met(self) -> bool:
        return all(self.finished[m.checksum] >= self.quota for m in self.mazes)

    @property
    def in_play(self) -> int:
        return sum(self.playing.values())

    def progress(self) -> tuple[int, int]:
        """(finished games that count toward the quotas, games the quotas ask for)."""
        return sum(min(n, self.quota) for n in self.finished.values()), len(self.mazes) * self.quota


@dataclass
class ServeResult:
    run_dir: Path
    written: list[EpisodeResult] = field(default_factory=list)
    participants: set[str] = field(default_factory=set)  # those with a finished game saved
    met: bool = False
    peak_sessions: int = 0  # the most sessions live at once


class PlayService:
    """The participants' games on one event loop, and what they write."""

    def __init__(self, mazes: list[Maze], *, protocol: Protocol, run_dir: Path, run: str, quotas: Quotas,
                 consent: str, sessions: Sessions, known: set[str], long_poll_s: float):
        self.loop = asyncio.get_running_loop()
        self.protocol, self.run_dir, self.run, self.quotas = protocol, run_dir, run, quotas
        self.consent, self.sessions, self.long_poll_s = consent, sessions, long_poll_s
        self.known = set(known)  # participant ids issued or found in the run: never issued again
        self.consented_at: dict[str, str] = {}
        self.result = ServeResult(run_dir)
        self.changed = asyncio.Event()  # the serving loop's: a game ended, a session went
        self.freed = asyncio.Condition()  # the queued players': a game ended
        self.failure: BaseException | None = None
        self.tasks: set[asyncio.Task[None]] = set()

    def join(self) -> dict[str, Any] | None:
        """From an HTTP thread, on consent: a new participant's token and id, or None when full."""
        def make() -> Session:  # under the sessions' lock: ids are drawn one at a time
            participant = f"p-{secrets.token_hex(6)}"
            while participant in self.known:
                participant = f"p-{secrets.token_hex(6)}"
            self.known.add(participant)
            self.consented_at[participant] = datetime.now(UTC).isoformat(timespec="seconds")
            return Session(Board(self.loop, None, participant, self.long_poll_s), participant)

        issued = self.sessions.issue(make)
        if issued is None:
            return None
        token, session = issued
        try:
            self.loop.call_soon_threadsafe(self._start, session)
        except RuntimeError:  # the service is ending: its loop is closed
            return None
        return {"token": token, "participant": session.participant}

    def _start(self, session: Session) -> None:
        task = self.loop.create_task(self._participant(session))
        self.tasks.add(task)
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None and self.failure is None:
            self.failure = task.exception()  # a disk that failed a write ends the service
        self.changed.set()

    async def _participant(self, session: Session) -> None:
        board, participant = session.board, session.participant
        assert participant is not None
        model = human_model(participant)
        played: set[str] = set()
        while not board.stopped:
            maze = self.quotas.next_for(played)
            if maze is None and self.quotas.left_for(played):
                # the mazes left are in others' hands: wait for one of those games to end
                board.publish(phase="queued", message=QUEUED)
                async with self.freed:
                    with suppress(TimeoutError):  # and look again now and then: the player may have stopped
                        await asyncio.wait_for(self.freed.wait(), QUEUE_LOOK_S)
                continue
            if maze is None:
                board.publish(phase="done", message=FULL if self.quotas.met else PLAYED_ALL)
                return
            played.add(maze.checksum)
            identity = EpisodeIdentity(run=self.run, episode_id=episode_id(maze, model, self.protocol, 0),
                                       model_name=participant, model=model.model, condition="baseline",
                                       repeat=0, maze_id=maze.id)
            self.quotas.start(maze)
            saved = None
            try:
                episode = await play_maze(board, len(played) - 1, maze, self.protocol, identity)
                if episode is not None:
                    self._save(participant, episode)
                    saved = episode
            finally:
                self.quotas.end(maze, finished=saved is not None)
                self.changed.set()
                async with self.freed:
                    self.freed.notify_all()
            if saved is None:
                break
            show_finished(board, maze, saved)
        board.publish(phase="stopped", message="Stopped.")

    def _save(self, participant: str, episode: EpisodeResult) -> None:
        # on the event loop's thread, like every write of the service (the module says why)
        if participant not in self.result.participants:
            record = {"format": PARTICIPANT_FORMAT, "participant": participant, "model": f"human/{participant}",
                      "consent": self.consent, "consented_at": self.consented_at[participant]}
            open_store(self.run_dir).put(f"{PARTICIPANTS_DIR}/{participant}.json",
                                         (json.dumps(record, indent=2) + "\n").encode())
        write_episode(self.run_dir, episode)
        self.result.participants.add(participant)
        self.result.written.append(episode)

    async def until_met(self, tick_s: float, on_progress: Callable[[int, int], None] | None) -> None:
        """Expire idle sessions every ``tick_s`` until every quota is met and no game is in play."""
        while True:
            if self.failure is not None:
                raise self.failure
            if on_progress is not None:
                on_progress(*self.quotas.progress())
            if self.quotas.met and not self.quotas.in_play:
                return
            try:
                await asyncio.wait_for(self.changed.wait(), tick_s)
            except TimeoutError:
                pass
            self.changed.clear()
            expired = self.sessions.expire()
            for session in expired:
                session.board.stop()  # its unfinished maze is dropped, its token refused from now
            if expired:  # a queued session that expired wakes to see it is stopped
                async with self.freed:
                    self.freed.notify_all()


def earlier_games(run_dir: Path) -> tuple[Counter[str], set[str]]:
    """Finished human games per maze checksum in a run being extended, and the players' names."""
    table = read_table(run_dir, EPISODES_DIR, ["model", "model_name", "maze_checksum"])
    human = [(c, n) for m, n, c in zip(table.column("model").to_pylist(), table.column("model_name").to_pylist(),
                                       table.column("maze_checksum").to_pylist(), strict=True)
             if m.startswith("human/")]
    return Counter(c for c, _ in human), {n for _, n in human}


async def serve(mazes: list[Maze], *, protocol: Protocol, run_dir: Path, quota: int, host: str = HOST,
                port: int = 0, allow_hosts: list[str] | None = None, max_sessions: int = 100,
                idle_s: float = 600.0, consent: str = DEFAULT_CONSENT,
                on_ready: Callable[[str], None] | None = None,
                on_progress: Callable[[int, int], None] | None = None,
                linger_s: float = 1.5, tick_s: float = 1.0, long_poll_s: float = LONG_POLL_S) -> ServeResult:
    """Serve ``mazes`` to participants until each has ``quota`` finished games; every finished
    game is written to ``run_dir`` at once, as model ``human/<participant id>``."""
    hosts = allowed_hosts(host, allow_hosts or [])
    earlier = read_manifest(run_dir) or {}
    run = earlier.get("run", run_dir.name)
    sessions = Sessions(cap=max_sessions, idle_s=idle_s)
    finished, known = earlier_games(run_dir) if earlier else (Counter[str](), set[str]())
    service = PlayService(mazes, protocol=protocol, run_dir=run_dir, run=run, quotas=Quotas(mazes, quota, finished),
                          consent=consent, sessions=sessions, known=known, long_poll_s=long_poll_s)
    page = page_html("", "gridbench play", consent)
    # a page holds a long poll and sends a move: two connections a session, and a few to spare
    server, url = start_server(make_handler(sessions, hosts, page, service.join), host, port,
                               2 * max_sessions + 16, (allow_hosts or [host])[0])
    try:
        sweep = earlier.get("sweep") or {
            "name": "play", "mazes": [m.id for m in service.quotas.mazes], "protocol": protocol.to_dict(),
            "models": [], "conditions": [{"name": "baseline"}],
        }
        write_manifest(run_dir, run=run, sweep=sweep, mazes={m.checksum: m.to_dict() for m in service.quotas.mazes},
                       invocation={"command": "play", "serve": {"quota": quota, "consent": consent},
                                   "argv": sys.argv[1:]})
        if on_ready is not None:
            on_ready(url)
        await service.until_met(tick_s, on_progress)
        service.result.met = True
        await asyncio.sleep(linger_s)  # let the pages fetch their final state before the server goes
    finally:
        service.result.peak_sessions = sessions.peak
        for session in sessions.live():
            session.board.stop()
        for task in list(service.tasks):
            task.cancel()
        server.shutdown()
        server.server_close()
    return service.result
