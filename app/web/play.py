"""``gridbench play``: a person plays mazes in the browser and is recorded like a model.

The page shows, for every turn, the messages ``agents.prompt.build_messages`` builds for a model
under the chosen protocol (text parts and the PNG frames, in the same order), so a player sees
exactly what a model sees: the same instructions, history frames and activity summary, and no
rule that a model is not told. A key press is the reply. ``HumanAgent`` is an ordinary
``Agent`` whose ``act`` waits for that key press, so the episode runs through ``run_episode``
and is written by ``write_episode`` like any other: model ``human/<name>`` in the same schema,
side by side with models in ``gridbench report``.

The server listens on 127.0.0.1 only and answers only requests addressed to 127.0.0.1 or
localhost (so a DNS-rebinding page cannot pose as it). Every API call must carry the session
token that the page was served with, so no other web page open in the same browser can play,
read or stop a game.

The same server, its page and its one game loop (``play_maze``) serve many players at once
in ``app.web.play_service`` (``gridbench play --serve``): there each session is issued on
consent instead of being baked into the page.
"""

from __future__ import annotations

import asyncio
import hashlib
import html
import ipaddress
import json
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, parse_qs, urlsplit

from agents.model import ModelConfig
from agents.prompt import build_messages, fingerprint
from agents.protocol import Protocol
from agents.types import Decision, Turn
from agents.usage import Usage
from app.web.viewer import script_json, template
from env import ACTIONS, BadInput, Maze
from env.names import check_name
from env.state import SIX_ACTIONS
from episodes.episode import EpisodeResult, run_episode
from orchestrator.sweep import ModelEntry, episode_id
from traces import EpisodeIdentity, completed_ids, read_manifest, write_episode, write_manifest

HOST = "127.0.0.1"
# the names a page served on loopback may be reached by: any other Host is a DNS-rebinding page
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost"})
# the keys a player presses, shown on the page: arrows, or the action's first letter
KEYS = {
    "left": ["ArrowLeft", "l"], "right": ["ArrowRight", "r"], "forward": ["ArrowUp", "f"],
    "pickup": ["p"], "toggle": ["t"], "done": ["d"],
}
LONG_POLL_S = 20.0


class PlayStopped(Exception):
    """The player stopped: the unfinished episode is dropped, finished ones are already written."""


def page_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat messages as the page draws them: each a role and its text and image parts, in order."""
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, str):
            parts = [{"type": "text", "text": content}]
        else:
            parts = [{"type": "image", "src": p["image_url"]["url"]} if p["type"] == "image_url"
                     else {"type": "text", "text": p["text"]} for p in content]
        out.append({"role": m["role"], "parts": parts})
    return out


class Board:
    """What the page shows now, shared between the game (asyncio) and the HTTP threads.

    Each change bumps ``version``; the page long-polls for a version newer than its own and
    answers a turn by naming the version it answers, so a late or repeated key press is refused.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, maze_count: int | None, participant: str | None = None,
                 long_poll_s: float = LONG_POLL_S):
        self._loop = loop
        self._cond = threading.Condition()
        self._pending: asyncio.Future[int] | None = None
        self.version = 0
        # maze_count is None where mazes are assigned as the player goes (a served study)
        self.view: dict[str, Any] = {"phase": "starting", "version": 0, "maze_count": maze_count, "finished": [],
                                     "participant": participant}
        self.stopped = False
        self.long_poll_s = long_poll_s

    def publish(self, **changes: Any) -> int:
        with self._cond:
            self.version += 1
            self.view = {**self.view, **changes, "version": self.version}
            self._cond.notify_all()
            return self.version

    def snapshot(self, after: int) -> dict[str, Any]:
        with self._cond:
            self._cond.wait_for(lambda: self.version > after, self.long_poll_s)
            return self.view

    async def ask(self, **view: Any) -> int:
        """Show a turn and wait for the player's action (an index into ``ACTIONS``)."""
        future: asyncio.Future[int] = self._loop.create_future()
        with self._cond:
            if self.stopped:
                raise PlayStopped()
            self._pending = future
        self.publish(phase="turn", **view)
        return await future

    def answer(self, version: int, action: int) -> bool:
        """From an HTTP thread: the player's action for the turn shown as ``version``."""
        with self._cond:
            future = self._pending
            if future is None or version != self.version or self.view.get("phase") != "turn":
                return False
            self._pending = None
            self.view = {**self.view, "phase": "waiting"}
        self._loop.call_soon_threadsafe(_settle, future, action)
        return True

    def stop(self) -> None:
        with self._cond:
            self.stopped = True
            future, self._pending = self._pending, None
        if future is not None:
            self._loop.call_soon_threadsafe(_settle, future, PlayStopped())


