"""``gridbench play --serve``: many participants at once in real Chromium, then a hostile client
over plain HTTP while two honest participants play; every game is read back from the run."""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import secrets
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from web_runs import run_async

from agents import Protocol
from app.web.play import KEYS
from app.web.play_service import DEFAULT_CONSENT, FULL, PLAYED_ALL, serve
from env import BadInput, load_maze, save_maze
from env.files import is_temp
from env.maze import maze_from_dict
from env.oracle import solve
from episodes.replay import replay
from traces import read_episodes, read_run

# two corridors with different ways to their goals: a participant shown the wrong maze fails it
CORRIDORS = [
    {"format": "gridbench.maze/1", "id": "corridor-east", "grid": ["######", "#....#", "######"],
     "start": {"pos": [1, 1], "dir": "south"}, "goal": [4, 1], "objects": []},
    {"format": "gridbench.maze/1", "id": "corridor-west", "grid": ["#####", "#...#", "#####"],
     "start": {"pos": [3, 1], "dir": "north"}, "goal": [1, 1], "objects": []},
]
PROTOCOL = Protocol.preset("gridbench-final")
PRESS = {action: keys[0] for action, keys in KEYS.items()}


@pytest.fixture(scope="module")
def corridors(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("corridors")
    paths = [folder / f"{c['id']}.json" for c in CORRIDORS]
    for c, path in zip(CORRIDORS, paths, strict=True):
        save_maze(maze_from_dict(c), path)
    return paths


@pytest.fixture(scope="module")
def plans(corridors) -> dict[str, list[str]]:
    return {load_maze(p).id: solve(load_maze(p)).plan_names for p in corridors}


def _request(url: str, method: str, path: str, body: bytes | None = None, headers: dict | None = None,
             token: str | None = None) -> tuple[int, dict]:
    """One request on its own connection; (status, JSON body or {})."""
    host, port = url.split("//")[1].strip("/").rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        sent = {"Content-Type": "application/json", **({"X-Play-Token": token} if token else {}), **(headers or {})}
        conn.request(method, path, body=body, headers=sent)
        response = conn.getresponse()
        data = response.read()
    finally:
        conn.close()
    try:
        return response.status, json.loads(data)
    except ValueError:
        return response.status, {"raw": data[:200].decode(errors="replace")}


def _call(url: str, method: str, path: str, obj: dict | None = None, token: str | None = None) -> tuple[int, dict]:
    """An honest client's request: a 503 (the server busy) is tried again a moment later."""
    for _ in range(200):
        status, body = _request(url, method, path, None if obj is None else json.dumps(obj).encode(), token=token)
        if status != 503:
            return status, body
        time.sleep(0.05)
    raise AssertionError(f"{path} stayed busy")


# ---- in the browser ---------------------------------------------------------------------------
@pytest.mark.slow
def test_three_participants_at_once_meet_the_quotas_in_chromium(browser, tmp_path, corridors, plans):
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "play", *map(str, corridors), "--serve", "--quota", "2",
                             "--out", str(tmp_path), "--run", "study"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    contexts = []
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line).group(0) if "http" in line else pytest.fail(proc.stderr.read())
        pages = []
        for _ in range(3):  # one after another, so each is given its first maze before the next comes
            contexts.append(browser.new_context(viewport={"width": 1200, "height": 900}))
            page = contexts[-1].new_page()
            page.errors = []
            page.on("pageerror", lambda e, page=page: page.errors.append(str(e)))
            page.on("console", lambda m, page=page: page.errors.append(m.text) if m.type == "error" else None)
            page.goto(url)
            assert page.inner_text("#consent-text") == DEFAULT_CONSENT and page.locator(".msg").count() == 0
            page.click("#agree")
            page.wait_for_selector("body[data-phase='turn']")
            pages.append(page)
        who = [re.fullmatch(r"participant (p-[0-9a-f]{12})", p.inner_text("#who")).group(1) for p in pages]
        assert len(set(who)) == 3
        # all three play at once, a key press each in turn, each the oracle's plan of the maze it was given
        answered = {id(p): "" for p in pages}
        playing: dict[int, tuple[str, list[str]]] = {}
        deadline = time.monotonic() + 60
        while any(p.get_attribute("body", "data-phase") != "done" for p in pages):
            assert time.monotonic() < deadline, [p.get_attribute("body", "data-phase") for p in pages]
            for p in pages:
                version = p.get_attribute("body", "data-version")
                if p.get_attribute("body", "data-phase") != "turn" or version == answered[id(p)]:
                    continue
                where = p.inner_text("#where")
                if playing.get(id(p), ("",))[0] != where:  # a new maze: which one, asked with the page's own token
                    token = p.evaluate("sessionStorage.getItem('gridbench-play-token')")
                    _, view = _call(url, "GET", f"/api/state?after={int(version) - 1}", token=token)
                    playing[id(p)] = (where, list(plans[view["maze_id"]]))
                p.keyboard.press(PRESS[playing[id(p)][1].pop(0)])
                answered[id(p)] = version
            pages[0].wait_for_timeout(10)
        told = [p.inner_text("#status") for p in pages]
        # whoever finished the last game the quotas needed is told they are met; the others had played all they could
        assert all(t.startswith((FULL, PLAYED_ALL)) for t in told) and any(t.startswith(FULL) for t in told), told
        assert all(p.errors == [] for p in pages)
        out, err = proc.communicate(timeout=60)
    finally:
        for c in contexts:
            c.close()
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, err
    assert "every maze has its quota: wrote 4 episode(s), 4 solved, by 3 participant(s) (at most 3 at once)" in out
    run = tmp_path / "study"
    episodes, steps = read_run(run)
    assert len(episodes) == 4 and episodes.solved.all() and (episodes.steps == episodes.optimal_actions).all()
    assert set(episodes.model_name) == set(who) and set(episodes.model) == {f"human/{p}" for p in who}
    assert episodes.groupby("maze_id").model_name.nunique().to_dict() == {m: 2 for m in plans}  # the quota, no repeats
    assert len(read_episodes(run)) == 4 and len(steps) == episodes.steps.sum()
    for p in who:
        record = json.loads((run / "participants" / f"{p}.json").read_text())
        assert record["consent"] == DEFAULT_CONSENT and record["model"] == f"human/{p}"


