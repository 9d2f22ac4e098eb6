"""A small attribution run with agents whose defects are known, made by the real ``gridbench run``
on an embedded local Ray (docs/variants.md#a-small-attribution-run).

Four of the study's mazes, chosen so that each mechanism appears: a switch-gate maze, two key-door
mazes with a decoy key nearer than the right one (two, so that the decoy's twins have an interval
over mazes), a plain maze with no mechanism. Each
runs with the attribution sweep's twins and a recolouring, played by four models, each a mode of
the scripted server: ``oracle`` and the three defects of ``testing.defects``. What each model is
built to fail is ``FAILS`` (``expected_solved``); the report's sections are checked against it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
MAZES = ["study/r1_B1_8x8_corridor_swg_0",  # switch-gate: its gate is shut until the switch is on
         "study/r1_D1_10x10_dense_wrong_ky_kr_sg_kb_0",  # key-door with a decoy key (and a switch-gate)
         "study/r1_D2_8x8_corridor_wrong_ky_inactive_sb_sg_kr_1",  # the same, and a decoy switch
         "study/r1_S4_10x10_dense_1"]  # no mechanism
VARIANTS = ["no-switches", "reskin", "no-distractors", "control-none", "mirror-tb", "recolor"]
MODELS = ("oracle", "never-toggle", "colour-blind", "mirror-blind")
RUN = "attribution-small"
# text only, no frames; room for a detour; the stall watchdog ends a loop or a `done`
PROTOCOL = {"observation": "text", "history_frames": 0, "thinking": False, "icl_example": False,
            "stall_window": 10, "step_cap_factor": 2}
SWITCH, DECOY, DECOY_2, PLAIN = (m.split("/")[1] for m in MAZES)
# what each model is built to fail: per model, the source mazes and the variant kinds ("original":
# the maze itself) whose episodes it fails; it solves every other episode. The oracle fails none.
FAILS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "oracle": (frozenset(), frozenset()),
    # every maze whose goal needs a switch: the three with a switch-gate, all but their switchless twins
    "never-toggle": (frozenset({SWITCH, DECOY, DECOY_2}),
                     frozenset({"original", "reskin", "no-distractors", "mirror", "recolor"})),
    # the decoy mazes, whatever else changes, as long as the decoy is still there
    "colour-blind": (frozenset({DECOY, DECOY_2}),
                     frozenset({"original", "no-switches", "reskin", "mirror", "recolor"})),
    # every mirror
    "mirror-blind": (frozenset({SWITCH, DECOY, DECOY_2, PLAIN}), frozenset({"mirror"})),
}


def expected_solved(model: str, source: str, kind: str) -> bool:
    """Whether ``model`` is built to solve the twin of kind ``kind`` (``original``: the maze itself)
    of the source maze ``source`` (its id)."""
    sources, kinds = FAILS[model]
    return not (source in sources and kind in kinds)


def attribution_run(out: Path, repeats: int = 1, timeout: float = 600) -> Path:
    """Runs the small attribution sweep into ``out`` and returns the run folder; the twins come from
    (and go to) the variant cache of this process's environment (``XDG_CACHE_HOME``)."""
    from orchestrator.sweep import parse_sweep
    from testing.scripted_server import ScriptedServer

    out.mkdir(parents=True, exist_ok=True)
    # the twins the run will hold, which the servers must recognise (a mirror's source among them)
    planned = parse_sweep(_sweep({m: "http://127.0.0.1:1/v1" for m in MODELS}, repeats), "attribution-small")
    with ExitStack() as stack:
        servers = {m: stack.enter_context(ScriptedServer(mode=m, mazes=planned.all_mazes, model=m)) for m in MODELS}
        path = out / f"{RUN}.yaml"
        path.write_text(yaml.safe_dump(_sweep({m: s.url for m, s in servers.items()}, repeats), sort_keys=False))
        r = subprocess.run([sys.executable, "-m", "app.cli", "run", str(path), "--out", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"})
    if r.returncode != 0:
        raise RuntimeError(f"gridbench run exited {r.returncode}: {r.stderr[-3000:]}")
    return out / RUN


def _sweep(urls: dict[str, str], repeats: int) -> dict:
    return {"name": RUN, "mazes": MAZES, "variants": VARIANTS, "repeats": repeats, "protocol": PROTOCOL,
            "models": [{"name": m, "model": f"openai/{m}", "api_base": url, "price": {"input": 0.0, "output": 0.0},
                        "params": {"timeout": 10, "retries": 1}, "max_concurrency": 4} for m, url in urls.items()]}
