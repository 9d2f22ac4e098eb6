"""``ModelServer``: one OpenAI-compatible server process on one node, owned by a Ray actor.

The actor launches the engine (vLLM or llama.cpp) as a subprocess in its own process group, with
its output appended to ``results/<run>/servers/<name>-<replica>.log``, and reports ready only
when ``/v1/models`` lists the model AND a one-token chat completion succeeds (a server can list
its model before it can generate). One supervisor thread owns the process for its whole life: it
launches it, watches it, restarts it when it dies (at most ``max_restarts`` times; each restart
bumps ``generation`` so the driver knows which episodes lost their server) and kills its process
group on ``stop``. The server is also tied to the supervisor thread with ``PR_SET_PDEATHSIG``, so a
killed actor or driver never leaves an orphaned engine holding a port or a GPU.

``ModelServerProcess`` is the plain class (usable without Ray); ``ModelServer`` is its Ray actor.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any

import ray

from agents.model import request_name
from orchestrator.serving.command_lines import llama_cpp_command, llama_cpp_weights, vllm_command
from orchestrator.serving.spec import NODE_IP, ServeSpec, Weights

LOG_TAIL_LINES = 40
HEALTH_INTERVAL_S = 1.0
# /v1/models is checked this often; this many failures in a row mean a hung server
HTTP_CHECK_EVERY_S = 10.0
HTTP_FAILURES_TO_RESTART = 3
STOP_GRACE_S = 15.0


class ServerStartError(RuntimeError):
    """A server that exited or never became ready; the message ends with its log tail."""


def log_tail(path: str | Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with open(path, errors="replace") as f:
            return "".join(deque(f, maxlen=lines)).rstrip()
    except OSError:
        return "(no log)"


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL it when the launching thread goes away."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _free_port(host: str, lo: int, hi: int, offset: int) -> int:
    """The first port from ``lo + offset`` (wrapping within the range) that binds on ``host``."""
    span = hi - lo + 1
    for i in range(span):
        port = lo + (offset + i) % span
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    raise ServerStartError(f"no free port in {lo}-{hi} on {host}")


class ModelServerProcess:
    """One server replica: launch, wait until ready, watch, restart, stop."""

    def __init__(
        self, *, name: str, replica: int, model: str, spec: ServeSpec, log_path: str,
        port_offset: int = 0, generation: int = 0,
    ):
        self.name = name
        self.replica = replica
        self.model = model
        self.served = request_name(model)
        self.spec = spec
        self.log_path = Path(log_path)
        self.port_offset = port_offset
        self._llama: tuple[str, Weights, str | None] | None = None  # llama_cpp_weights, once resolved
        self.weights: dict[str, str | None] | None = None  # Weights.to_dict() of what it serves
        self.state = "new"  # new | starting | ready | down | restarting | failed | stopped
        self.generation = generation  # above 0 from the start: a replica re-placed after its node was lost
        self.restarts = 0
        self.start_s: list[float] = []
        self.last_error = ""
        self.host = ""
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._started = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- public ------------------------------------------------------------------------
    @property
    def label(self) -> str:
        return f"{self.name}-{self.replica}"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"

    def start(self) -> dict[str, Any]:
        """Launch and block until ready; raises ``ServerStartError`` with the log tail."""
        if self._thread is not None:
            raise RuntimeError(f"{self.label} was started already")
        self._thread = threading.Thread(target=self._supervise, name=f"serve-{self.label}", daemon=True)
        self._thread.start()
        self._started.wait()
        if self.state != "ready":
            raise ServerStartError(self.last_error)
        return self.status()

    def status(self) -> dict[str, Any]:
        with self._lock:
            state = self.state
            if state == "ready" and self.proc is not None and self.proc.poll() is not None:
                state = "down"  # died since the supervisor's last look: it restarts it shortly
            return {
                "name": self.name, "replica": self.replica, "state": state,
                "generation": self.generation, "restarts": self.restarts, "url": self.url,
                "host": self.host, "port": self.port, "pid": self.proc.pid if self.proc else None,
                "start_s": list(self.start_s), "last_error": self.last_error,
                "log_path": str(self.log_path), "weights": self.weights,
            }

    def log_text(self, max_bytes: int = 4 * 1024 * 1024) -> str:
        """The end of this replica's log, for copying it to the driver's node."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - max_bytes))
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=STOP_GRACE_S + 10)
        self._kill_group()
        with self._lock:
            if self.state != "failed":
                self.state = "stopped"
        return self.status()

    # ---- supervisor thread -------------------------------------------------------------
    def _supervise(self) -> None:
        try:
            self._bring_up(first=True)
        except Exception as err:  # noqa: BLE001 - whatever stopped the start is the error to report
            self._set(state="failed", last_error=self._describe(err))
            self._started.set()
            return
        self._started.set()
        http_failures, next_http = 0, time.monotonic() + HTTP_CHECK_EVERY_S
        while not self._stop.wait(HEALTH_INTERVAL_S):
            died = self.proc is not None and self.proc.poll() is not None
            if not died and time.monotonic() >= next_http:
                next_http = time.monotonic() + HTTP_CHECK_EVERY_S
                http_failures = 0 if self._models_listed(timeout=30.0) else http_failures + 1
                if http_failures >= HTTP_FAILURES_TO_RESTART:
                    self._note(f"no answer from /v1/models {http_failures} times in a row: restarting")
                    self._kill_group()
                    died = True
            if not died:
                continue
            http_failures = 0
            code = self.proc.returncode if self.proc else None
            if self._stop.is_set():
                break
            if self.restarts >= self.spec.max_restarts:
                self._set(state="failed", last_error=(
                    f"{self.label}: server process exited (code {code}) and max_restarts "
                    f"({self.spec.max_restarts}) is spent; log tail:\n{log_tail(self.log_path)}"
                ))
                return
            self._set(state="restarting", restarts=self.restarts + 1)
            self._note(f"server process exited (code {code}); restart {self.restarts}/{self.spec.max_restarts}")
            try:
                self._bring_up(first=False)
            except Exception as err:  # noqa: BLE001
                self._set(state="failed", last_error=self._describe(err))
                return
        self._kill_group()

    def _bring_up(self, first: bool) -> None:
        t0 = time.monotonic()
        if first:
            self._set(state="starting")
            self.host = ray.util.get_node_ip_address() if self.spec.host == NODE_IP else self.spec.host
            lo, hi = self.spec.port_range
            self.port = _free_port(self.host, lo, hi, self.port_offset)
        cmd = self._command()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"=== gridbench: {self.label} generation {self.generation + (0 if first else 1)}: "
                      f"{' '.join(cmd)}\n".encode())
            log.flush()
            try:
                proc = subprocess.Popen(
                    cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True, preexec_fn=_die_with_parent, env=self._env(),
                )
            except FileNotFoundError:
                hint = " (install the extra: pip install 'gridbench[vllm]')" if self.spec.engine == "vllm" else ""
                raise ServerStartError(f"{self.label}: {cmd[0]} not found on this node{hint}") from None
        with self._lock:
            self.proc = proc
        self._wait_ready(proc, t0)
        with self._lock:
            if not first:
                self.generation += 1
            self.state = "ready"
            self.start_s.append(round(time.monotonic() - t0, 3))

    def _wait_ready(self, proc: subprocess.Popen, t0: float) -> None:
        deadline = t0 + self.spec.startup_timeout_s
        while True:
            code = proc.poll()
            if code is not None:
                raise ServerStartError(
                    f"{self.label}: server process exited with code {code} while starting "
                    f"({self.log_path.name}); log tail:\n{log_tail(self.log_path)}"
                )
            if self._stop.is_set():
                raise ServerStartError(f"{self.label}: stopped while starting")
            if time.monotonic() > deadline:
                self._kill_group()
                raise ServerStartError(
                    f"{self.label}: not ready after startup_timeout_s={self.spec.startup_timeout_s:g} "
                    f"({self.log_path.name}); log tail:\n{log_tail(self.log_path)}"
                )
            if self._models_listed(timeout=5.0) and self._one_token():
                return
            time.sleep(0.5)

    def _models_listed(self, timeout: float) -> bool:
        # here, not at the top: every episode actor imports this module too
        from orchestrator.preflight import ListingError, openai_listing

        try:
            return self.served in openai_listing(self.url, None, timeout, connect=timeout)
        except ListingError:
            return False

    def _one_token(self) -> bool:
        import httpx

        body = {
            "model": self.served, "max_tokens": 1, "temperature": 0,
            "messages": [{"role": "user", "content": "Say OK."}],
        }
        try:
            r = httpx.post(f"{self.url}/chat/completions", json=body, timeout=120.0)
            return r.status_code == 200 and bool(r.json().get("choices"))
        except (httpx.HTTPError, ValueError, AttributeError):
            return False

    def _command(self) -> list[str]:
        if self.spec.engine == "vllm":
            # vLLM serves the repository the model string names (its revision is vLLM's choice)
            self.weights = Weights(self.served).to_dict()
            return vllm_command(self.model, self.spec, host=self.host, port=self.port)
        if self._llama is None:  # once per replica: a restart serves the same file
            try:
                self._llama = llama_cpp_weights(self.spec, start=True)
            except FileNotFoundError as err:
                raise ServerStartError(f"{self.label}: {err}") from None
            self.weights = self._llama[1].to_dict()
        path, _, chat_format = self._llama
        return llama_cpp_command(self.model, self.spec, model_path=path, host=self.host, port=self.port,
                                 chat_format=chat_format)

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        # the engine is a plain process on this node, not a client of the sweep's Ray cluster
        env.pop("RAY_ADDRESS", None)
        # the server answers on its own port; a proxy set for the driver must not capture it
        env["NO_PROXY"] = env["no_proxy"] = ",".join(filter(None, [env.get("NO_PROXY", ""), self.host]))
        return env

    def _kill_group(self) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except ProcessLookupError:
            pass

    def _describe(self, err: Exception) -> str:
        return str(err) if isinstance(err, ServerStartError) else f"{self.label}: {type(err).__name__}: {err}"

    def _set(self, **values: Any) -> None:
        with self._lock:
            for k, v in values.items():
                setattr(self, k, v)

    def _note(self, line: str) -> None:
        with open(self.log_path, "ab") as log:
            log.write(f"=== gridbench: {self.label}: {line}\n".encode())


class _ModelServerActor(ModelServerProcess):
    """The Ray face: the same object plus where it runs."""

    def node(self) -> dict[str, str]:
        return {"node_id": ray.get_runtime_context().get_node_id(), "ip": ray.util.get_node_ip_address()}

# threaded, so status() answers while start() is still waiting for the server (Ray's typing of
# ray.remote(...) leaves out the actor options)
ModelServer = ray.remote(max_concurrency=4, max_restarts=0)(_ModelServerActor)  # type: ignore[call-overload]