# ---- a hostile client -------------------------------------------------------------------------
class Served:
    """``serve`` on its own thread and event loop; its URL once it listens, its result once it ends."""

    def __init__(self, **options):
        self._ready = threading.Event()
        self.url = ""
        self.result = None
        self.error: BaseException | None = None

        async def serving():
            self.task = asyncio.current_task()
            self.loop = asyncio.get_running_loop()
            return await serve(on_ready=self._listening, linger_s=0.2, tick_s=0.2, **options)

        def main() -> None:
            try:
                self.result = asyncio.run(serving())
            except BaseException as err:  # noqa: BLE001 - handed to the test
                self.error = err
                self._ready.set()

        self.thread = threading.Thread(target=main, daemon=True)
        self.thread.start()
        assert self._ready.wait(60), "the service never listened"
        if self.error is not None:
            raise self.error

    def _listening(self, url: str) -> None:
        self.url = url
        self._ready.set()

    def close(self) -> None:
        """End a service whose quotas are not met, as Ctrl-C would."""
        self.loop.call_soon_threadsafe(self.task.cancel)
        self.thread.join(30)


def _honest(url: str, plans: dict[str, list[str]], second: threading.Event, seen: dict) -> None:
    """Join, play the oracle's plan of every maze given, answering each turn once (its replay refused)."""
    status, joined = _call(url, "POST", "/api/join", {"consent": True})
    assert status == 200, joined
    token, version, step = joined["token"], 0, {}
    seen[joined["participant"]] = token
    while True:
        status, view = _call(url, "GET", f"/api/state?after={version}", token=token)
        assert status == 200, view
        version = view["version"]
        if view["phase"] == "done":
            return
        if view["phase"] != "turn":
            continue
        while view["finished"] and not second.is_set():  # the test looks at an expired session meanwhile:
            time.sleep(0.2)  # this one waits, still polling as its page would, so its own session lives
            assert _call(url, "GET", f"/api/state?after={version - 1}", token=token)[0] == 200
        key = (view["maze_id"], len(view["finished"]))
        action = plans[view["maze_id"]][step.setdefault(key, 0)]
        step[key] += 1
        assert _call(url, "POST", "/api/act", {"action": action, "version": version}, token)[0] == 200
        assert _call(url, "POST", "/api/act", {"action": action, "version": version}, token)[0] == 409  # replayed


