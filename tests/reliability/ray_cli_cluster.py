"""A Ray cluster started the way users start one: ``ray start --head``, then ``ray start
--address`` for each further node, all on this machine. Each node stands for a machine of its
own (its own HOME, so its own ``~/.ray``), the cluster has its own temp dir and ports, and every
process it starts carries a tag in its environment, so ``stop`` ends this cluster's processes
and nothing else. ``ray stop`` is never used: it ends every Ray on the machine, other tests'
included.

The job API (the dashboard) listens on 127.0.0.1 only. Ray itself replaces a loopback
``--node-ip-address`` with the machine's address and opens the GCS on every interface, so
start the cluster with token authentication to keep it to the test.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil

BIN = Path(sys.executable).parent  # the ray CLI and the gridbench console script of the tested venv
TAG = "GRIDBENCH_TEST_RAY_CLUSTER"  # environment variable every process of one cluster inherits
OBJECT_STORE = 100 * 1024**2  # per node: Ray would take 30% of the machine's memory in /dev/shm
NODE_PORTS = ("node-manager-port", "object-manager-port", "dashboard-agent-listen-port",
              "dashboard-agent-grpc-port", "runtime-env-agent-port", "metrics-export-port")


def free_ports(count: int) -> list[int]:
    """Ports free on 127.0.0.1 right now, all different (held open together while chosen)."""
    socks = [socket.socket() for _ in range(count)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def machine_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of a process on a machine whose HOME is ``home``: nothing of Ray's or
    Python's own settings comes from the test run (``RAY_*``, ``PYTHONPATH``), the tested venv
    comes first on PATH, and ``extra`` is added."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_") and k != "PYTHONPATH"}
    env.update(HOME=str(home), PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", RAY_USAGE_STATS_ENABLED="0")
    return {**env, **extra}


class RayCliCluster:
    """A head and nodes started with the ray CLI; ``env`` is what every node's ``ray start``
    gets beyond its own HOME (e.g. ``RAY_AUTH_MODE``)."""

    def __init__(self, temp_dir: Path, env: dict[str, str] | None = None) -> None:
        self.temp_dir = temp_dir
        self.tag = uuid.uuid4().hex
        self.env = env or {}
        self.gcs_port, self.dashboard_port, self.client_port = free_ports(3)
        self.nodes = 0

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.gcs_port}"

    @property
    def dashboard(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def ray(self, *args: str, home: Path, env: dict[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
        """The ray CLI run as a user of the machine whose HOME is ``home``; a process started from
        here (a node's daemons, a job's driver) is tagged as part of this cluster."""
        return subprocess.run([str(BIN / "ray"), *args], env=machine_env(home, **{TAG: self.tag}, **(env or {})),
                              cwd=cwd, capture_output=True, text=True, timeout=timeout)

    def _start(self, home: Path, num_cpus: int, args: list[str]) -> None:
        home.mkdir(parents=True, exist_ok=True)
        ports = dict(zip(NODE_PORTS, free_ports(len(NODE_PORTS)), strict=True))
        # a temp dir per node, as on machines of their own: nodes sharing one also share the
        # unpacked working dirs of jobs, and a node that unpacks a job's copy again (Ray deletes
        # it first) pulls the files from under the driver another node runs there
        temp = self.temp_dir / f"n{self.nodes}"
        self.nodes += 1
        done = self.ray("start", *args, "--num-cpus", str(num_cpus),
                        "--temp-dir", str(temp), "--disable-usage-stats",
                        "--object-store-memory", str(OBJECT_STORE),
                        *(f"--{k}={v}" for k, v in ports.items()), home=home, env=self.env)
        if done.returncode != 0:
            raise RuntimeError(f"ray start failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")

    def start_head(self, home: Path, num_cpus: int) -> None:
        self._start(home, num_cpus, ["--head", "--port", str(self.gcs_port), "--dashboard-host", "127.0.0.1",
                                     "--dashboard-port", str(self.dashboard_port),
                                     "--ray-client-server-port", str(self.client_port)])

    def add_node(self, home: Path, num_cpus: int) -> None:
        self._start(home, num_cpus, ["--address", self.address])

    def processes(self) -> list[psutil.Process]:
        """Every live process of this cluster: tagged, or named after its temp dir, and their children."""
        found: dict[int, psutil.Process] = {}
        for p in psutil.process_iter():
            try:
                if p.status() == psutil.STATUS_ZOMBIE:
                    continue
                if p.environ().get(TAG) == self.tag or str(self.temp_dir) in " ".join(p.cmdline()):
                    found[p.pid] = p
                    found.update((c.pid, c) for c in p.children(recursive=True))
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
        return [p for p in found.values() if _alive(p)]

    def stop(self, grace_s: float = 2.0) -> list[psutil.Process]:
        """End this cluster's processes (SIGTERM, then SIGKILL after ``grace_s``); returns any that
        are still there afterwards (none, unless something is badly wrong)."""
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            procs = self.processes()
            for p in procs:
                try:
                    p.send_signal(sig)
                except psutil.NoSuchProcess:
                    pass
            # not psutil.wait_procs: a process that is not our child stays a zombie until its own
            # parent (or init) reaps it, and waiting for it to vanish would take the whole timeout
            deadline = time.monotonic() + wait_s
            while any(_alive(p) for p in procs) and time.monotonic() < deadline:
                time.sleep(0.1)
        return self.processes()


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def wait_for(predicate, timeout: float, what: str, every: float = 0.2):
    """Poll ``predicate`` until it returns something true; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise TimeoutError(f"{what}: not within {timeout:.0f} s")