def _settle(future: asyncio.Future, value: Any) -> None:
    if future.done():
        return
    if isinstance(value, BaseException):
        future.set_exception(value)
    else:
        future.set_result(value)


class HumanAgent:
    """An ``Agent`` whose reply is a key press in the browser, shown the model's own messages."""

    def __init__(self, board: Board, maze_index: int):
        self._board = board
        self._maze_index = maze_index
        self._replies: list[str] = []

    async def act(self, turn: Turn) -> Decision:
        messages = build_messages(turn, self._replies)
        prompt_hash, image_hashes = fingerprint(messages)
        t0 = time.perf_counter()
        action = await self._board.ask(maze_index=self._maze_index, maze_id=turn.maze.id,
                                       messages=page_messages(messages))
        reply = f"ACTION: {ACTIONS[action]}"
        self._replies.append(reply)
        return Decision(action=action, parse="exact", reply=reply,
                        usage=Usage(latency_s=time.perf_counter() - t0),
                        prompt_hash=prompt_hash, image_hashes=tuple(image_hashes))

    async def resume(self, turn: Turn, decision: Decision) -> None:
        self._replies.append(decision.reply)

    async def aclose(self) -> None:
        return None


# ---- sessions -------------------------------------------------------------------------------------
@dataclass(eq=False)
class Session:
    """One player's game on this server: the board the page draws and answers."""

    board: Board
    participant: str | None = None
    digest: bytes = b""
    seen: float = 0.0  # time.monotonic() of the last request's start or end
    busy: int = 0  # requests of this session being answered now (an open long poll is one)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()


class Sessions:
    """The sessions a server issued, at most ``cap`` at once, each found by its token.

    Sessions are kept by the SHA-256 of their token: finding one by that digest tells a guesser
    nothing about the token, and the digest found is then compared in constant time. A session
    with no request in flight for ``idle_s`` is dropped (``expire``), its token refused from then.
    """

    def __init__(self, cap: int, idle_s: float | None = None):
        self.cap, self.idle_s = cap, idle_s
        self._lock = threading.Lock()
        self._live: dict[bytes, Session] = {}
        self.peak = 0  # the most sessions live at once

    def issue(self, make: Callable[[], Session]) -> tuple[str, Session] | None:
        """A new session and its token, or None when ``cap`` sessions are live."""
        with self._lock:
            if len(self._live) >= self.cap:
                return None
            token = secrets.token_urlsafe(32)
            session = make()
            session.digest, session.seen = _digest(token), time.monotonic()
            self._live[session.digest] = session
            self.peak = max(self.peak, len(self._live))
        return token, session

    @contextmanager
    def using(self, token: str) -> Iterator[Session | None]:
        """The live session ``token`` names (None for any other token), kept alive while in use."""
        digest = _digest(token)
        with self._lock:
            session = self._live.get(digest)
            if session is not None and not secrets.compare_digest(session.digest, digest):
                session = None
            if session is not None:
                session.busy += 1
                session.seen = time.monotonic()
        try:
            yield session
        finally:
            if session is not None:
                with self._lock:
                    session.busy -= 1
                    session.seen = time.monotonic()

    def expire(self) -> list[Session]:
        """Drop the sessions idle for longer than ``idle_s``; returns them (their boards to stop)."""
        if self.idle_s is None:
            return []
        now = time.monotonic()
        with self._lock:
            gone = [s for s in self._live.values() if s.busy == 0 and now - s.seen > self.idle_s]
            for s in gone:
                del self._live[s.digest]
        return gone

    def live(self) -> list[Session]:
        with self._lock:
            return list(self._live.values())