@pytest.mark.slow
def test_a_hostile_client_is_refused_and_honest_games_are_intact(tmp_path, corridors, plans):
    mazes = [load_maze(p) for p in corridors]
    before = {p for p in tmp_path.rglob("*")}
    run = tmp_path / "out" / "study"
    service = Served(mazes=mazes, protocol=PROTOCOL, run_dir=run, quota=2, max_sessions=12, idle_s=3.0,
                     long_poll_s=1.0)
    url = service.url
    assert _request(url, "GET", "/", headers={"Host": "attacker.example"})[0] == 403  # DNS rebinding
    for path in ("/../../etc/passwd", "/static/../play.py", "/static/%2e%2e/%2e%2e/app/web/play.py",
                 "/static/..%2fplay.py", "//etc/passwd", "/static/", "/static/play.js/..", "http://x/../../etc"):
        status, body = _request(url, "GET", path)
        assert status in (403, 404) and "error" in body, (path, status, body)  # the absolute URL names its own host
    port = url.rsplit(":", 1)[1].strip("/")
    assert _request(url, "GET", "http://[::1/x", headers={"Host": f"127.0.0.1:{port}"})[0] == 400  # no URL at all
    bodies = [  # (body, headers, status)
        (b"x" * 5000, {}, 413),
        (b"{}", {"Content-Length": str(10**12)}, 413),
        (b"{}", {"Content-Length": "-5"}, 411),
        (b"{}", {"Content-Length": "two"}, 411),
        (b'{"consent": true}', {"Content-Type": "text/plain"}, 415),
        (b'{"consent": tru', {}, 400),
        (b"[1]", {}, 400),
        (b"[" * 4000, {}, 400),  # nested past what json reads
        (b"\xff\xfe{\x00}", {}, 400),
        (b'{"consent": "yes"}', {}, 400),
    ]
    for body, headers, status in bodies:
        got = _request(url, "POST", "/api/join", body, headers)
        assert got[0] == status, (body[:20], headers, got)
    forged = secrets.token_urlsafe(32)
    assert _request(url, "GET", "/api/state", token=forged)[0] == 403
    assert _request(url, "POST", "/api/act", b'{"action": "forward", "version": 1}', token=forged)[0] == 403
    assert _request(url, "POST", "/api/stop", b"{}", token="\u00e9" * 40)[0] == 403

    greedy = _call(url, "POST", "/api/join", {"consent": True})[1]["token"]
    with ThreadPoolExecutor(max_workers=8) as pool:  # one session's page holding every connection it can
        polls = list(pool.map(lambda _: _request(url, "GET", "/api/state?after=999", token=greedy)[0], range(8)))
    assert polls.count(200) <= 3 and polls.count(429) >= 5, polls

    second, seen = threading.Event(), {}
    honest = [threading.Thread(target=_honest, args=(url, plans, second, seen), daemon=True) for _ in range(2)]
    for t in honest:
        t.start()
    with ThreadPoolExecutor(max_workers=200) as pool:  # a thousand session requests at once
        flood = list(pool.map(lambda _: _request(url, "POST", "/api/join", b'{"consent": true}'), range(1000)))
    statuses = [s for s, _ in flood]
    assert set(statuses) <= {200, 503} and statuses.count(200) > 0 and statuses.count(503) > 900
    stale = next(body["token"] for s, body in flood if s == 200)
    assert _request(url, "GET", "/static/play.css")[0] == 200  # still answering
    time.sleep(4.5)  # past the idle time (any request with the token would keep its session alive)
    try:
        assert _request(url, "GET", "/api/state?after=0", token=stale)[0] == 403  # the session ended: replay refused
    finally:
        second.set()
    for t in honest:
        t.join(60)
    service.thread.join(60)
    assert service.error is None and service.result is not None and service.result.met
    assert service.result.peak_sessions == 12  # the cap, reached and never passed

    episodes, steps = read_run(run)
    assert sorted(episodes.model_name) == sorted([*seen, *seen]) and len(service.result.written) == 4
    assert episodes.solved.all() and set(episodes.model) == {f"human/{p}" for p in seen}
    for ep in episodes.itertuples():
        assert steps[steps.episode_id == ep.episode_id].sort_values("step").action.tolist() == plans[ep.maze_id]
        assert replay(run, ep.episode_id).ok
    # the flood wrote nothing: no participant record without a finished game, nothing outside the run
    assert sorted(p.name for p in (run / "participants").iterdir()) == sorted(f"{p}.json" for p in seen)
    written = {p for p in tmp_path.rglob("*")} - before
    assert all(p == run.parent or run in (p, *p.parents) for p in written), written
    assert not [p for p in written if is_temp(p.name)]


