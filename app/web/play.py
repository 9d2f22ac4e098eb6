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
"""

from __future__ import annotations

import asyncio
import html
import json
import secrets
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

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

    def __init__(self, loop: asyncio.AbstractEventLoop, maze_count: int):
        self._loop = loop
        self._cond = threading.Condition()
        self._pending: asyncio.Future[int] | None = None
        self.version = 0
        self.view: dict[str, Any] = {"phase": "starting", "maze_count": maze_count, "finished": []}
        self.stopped = False

    def publish(self, **changes: Any) -> int:
        with self._cond:
            self.version += 1
            self.view = {**self.view, **changes, "version": self.version}
            self._cond.notify_all()
            return self.version

    def snapshot(self, after: int, timeout: float = LONG_POLL_S) -> dict[str, Any]:
        with self._cond:
            self._cond.wait_for(lambda: self.version > after, timeout)
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


class _PlayHandler(BaseHTTPRequestHandler):
    """The game's HTTP API on 127.0.0.1; ``make_handler`` gives it its board, token and page."""

    board: Board
    token: str
    page: bytes
    static: dict[str, tuple[bytes, str]]
    server_version = "gridbench-play"

    def log_message(self, format: str, *args: Any) -> None:  # keep the terminal for the game
        return

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json")

    def _authorised(self) -> bool:
        if not secrets.compare_digest(self.headers.get("X-Play-Token", ""), self.token):
            self._json(HTTPStatus.FORBIDDEN, {"error": "bad token"})
            return False
        return True

    def _local_host(self) -> bool:
        # a DNS-rebinding page reaches 127.0.0.1 under its own host name: refuse it, or it
        # could read the page (and its token) as if it were this site
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
        if host in ("127.0.0.1", "localhost"):
            return True
        self._json(HTTPStatus.FORBIDDEN, {"error": "wrong host"})
        return False

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        if not self._local_host():
            return
        if url.path == "/":
            self._send(HTTPStatus.OK, self.page, "text/html; charset=utf-8")
        elif url.path in self.static:
            self._send(HTTPStatus.OK, *self.static[url.path])
        elif url.path == "/favicon.ico":
            self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
        elif url.path == "/api/state":
            if not self._authorised():
                return
            try:
                after = int(parse_qs(url.query).get("after", ["0"])[0])
            except ValueError:
                after = 0
            self._json(HTTPStatus.OK, self.board.snapshot(after))
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        if not self._local_host() or not self._authorised():
            return
        length = min(int(self.headers.get("Content-Length") or 0), 4096)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            body = {}
        if url.path == "/api/act":
            action = body.get("action") if isinstance(body, dict) else None
            version = body.get("version") if isinstance(body, dict) else None
            # human play is the gridbench style, which offers the six actions (no drop)
            if action not in SIX_ACTIONS or not isinstance(version, int):
                self._json(HTTPStatus.BAD_REQUEST, {"error": "need an action and the version it answers"})
            elif self.board.answer(version, ACTIONS.index(action)):
                self._json(HTTPStatus.OK, {"ok": True})
            else:
                self._json(HTTPStatus.CONFLICT, {"error": "not waiting for that turn"})
        elif url.path == "/api/stop":
            self.board.stop()
            self._json(HTTPStatus.OK, {"ok": True})
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})


def make_handler(board: Board, token: str, page: bytes) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_PlayHandler,), {"board": board, "token": token, "page": page,
                                             "static": _static_files()})


# ---- a play session ------------------------------------------------------------------------------
@dataclass
class PlayResult:
    run_dir: Path
    written: list[EpisodeResult] = field(default_factory=list)
    stopped: bool = False


def default_run_name(name: str) -> str:
    return f"play-{name}-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"


async def play(mazes: list[Maze], *, name: str, protocol: Protocol, run_dir: Path, port: int = 0,
               on_ready: Callable[[str], None] | None = None, linger_s: float = 1.5,
               sealed: dict[str, str] | None = None) -> PlayResult:
    """Serve the game on 127.0.0.1 and play ``mazes`` in a row; each finished one is written at once.
    ``sealed``: the sealed set the mazes come from (``env.sets.sealed_of``), which the manifest records."""
    check_name("--name", "", name, "player name")
    earlier = read_manifest(run_dir) or {}
    run = earlier.get("run", run_dir.name)
    model = ModelEntry(config=ModelConfig.for_model(f"human/{name}", name=name))
    board = Board(asyncio.get_running_loop(), len(mazes))
    token = secrets.token_urlsafe(24)
    page = template("play.html").substitute(
        token=html.escape(token), keys=script_json(KEYS), title=html.escape(f"gridbench play · {name}"))
    try:
        server = ThreadingHTTPServer((HOST, port), make_handler(board, token, page.encode()))
    except OSError as err:
        raise BadInput("--port", "", f"cannot listen on {HOST}:{port}: {err.strerror or err}") from None
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="gridbench-play-http", daemon=True).start()
    url = f"http://{HOST}:{server.server_address[1]}/"
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
            agent = HumanAgent(board, i)
            identity = EpisodeIdentity(run=run, episode_id=eid, model_name=name, model=model.model,
                                       condition="baseline", repeat=repeat, maze_id=maze.id)
            episode = await run_episode(maze, agent, protocol, identity)
            assert isinstance(episode, EpisodeResult)  # no should_stop: never suspended
            if board.stopped:
                result.stopped = True
                break
            write_episode(run_dir, episode)
            done.add(eid)
            result.written.append(episode)
            board.publish(phase="between", finished=[*board.view["finished"], {
                "maze_id": maze.id, "termination": episode.termination, "steps": len(episode.steps)}])
        board.publish(phase="stopped" if result.stopped else "done", run_dir=str(run_dir))
        await asyncio.sleep(linger_s)  # let the page fetch the final state before the server goes
    finally:
        server.shutdown()
        server.server_close()
    return result