# ---- HTTP -----------------------------------------------------------------------------------------
def _static_files() -> dict[str, tuple[bytes, str]]:
    types = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
    out = {}
    for entry in resources.files("app.web").joinpath("static").iterdir():
        suffix = Path(entry.name).suffix
        if entry.is_file() and suffix in types:
            out[f"/static/{entry.name}"] = (entry.read_bytes(), types[suffix])
    return out


CSP = "default-src 'none'; img-src 'self' data:; script-src 'self'; style-src 'self'; connect-src 'self'"
MAX_BODY = 4096  # bytes of a request body: the largest the page sends is under 100
# requests of one session answered at once: its page's long poll and a move, and a reload's;
# more would let one player hold every connection the server answers
SESSION_REQUESTS = 3
SOCKET_TIMEOUT_S = 30.0  # a client that stops sending mid-request gives its thread back then
# a connection past the server's cap is answered this and closed, before any thread is spent on it
BUSY = (b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 5\r\n"
        b"Connection: close\r\nContent-Length: 18\r\n\r\n{\"error\": \"busy\"}\n")


class _PlayHandler(BaseHTTPRequestHandler):
    """The game's HTTP API; ``make_handler`` gives it its sessions, allowed hosts and page.

    It serves the page, its static files (from memory, by exact path: no URL names a file) and
    the API; ``join`` (a served study only) issues a session to a player who gave consent."""

    sessions: Sessions
    hosts: frozenset[str]
    page: bytes
    static: dict[str, tuple[bytes, str]]
    join: Callable[[], dict[str, Any] | None] | None = None
    server_version = "gridbench-play"
    timeout = SOCKET_TIMEOUT_S

    def log_message(self, format: str, *args: Any) -> None:  # no addresses kept, and the terminal stays clean
        return

    def _send(self, status: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: Any, extra: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json", extra)

    def _allowed_host(self) -> bool:
        # a DNS-rebinding page reaches this server under its own host name: refuse it, or it
        # could read the page (and its token) as if it were this site
        try:
            host = urlsplit("//" + (self.headers.get("Host") or "")).hostname
        except ValueError:
            host = None
        if host in self.hosts:
            return True
        self._json(HTTPStatus.FORBIDDEN, {"error": "wrong host"})
        return False

    @contextmanager
    def _session(self) -> Iterator[Session | None]:
        with self.sessions.using(self.headers.get("X-Play-Token", "")) as session:
            if session is None:
                self._json(HTTPStatus.FORBIDDEN, {"error": "bad token"})
            elif session.busy > SESSION_REQUESTS:
                self._json(HTTPStatus.TOO_MANY_REQUESTS, {"error": "too many requests at once"})
                session = None
            yield session

    def _url(self) -> SplitResult | None:
        """The request's URL, or None once a refusal is sent (a path no URL parser reads)."""
        try:
            return urlsplit(self.path)
        except ValueError:
            self._json(HTTPStatus.BAD_REQUEST, {"error": "bad path"})
            return None

    def _body(self) -> dict[str, Any] | None:
        """The request's JSON object, or None once a refusal is sent (wrong type, no or a false
        length, too long, not a JSON object)."""
        self.close_connection = True  # a body left unread must not be taken for the next request
        refusal: tuple[int, str] | None = None
        try:
            length = int(self.headers.get("Content-Length") or "")
        except ValueError:
            length = -1
        if self.headers.get_content_type() != "application/json":
            refusal = HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send application/json"
        elif length < 0:
            refusal = HTTPStatus.LENGTH_REQUIRED, "need a Content-Length"
        elif length > MAX_BODY:
            refusal = HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"at most {MAX_BODY} bytes"
        if refusal is None:
            try:
                body = json.loads(self.rfile.read(length))
            except (ValueError, RecursionError):  # RecursionError: nested deeper than json reads
                body = None
            if isinstance(body, dict):
                return body
            refusal = HTTPStatus.BAD_REQUEST, "need a JSON object"
        self._json(refusal[0], {"error": refusal[1]})
        return None

    def do_GET(self) -> None:
        url = self._url()
        if url is None or not self._allowed_host():
            return
        if url.path == "/":
            self._send(HTTPStatus.OK, self.page, "text/html; charset=utf-8")
        elif url.path in self.static:
            self._send(HTTPStatus.OK, *self.static[url.path])
        elif url.path == "/favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
        elif url.path == "/api/state":
            with self._session() as session:
                if session is None:
                    return
                try:
                    after = int(parse_qs(url.query).get("after", ["0"])[0])
                except ValueError:
                    after = 0
                self._json(HTTPStatus.OK, session.board.snapshot(after))
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})

    def do_POST(self) -> None:
        url = self._url()
        if url is None or not self._allowed_host():
            return
        body = self._body()
        if body is None:
            return
        if url.path == "/api/join" and self.join is not None:
            if body.get("consent") is not True:
                self._json(HTTPStatus.BAD_REQUEST, {"error": "consent is required to play"})
                return
            joined = self.join()
            if joined is None:
                self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": "full: try again later"}, {"Retry-After": "30"})
            else:
                self._json(HTTPStatus.OK, joined)
            return
        with self._session() as session:
            if session is None:
                return
            if url.path == "/api/act":
                action, version = body.get("action"), body.get("version")
                # human play is the gridbench style, which offers the six actions (no drop)
                if action not in SIX_ACTIONS or not isinstance(version, int):
                    self._json(HTTPStatus.BAD_REQUEST, {"error": "need an action and the version it answers"})
                elif session.board.answer(version, ACTIONS.index(action)):
                    self._json(HTTPStatus.OK, {"ok": True})
                else:
                    self._json(HTTPStatus.CONFLICT, {"error": "not waiting for that turn"})
            elif url.path == "/api/stop":
                session.board.stop()
                self._json(HTTPStatus.OK, {"ok": True})
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})


