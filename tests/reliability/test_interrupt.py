"""Ctrl-C on ``gridbench run``: a graceful stop repays nothing, and says how to resume.

The real command in its own process group (its embedded Ray with it), a scripted model on
127.0.0.1 that takes a while to answer, and SIGINT sent to the whole group as a terminal sends
it, while calls are in flight. The stop must give those calls their grace, journal them, print
what is done and left and the command that resumes, and exit 130; the same command then finishes
the run, and the calls the server answered equal the steps recorded, each (maze, step) once.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections import Counter

import pytest
from sweep_runs import FAKE_KEY, KEY_ENV, ROOT, assert_each_episode_once
from test_resume import assert_paid_once, long_mazes, sweep_file

from orchestrator.driver import GRACE_S, Driver
from orchestrator.sweep import load_sweep
from testing.reading import walls_from_text
from testing.scripted_server import ScriptedServer
from traces import Journals

pytestmark = pytest.mark.slow
LATENCY_S = 0.25  # each reply: long enough that a stop always finds calls in flight, far below the grace


def test_ctrl_c_stops_gracefully_says_how_to_resume_and_the_rerun_repays_nothing(tmp_path):
    mazes = long_mazes(3, at_least=20)
    out = tmp_path / "results"
    interrupted = threading.Event()
    with ScriptedServer(mode="oracle", mazes=mazes, latency=LATENCY_S) as srv:
        path = sweep_file(tmp_path / "ctrlc.yaml", srv.url, mazes, max_concurrency=2)
        command = [sys.executable, "-m", "app.cli", "run", str(path), "--out", str(out)]
        env = {**os.environ, KEY_ENV: FAKE_KEY}
        proc = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=True)

        def interrupt_mid_run() -> None:
            # two episodes running, a few steps each journaled: Ctrl-C, as a terminal sends it
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline and proc.poll() is None:
                if sum(r.answered for r in srv.chat_requests) >= 12:
                    in_flight = [r for r in srv.chat_requests if not r.answered]
                    if in_flight:
                        os.killpg(proc.pid, signal.SIGINT)
                        interrupted.set()
                        return
                time.sleep(0.02)

        watcher = threading.Thread(target=interrupt_mid_run, daemon=True)
        watcher.start()
        stdout, stderr = proc.communicate(timeout=300)
        watcher.join()
        assert interrupted.is_set(), stderr[-2000:]
        assert proc.returncode == 130, stderr[-3000:]
        # every call asked before the stop was answered in the grace: none is asked again
        assert all(r.answered for r in srv.chat_requests)
        assert "stopping" in stderr and f"up to {GRACE_S:.0f} s" in stderr
        lines = [line for line in stderr.splitlines() if line.startswith(("interrupted:", "resume with"))]
        assert len(lines) == 2, stderr[-3000:]
        assert "0 of 3 episodes done, 2 in progress" in lines[0] and "1 not started" in lines[0], lines[0]
        assert "resuming repays none" in lines[0]
        hint = lines[1].removeprefix("resume with the same command: ")
        assert shlex.split(hint) == ["gridbench", *command[3:]]
        run_dir = out / "ctrlc"
        assert len(Journals.of_run(run_dir).ids()) == 2
        answered_before = sum(r.answered for r in srv.chat_requests)
        journaled = sum(len(Journals.of_run(run_dir).read(eid).rows) for eid in Journals.of_run(run_dir).ids())
        assert journaled == answered_before  # each answered call is a journaled step

        again = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-3000:]
        sweep = load_sweep(path)
        episodes = assert_each_episode_once(run_dir, {s.episode_id for s in sweep.episodes()})
        assert episodes["solved"].all() and sorted(episodes["resumed"]) == [0, 1, 1]
        assert_paid_once(srv, episodes)


def test_a_hard_stop_asks_again_only_the_calls_in_flight_then(ray_with_key, tmp_path):
    """Ctrl-C twice (or a grace run out): the actors go at once. The call held unanswered at that
    moment, and at most one other per running episode, is asked again on resume; nothing else."""
    mazes = long_mazes(2, at_least=20)
    released = threading.Event()
    held: list[tuple] = []
    driver: list[Driver] = []

    def stop_hard_while_a_call_is_held(request):
        if held:
            # every later call is held too: the driver may take a poll to act on the stop, and on a
            # slow machine the other episode could otherwise finish within it (done, not in progress)
            released.wait(120)
        elif sum(r.answered for r in srv.chat_requests) >= 10:
            held.append((walls_from_text(request.body), request.step))
            driver[0].request_stop()
            driver[0].request_stop()
            released.wait(120)  # answered only once the run has stopped: too late to be journaled
        return None

    with ScriptedServer(mode="oracle", mazes=mazes, latency=0.02, on_request=stop_hard_while_a_call_is_held) as srv:
        sweep = load_sweep(sweep_file(tmp_path / "hard.yaml", srv.url, mazes, max_concurrency=2))
        driver.append(Driver(sweep, tmp_path / "run"))
        try:
            first = driver[0].execute()
        finally:
            released.set()
        assert first.exit_code == 130 and first.stop is not None and not first.stop.graceful
        assert (first.stop.done, first.stop.in_progress, first.stop.not_started) == (0, 2, 0)
        second = Driver(sweep, tmp_path / "run").execute()
        assert second.exit_code == 0 and second.stop is None
        episodes = assert_each_episode_once(tmp_path / "run", {s.episode_id for s in sweep.episodes()})
        assert episodes["solved"].all()
        asked = Counter((walls_from_text(r.body), r.step) for r in srv.chat_requests)
    again = {k for k, n in asked.items() if n > 1}
    assert held[0] in again and len(again) <= 2 and max(asked.values()) == 2
    assert len(asked) == int(episodes["steps"].sum())  # every step recorded once, from one of its calls
