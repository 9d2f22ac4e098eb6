"""Human play: the game server over real HTTP, then the whole game from the keyboard in Chromium."""

from __future__ import annotations

import asyncio
import http.client
import json
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from web_runs import run_async

from agents import Protocol, Turn, build_messages
from app.web.play import KEYS, play
from env import initial_state, load_maze, resolve_maze, save_maze
from env.maze import maze_from_dict
from env.oracle import solve
from traces import read_manifest, read_run

CORRIDOR = {
    "format": "gridbench.maze/1", "id": "corridor",
    "grid": ["######", "#....#", "######"],
    "start": {"pos": [1, 1], "dir": "south"}, "goal": [4, 1], "objects": [],
}


@pytest.fixture(scope="module")
def corridor_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("mazes") / "corridor.json"
    save_maze(maze_from_dict(CORRIDOR), path)
    return path


def _call(url: str, token: str | None, body: dict | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["X-Play-Token"] = token
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _foreign_host(url: str) -> int:
    host, port = urllib.parse.urlsplit(url).netloc.split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", "/", headers={"Host": f"attacker.example:{port}"})
    status = conn.getresponse().status
    conn.close()
    return status


@pytest.mark.parametrize("first,protocol", [
    (None, Protocol.preset("gridbench-final")),
    ("study/r1_M1_8x8_corridor_kr_0", Protocol(switch_frames="study")),  # the study's game and frames
])
def test_the_game_over_http_writes_a_human_trace_with_the_oracle_metrics(tmp_path, corridor_file, first, protocol):
    """Plays the corridor (or a study maze), then stops during the example: the finished game
    alone is kept."""
    corridor, example = load_maze(corridor_file) if first is None else resolve_maze(first), resolve_maze("example")
    plan = solve(corridor).plan_names
    run_dir = tmp_path / "run"
    ready: asyncio.Queue = asyncio.Queue()

    async def player() -> None:
        url = await ready.get()
        page = (await asyncio.to_thread(urllib.request.urlopen, url, None, 10)).read().decode()
        token = re.search(r'name="play-token" content="([^"]+)"', page).group(1)
        assert (await asyncio.to_thread(_call, url + "api/state", None))[0] == 403  # no token, no game
        assert (await asyncio.to_thread(_foreign_host, url)) == 403  # a DNS-rebinding page is refused
        version = 0
        for i, action in enumerate(plan):
            status, view = await asyncio.to_thread(_call, f"{url}api/state?after={version}", token)
            assert status == 200 and view["phase"] == "turn" and view["maze_id"] == corridor.id
            version = view["version"]
            if i == 0:  # the page is given the model's own messages for this turn
                turn = Turn(corridor, protocol, 1, initial_state(corridor), (), view.get("step_cap", 6))
                images = [p["image_url"]["url"] for m in build_messages(turn) for p in m["content"]
                          if p["type"] == "image_url"]
                assert [p["src"] for m in view["messages"] for p in m["parts"] if p["type"] == "image"] == images
                bad = await asyncio.to_thread(_call, url + "api/act", token, {"action": "jump", "version": version})
                assert bad[0] == 400
            status, _ = await asyncio.to_thread(_call, url + "api/act", token, {"action": action, "version": version})
            assert status == 200
            # the same turn cannot be answered twice
            again = await asyncio.to_thread(_call, url + "api/act", token, {"action": action, "version": version})
            assert again[0] == 409
        status, view = await asyncio.to_thread(_call, f"{url}api/state?after={version}", token)
        assert view["maze_id"] == "example" and view["finished"][0]["termination"] == "solved"
        await asyncio.to_thread(_call, url + "api/stop", token, {})

    protocol = Protocol.preset("gridbench-final")

    async def main():
        game = asyncio.create_task(play([corridor, example], name="tester", protocol=protocol, run_dir=run_dir,
                                        on_ready=ready.put_nowait, linger_s=0.1))
        await player()
        return await game

    result = run_async(main())
    assert result.stopped and len(result.written) == 1
    episodes, steps = read_run(run_dir)
    assert len(episodes) == 1
    ep = episodes.iloc[0]
    assert ep.model == "human/tester" and ep.model_name == "tester" and ep.maze_id == corridor.id
    assert ep.solved and ep.termination == "solved"
    assert ep.steps == ep.optimal_actions == len(plan) and ep.progress_action == 1.0
    assert steps.sort_values("step").action.tolist() == plan
    assert (steps.parse == "exact").all() and steps.prompt_hash.str.len().gt(0).all()
    manifest = read_manifest(run_dir)
    assert manifest["sweep"]["models"] == [{"name": "tester", "model": "human/tester"}]
    assert corridor.checksum in manifest["mazes"]


def test_a_bad_name_or_a_busy_port_is_bad_input_and_writes_nothing(tmp_path):
    bad = subprocess.run([sys.executable, "-m", "app.cli", "play", "example", "--name", "../x",
                          "--out", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--name" in bad.stderr
    assert list(tmp_path.iterdir()) == []
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        busy = subprocess.run([sys.executable, "-m", "app.cli", "play", "example", "--port", port,
                               "--out", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert busy.returncode == 2 and len(busy.stderr.strip().splitlines()) == 1 and "--port" in busy.stderr
    assert list(tmp_path.iterdir()) == []


# ---- in the browser ---------------------------------------------------------------------------
PRESS = {action: keys[0] for action, keys in KEYS.items()}


class Game:
    """``gridbench play`` in a subprocess: the page's URL, then what the command printed."""

    def __init__(self, page, args: list[str]):
        self.page = page
        self.proc = subprocess.Popen([sys.executable, "-m", "app.cli", "play", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert match, line + self.proc.stderr.read()
        self.url = match.group(0)
        self.out = self.err = ""

    def __enter__(self) -> Game:
        self.page.goto(self.url)
        return self

    def finish(self, phase: str) -> None:
        self.page.wait_for_selector(f"body[data-phase='{phase}']")
        self.out, self.err = self.proc.communicate(timeout=60)
        assert self.proc.returncode == 0, self.err

    def __exit__(self, *exc) -> None:
        self.proc.kill()
        self.proc.wait()


def _play_keys(page, actions: list[str], version: str = "0", letters: bool = False) -> str:
    for action in actions:
        page.wait_for_selector(f"body[data-phase='turn']:not([data-version='{version}'])")
        version = page.get_attribute("body", "data-version")
        page.keyboard.press(KEYS[action][-1].upper() if letters else PRESS[action])
    return version


@pytest.mark.slow
def test_play_two_mazes_from_the_keyboard_then_view_the_human_run(page, tmp_path, corridor_file):
    example = resolve_maze("example")
    with Game(page, [str(corridor_file), "example", "--name", "tester", "--out", str(tmp_path), "--run", "h1"]) as game:
        corridor_plan = solve(load_maze(corridor_file)).plan_names
        version = _play_keys(page, corridor_plan)
        plan = solve(example).plan_names
        version = _play_keys(page, plan[:4], version)
        assert page.inner_text("#where") == "maze 2 of 2"
        assert f"Maze 1 is over (solved after {len(corridor_plan)} steps)" in page.inner_text("#banner")
        assert page.locator(".msg img").count() >= 2  # history frames and the current frame
        page.screenshot(path=str(tmp_path / "play.png"))
        version = _play_keys(page, plan[4:], version, letters=True)  # the letter keys work too
        game.finish("done")
        assert "All 2 mazes played" in page.inner_text("#status")
    assert "wrote 2 episode(s), 2 solved" in game.out
    episodes, _ = read_run(tmp_path / "h1")
    by_maze = episodes.set_index("maze_id")
    assert by_maze.loc["example"].steps == by_maze.loc["example"].optimal_actions == solve(example).optimal_actions
    assert set(episodes.model) == {"human/tester"} and episodes.solved.all()
    assert page.errors == []
    # and the human run is viewable like any other
    view = subprocess.run([sys.executable, "-m", "app.cli", "view", str(tmp_path / "h1")],
                          capture_output=True, text=True, timeout=120)
    assert view.returncode == 0, view.stderr
    page.goto((tmp_path / "h1" / "view" / "index.html").as_uri())
    assert page.inner_text("#count") == "showing 2 of 2"


@pytest.mark.slow
def test_stop_midway_keeps_the_finished_maze(page, tmp_path, corridor_file):
    with Game(page, [str(corridor_file), "example", "--name", "quitter", "--out", str(tmp_path), "--run", "q"]) as game:
        version = _play_keys(page, solve(load_maze(corridor_file)).plan_names)
        _play_keys(page, ["left", "forward"], version)
        page.click("#stop")
        game.finish("stopped")
    assert "stopped: wrote 1 episode(s)" in game.out
    episodes, steps = read_run(tmp_path / "q")
    assert episodes.maze_id.tolist() == ["corridor"] and set(steps.maze_id) == {"corridor"}


def test_playing_into_a_models_run_keeps_its_sweep_and_adds_the_human(tmp_path, corridor_file):
    """So one ``gridbench report`` holds the person and the models side by side."""
    from web_runs import make_run

    corridor = load_maze(corridor_file)
    run_dir = make_run(tmp_path / "models", [(corridor, "builtin/oracle", "baseline", 0)])
    ready: asyncio.Queue = asyncio.Queue()

    async def player() -> None:
        url = await ready.get()
        page = (await asyncio.to_thread(urllib.request.urlopen, url, None, 10)).read().decode()
        token = re.search(r'name="play-token" content="([^"]+)"', page).group(1)
        version = 0
        for action in solve(corridor).plan_names:
            _, view = await asyncio.to_thread(_call, f"{url}api/state?after={version}", token)
            version = view["version"]
            await asyncio.to_thread(_call, url + "api/act", token, {"action": action, "version": version})

    async def main():
        game = asyncio.create_task(play([corridor], name="ada", protocol=Protocol.preset("gridbench-final"), run_dir=run_dir,
                                        on_ready=ready.put_nowait, linger_s=0.1))
        await player()
        return await game

    run_async(main())
    manifest = read_manifest(run_dir)
    assert manifest["sweep"] == {"name": "test"} and manifest["invocations"][-1]["player"] == "human/ada"
    episodes, _ = read_run(run_dir)
    assert sorted(episodes.model) == ["builtin/oracle", "human/ada"] and set(episodes.run) == {"models"}


def test_playing_a_sealed_maze_records_its_set_as_a_run_on_it_does(sealed_set, tmp_path):
    """The manifest names the sealed set and its commitment (docs/sealed.md), as ``gridbench run``'s does."""
    folder, public, _ = sealed_set
    game = Game(None, [str(folder / "p0001.json"), "--name", "tester", "--out", str(tmp_path), "--run", "blind"])
    try:
        said = game.proc.stdout.readline()
        page = urllib.request.urlopen(game.url, None, 10).read().decode()
        token = re.search(r'name="play-token" content="([^"]+)"', page).group(1)
        assert _call(game.url + "api/stop", token, {})[0] == 200
        out, err = game.proc.communicate(timeout=60)
    finally:
        game.__exit__()
    assert game.proc.returncode == 0 and "stopped: wrote 0 episode(s)" in out, err
    commitment = json.loads(public.read_text())["commitment"]
    assert read_manifest(tmp_path / "blind")["sealed"] == {"commitment": commitment, "set": "blind3"}
    assert f"sealed set blind3: the manifest records commitment {commitment}" in " ".join(said.split())

def test_every_play_example_of_the_viewer_doc_is_accepted():
    """Each `gridbench play` line of docs/viewer.md names mazes that resolve and a --protocol and
    --switch-frames the command takes (the doc once showed a preset name it refuses)."""
    import shlex

    from agents import resolve_protocol
    from env import resolve_mazes

    doc = (Path(__file__).resolve().parents[2] / "docs" / "viewer.md").read_text()
    examples = [line.split("#")[0] for line in doc.splitlines() if line.startswith("gridbench play ")]
    assert len(examples) >= 3
    for line in examples:
        words = [w for w in shlex.split(line)[2:] if w != "--serve"]  # the one option without a value
        first = next((i for i, w in enumerate(words) if w.startswith("--")), len(words))
        options = dict(zip(words[first::2], words[first + 1::2], strict=True))
        assert resolve_mazes(words[:first]), line
        resolve_protocol({"preset": options.get("--protocol", "gridbench-final"),
                          "switch_frames": options.get("--switch-frames", "distinct")}, "--protocol")