def make_handler(sessions: Sessions, hosts: frozenset[str], page: bytes,
                 join: Callable[[], dict[str, Any] | None] | None = None) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_PlayHandler,), {"sessions": sessions, "hosts": hosts, "page": page,
                                             "static": _static_files(), "join": staticmethod(join) if join else None})


class PlayServer(ThreadingHTTPServer):
    """A threading HTTP server that answers at most ``max_connections`` requests at once: one
    more is told 503 and closed at once, so a flood of connections costs no threads."""

    daemon_threads = True
    request_queue_size = 1024  # the listen backlog: a burst of connections waits rather than fails

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], max_connections: int):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            try:
                request.sendall(BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started (none to be had): its slot is free again
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client gone mid-answer is no error of the game's; anything else is printed, addressless
        if not isinstance(sys.exc_info()[1], ConnectionError | TimeoutError):
            import traceback

            traceback.print_exc(file=sys.stderr)


def allowed_hosts(host: str, named: list[str]) -> frozenset[str]:
    """The Host names the server answers: those named, else on loopback its loopback names;
    bound anywhere else, naming them is required (``--allow-host``)."""
    if named:
        return frozenset(h.lower().strip("[]") for h in named)
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        raise BadInput("--allow-host", "", f"is required with --host {host}: the host name(s) players reach "
                                           "the server by (requests naming any other host are refused)")
    return LOOPBACK_NAMES | {host.lower()}


def start_server(handler: type[BaseHTTPRequestHandler], host: str, port: int, max_connections: int,
                 shown_host: str) -> tuple[PlayServer, str]:
    """Listen on ``host``:``port`` in a thread; the server and its URL (named by ``shown_host``)."""
    try:
        server = PlayServer((host, port), handler, max_connections)
    except socket.gaierror as err:
        raise BadInput("--host", "", f"cannot listen on {host}: {err.strerror or err}") from None
    except OSError as err:
        raise BadInput("--port", "", f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    threading.Thread(target=server.serve_forever, name="gridbench-play-http", daemon=True).start()
    name = f"[{shown_host}]" if ":" in shown_host else shown_host
    return server, f"http://{name}:{server.server_address[1]}/"


def page_html(token: str, title: str, consent: str = "") -> bytes:
    """The play page; a served study's page has no token (one is issued on consent) and shows ``consent``."""
    return template("play.html").substitute(token=html.escape(token), keys=script_json(KEYS), title=html.escape(title),
                                            consent=html.escape(consent)).encode()


# ---- a play session ------------------------------------------------------------------------------
@dataclass
class PlayResult:
    run_dir: Path
    written: list[EpisodeResult] = field(default_factory=list)
    stopped: bool = False


def default_run_name(name: str) -> str:
    return f"play-{name}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


def human_model(name: str) -> ModelEntry:
    return ModelEntry(config=ModelConfig.for_model(f"human/{name}", name=name))


async def play_maze(board: Board, index: int, maze: Maze, protocol: Protocol,
                    identity: EpisodeIdentity) -> EpisodeResult | None:
    """One maze played on ``board`` through the episode loop every model runs; None when the
    player stopped (or the session ended) before it was over: the unfinished game is dropped."""
    episode = await run_episode(maze, HumanAgent(board, index), protocol, identity)
    assert isinstance(episode, EpisodeResult)  # no should_stop: never suspended
    return None if board.stopped else episode


def show_finished(board: Board, maze: Maze, episode: EpisodeResult) -> None:
    board.publish(phase="between", finished=[*board.view["finished"], {
        "maze_id": maze.id, "termination": episode.termination, "steps": len(episode.steps)}])


async def play(mazes: list[Maze], *, name: str, protocol: Protocol, run_dir: Path, port: int = 0,
               on_ready: Callable[[str], None] | None = None, linger_s: float = 1.5,
               sealed: dict[str, str] | None = None) -> PlayResult:
    """Serve the game on 127.0.0.1 and play ``mazes`` in a row; each finished one is written at once.
    ``sealed``: the sealed set the mazes come from (``env.sets.sealed_of``), which the manifest records."""
    check_name("--name", "", name, "player name")
    earlier = read_manifest(run_dir) or {}
    run = earlier.get("run", run_dir.name)
    model = human_model(name)
    board = Board(asyncio.get_running_loop(), len(mazes))
    sessions = Sessions(cap=1)
    issued = sessions.issue(lambda: Session(board))
    assert issued is not None
    token = issued[0]
    page = page_html(token, f"gridbench play · {name}")
    server, url = start_server(make_handler(sessions, LOOPBACK_NAMES, page), HOST, port, 64, HOST)
    result = PlayResult(run_dir)
    try:
        # playing into an existing run (say, the models' run, to sit next to them in one report)
        # keeps that run's sweep; the play is recorded as one more invocation
        sweep = earlier.get("sweep") or {
            "name": "play", "mazes": [m.id for m in mazes], "protocol": protocol.to_dict(),
            "models": [{"name": name, "model": model.model}], "conditions": [{"name": "baseline"}],
        }
        write_manifest(run_dir, run=run, sweep=sweep, mazes={m.checksum: m.to_dict() for m in mazes},
                       invocation={"command": "play", "player": model.model, "argv": sys.argv[1:]},
                       sealed=sealed)
        if on_ready is not None:
            on_ready(url)
        done = completed_ids(run_dir)
        for i, maze in enumerate(mazes):
            repeat = 0
            while episode_id(maze, model, protocol, repeat) in done:
                repeat += 1  # the same maze again in this run: a new repeat, never an overwrite
            eid = episode_id(maze, model, protocol, repeat)
            identity = EpisodeIdentity(run=run, episode_id=eid, model_name=name, model=model.model,
                                       condition="baseline", repeat=repeat, maze_id=maze.id)
            episode = await play_maze(board, i, maze, protocol, identity)
            if episode is None:
                result.stopped = True
                break
            write_episode(run_dir, episode)
            done.add(eid)
            result.written.append(episode)
            show_finished(board, maze, episode)
        board.publish(phase="stopped" if result.stopped else "done", run_dir=str(run_dir))
        await asyncio.sleep(linger_s)  # let the page fetch the final state before the server goes
    finally:
        server.shutdown()
        server.server_close()
    return result
