"""``python -m orchestrator.serving.selfcheck``: start the bundled model's llama.cpp server as a run
starts it and ask it for an answer of several tokens. One line either way; exit status 1 when it
does not answer.

``scripts/install.sh`` runs it last. llama.cpp is compiled at install, and a build that cannot run
on this CPU (a native build carried to another machine, or llama.cpp's own native build on some
AVX-512 CPUs) crashes only when it evaluates a prompt of more than one token: the install is where
that should show, not the first run. A server's readiness check asks for one token; this asks for
more, from a prompt of many.
"""

from __future__ import annotations

import signal
import sys
import tempfile
import time
from pathlib import Path

from orchestrator.serving.actor import ModelServerProcess, ServerStartError
from orchestrator.serving.bundled import BUNDLED_MODEL, BUNDLED_SPEC
from orchestrator.serving.spec import ServeSpec

PROMPT = "Name three colours of the rainbow, separated by commas."
MIN_TOKENS = 2


class SelfCheckError(RuntimeError):
    """The server did not answer; the message is one line with the cause."""


def _exit_cause(code: int | None) -> str:
    if code is None:
        return "it did not answer"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        crash = " (a crash: this build of llama.cpp does not run on this CPU)" if name in (
            "SIGSEGV", "SIGILL", "SIGBUS") else ""
        return f"the server process was killed by {name}{crash}"
    return f"the server process exited with code {code}"


def ask_bundled(timeout_s: float = 300.0) -> tuple[str, int, float]:
    """The bundled model's answer to ``PROMPT``, its completion tokens and the seconds it took
    (server start included); ``SelfCheckError`` with the cause when it gives none."""
    import httpx

    spec = ServeSpec(engine="llama_cpp", model=BUNDLED_SPEC, n_ctx=1024, max_restarts=0,
                     startup_timeout_s=timeout_s)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="gridbench-selfcheck-") as tmp:
        server = ModelServerProcess(name="selfcheck", replica=0, model=BUNDLED_MODEL, spec=spec,
                                    log_path=str(Path(tmp) / "server.log"))
        try:
            try:
                server.start()
            except ServerStartError as err:
                proc = server.proc
                if proc is not None and proc.poll() is not None:
                    raise SelfCheckError(f"{_exit_cause(proc.returncode)} while starting") from None
                raise SelfCheckError(str(err).splitlines()[0]) from None
            body = {
                "model": server.served, "max_tokens": 16, "temperature": 0, "seed": 0,
                "messages": [{"role": "user", "content": PROMPT}],
            }
            try:
                reply = httpx.post(f"{server.url}/chat/completions", json=body, timeout=timeout_s)
            except httpx.HTTPError as err:
                proc = server.proc
                code = proc.poll() if proc is not None else None
                cause = _exit_cause(code) if code is not None else f"{type(err).__name__}: {err}"
                raise SelfCheckError(f"{cause} while answering") from None
            if reply.status_code != 200:
                raise SelfCheckError(f"the server answered HTTP {reply.status_code}: {reply.text[:200]!r}")
            data = reply.json()
            text = (data["choices"][0]["message"].get("content") or "").strip()
            tokens = int((data.get("usage") or {}).get("completion_tokens") or 0)
            if tokens < MIN_TOKENS or not text:
                raise SelfCheckError(f"the server answered {tokens} token(s) ({text!r}); "
                                     f"{MIN_TOKENS} or more were asked for")
            return text, tokens, time.monotonic() - t0
        finally:
            server.stop()


def main() -> int:
    try:
        text, tokens, seconds = ask_bundled()
    except SelfCheckError as err:
        print(f"llama.cpp self-check failed: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - one line, whatever stopped it
        print(f"llama.cpp self-check failed: {type(err).__name__}: {err}", file=sys.stderr)
        return 1
    first = text.splitlines()[0][:60]
    print(f"llama.cpp answers: the bundled model wrote {tokens} tokens in {seconds:.1f} s ({first!r})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
