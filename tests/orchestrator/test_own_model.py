"""docs/own-model.md, run as written: every sweep file and every command of the page.

The page's YAML blocks are written to a fresh folder under the name their first line gives, its
bash blocks run line by line there (``gridbench`` as ``python -m app.cli``, ``export``
as the environment of the commands that follow, with a made-up key). What a test cannot reach is
pointed at a scripted server on 127.0.0.1, one per sweep file, which lists that file's model as
a real endpoint does (the run's preflight asks): a hosted model gets its ``api_base`` (the model
string, key variable and client stay), an endpoint's ``api_base`` is replaced by the server's,
and a served model's GGUF path by the bundled model's file (only its dry run is run: a CPU model
answering 50 mazes is minutes). One liberty keeps it to seconds: a ``run`` that would play the
whole set plays the page's one-maze choice instead (``--mazes``), which then shows the resume.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml

from testing.scripted_server import ScriptedServer

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "own-model.md"
FAKE_KEY = "sk-fake-own-model-guide-0123456789"
BLOCK = re.compile(r"^```(yaml|bash)\n(.*?)^```", re.M | re.S)


def blocks(kind: str) -> list[str]:
    return [body for k, body in BLOCK.findall(PAGE.read_text(encoding="utf-8")) if k == kind]


def sweep_files() -> dict[str, dict]:
    """The page's sweep files by name (the comment on each block's first line)."""
    out = {}
    for body in blocks("yaml"):
        first = body.splitlines()[0]
        assert first.startswith("# ") and first.endswith(".yaml"), first
        out[first[2:]] = yaml.safe_load(body)
    return out


def commands() -> list[list[str]]:
    return [shlex.split(line, comments=True) for body in blocks("bash") for line in body.splitlines()
            if shlex.split(line, comments=True)]


def cell(words: str, table: str) -> bool:
    """Whether ``words`` are in a table as printed, a cell's words wrapped over its rows."""
    return re.search(r"[\s│]+".join(map(re.escape, words.split())), table) is not None


def pointed_at(sweep: dict, url: str, gguf: str) -> dict:
    """The sweep with every model reachable from here: the scripted server, the bundled GGUF."""
    for m in sweep["models"]:
        if "serve" in m:
            m["serve"]["model"] = gguf
        else:
            m["api_base"] = url
    return sweep


def test_every_example_of_the_page_runs_and_prints_what_the_page_says(tmp_path):
    from orchestrator.serving.bundled import bundled_model_path

    files, lines = sweep_files(), commands()
    assert set(files) == {"my-model.yaml", "my-endpoint.yaml", "my-served.yaml"}
    assert {c[2] for c in lines if c[:2] == ["gridbench", "run"]} == set(files)  # each file is run
    one_maze = next(c[c.index("--mazes") + 1] for c in lines if "--mazes" in c)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    printed: list[tuple[list[str], subprocess.CompletedProcess]] = []
    with ExitStack() as servers:
        # one endpoint per sweep, listing its model under the name the request carries (the run's
        # preflight asks for the listing before the first episode, as a real endpoint answers it)
        srv = {name: servers.enter_context(ScriptedServer(mode="oracle", mazes=[one_maze],
                                                          model=sweep["models"][0]["model"].split("/", 1)[1]))
               for name, sweep in files.items()}
        for name, sweep in files.items():
            (tmp_path / name).write_text(yaml.safe_dump(pointed_at(sweep, srv[name].url, str(bundled_model_path()))))
        for line in lines:
            if line[0] == "export":
                variable, _ = line[1].split("=", 1)
                env[variable] = FAKE_KEY
                continue
            assert line[0] == "gridbench", line
            args = line[1:]
            if args[0] == "run" and "--dry-run" not in args and "--mazes" not in args:
                args += ["--mazes", one_maze]
            done = subprocess.run([sys.executable, "-m", "app.cli", *args], cwd=tmp_path, env=env,
                                  capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, (line, done.stderr[-3000:])
            printed.append((line, done))
        answered = sum(r.answered for server in srv.values() for r in server.chat_requests)

    def output(*words: str, without: str = "") -> subprocess.CompletedProcess:
        (found,) = [p for line, p in printed if all(w in line for w in words) and without not in line]
        return found

    # the hosted model: priced from litellm's table, one maze, then the rest without it again
    dry = output("my-model.yaml", "--dry-run").stdout
    assert cell("litellm table", dry) and "run folder: results/my-model" in dry
    first = output("my-model.yaml", "--mazes").stdout
    assert "(1 run now, 0 already complete)" in first and "unknown" not in first
    bare = [p for line, p in printed if line == ["gridbench", "run", "my-model.yaml"]]
    assert len(bare) == 1 and "(0 run now, 1 already complete)" in bare[0].stdout
    assert output("report").stdout.strip().startswith("1 episodes, 1 solved")
    assert (tmp_path / "results" / "my-model" / "report" / "report.html").is_file()
    # the endpoint without a price: unknown before and after, never $0.00
    assert cell("unknown: give the entry a price", output("my-endpoint.yaml", "--dry-run").stdout)
    run = output("my-endpoint.yaml", "--mazes")
    row = next(r for r in run.stdout.splitlines() if r.startswith("│ my-qwen ") and "default" in r)
    assert row.rstrip("│ ").endswith("unknown") and "0.00" not in row
    assert "cost unknown for my-qwen" in run.stdout and "spent unknown" in run.stderr
    # the served model: a dry run costs nothing, needs no server, and shows its command line
    served = output("my-served.yaml", "--dry-run").stdout
    assert cell("self-hosted", served) and "--model_alias my-gguf" in served
    assert f"serving {bundled_model_path().name} (sha256 " in served
    # the preflight asked each endpoint for its model before the first episode
    assert "preflight: gpt-5-mini: reachable, key accepted, model listed" in output("my-model.yaml", "--mazes").stderr
    # two episodes, each step one answered call
    assert answered == 2 * 23