def test_a_server_off_loopback_answers_only_the_hosts_named(tmp_path, corridors):
    with pytest.raises(BadInput, match="--allow-host"):
        run_async(serve([load_maze(corridors[0])], protocol=PROTOCOL, run_dir=tmp_path / "r", quota=1,
                        host="0.0.0.0"))
    assert not (tmp_path / "r").exists()
    service = Served(mazes=[load_maze(corridors[0])], protocol=PROTOCOL, run_dir=tmp_path / "named", quota=1,
                     allow_hosts=["Play.Example"])
    url = service.url
    assert url.startswith("http://Play.Example:")
    port = url.rsplit(":", 1)[1].strip("/")
    local = url.replace("Play.Example", "127.0.0.1")
    assert _request(local, "GET", "/")[0] == 403  # bound to loopback, but the names are the user's now
    assert _request(local, "GET", "/", headers={"Host": f"play.example:{port}"})[0] == 200
    assert _request(local, "POST", "/api/join", b'{"consent": true}', {"Host": f"play.example:{port}"})[0] == 200
    service.close()  # as Ctrl-C: the server goes with the service, the game in progress dropped
    with pytest.raises(OSError):
        _request(local, "GET", "/", headers={"Host": f"play.example:{port}"})
    assert read_episodes(tmp_path / "named").empty


@pytest.mark.parametrize("args,option", [
    (["--serve", "--host", "0.0.0.0"], "--allow-host"),
    (["--quota", "2"], "--quota"),
    (["--serve", "--name", "ada"], "--name"),
    (["--serve", "--consent", " "], "--consent"),
])
def test_serve_options_that_do_not_fit_are_bad_input(tmp_path, capsys, args, option):
    from app.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["play", "example", "--out", str(tmp_path), *args])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1 and option in err
    assert list(tmp_path.iterdir()) == []


def test_the_least_covered_maze_comes_first_and_never_twice(corridors):
    from collections import Counter

    from app.web.play_service import Quotas

    east, west = (load_maze(p) for p in corridors)
    quotas = Quotas([east, west, east], 2, Counter({east.checksum: 1}))  # one east game already in the run
    assert quotas.mazes == [east, west] and quotas.progress() == (1, 4)
    assert quotas.next_for(set()) == west  # the least covered
    quotas.start(west)
    assert quotas.next_for(set()) == east  # one each now: the set's order
    quotas.start(east)
    # east is full with the game in play; west has room for one more, but not for one who played it
    assert quotas.next_for({west.checksum}) is None and quotas.left_for({west.checksum})
    assert quotas.next_for(set()) == west
    quotas.end(east, finished=False)  # dropped: its maze is offered again
    assert quotas.next_for({west.checksum}) == east
    quotas.start(east)
    quotas.end(east, finished=True)
    quotas.end(west, finished=True)
    assert not quotas.met and quotas.next_for({east.checksum}) == west and quotas.progress() == (3, 4)
    assert not quotas.left_for({east.checksum, west.checksum})
    quotas.start(west)
    quotas.end(west, finished=True)
    assert quotas.met and quotas.in_play == 0 and quotas.next_for(set()) is None and quotas.progress() == (4, 4)
