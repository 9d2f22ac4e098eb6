"""Run every bench script and print one table of every performance figure and its goal.

    python bench/run_all.py [--only NAME ...] [--quick] [--timeout S]

Each script in bench/ (except this one and its results helper) runs in its own process with
``GRIDBENCH_BENCH_RESULTS`` pointing at a scratch file; the figures it records (see
``bench/bench_results.py``) are gathered into one rich table: the script, each figure, its goal,
the measured value, the ratio the goal is judged on, and whether it is met. A script that
fails or records nothing still gets a row, so a broken bench never disappears from the table.
``--quick`` passes ``--quick`` to the scripts whose argument parser has it (their small sizes,
minutes instead of an hour: ``scale.py``, ``viewer_speed.py``); the others are quick already.
``gpu_vllm_check.sh`` runs only where ``nvidia-smi`` finds a GPU; ``vllm_cli_check.py`` checks
only the vLLM versions whose throwaway environments exist (``--install`` makes them, once) and
reports the others as skipped. Exit code 1 when a goal is not met or a script failed.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from bench_results import RESULTS_ENV, read  # noqa: E402

NOT_SCRIPTS = {"run_all.py", "bench_results.py", "synthetic.py", "cli_child.py"}
QUICK_FLAG = re.compile(r"""add_argument\(\s*["']--quick["']""")


def has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        return subprocess.run([smi, "-L"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def scripts(only: list[str] | None) -> list[Path]:
    found = sorted(p for p in BENCH.glob("*.py") if p.name not in NOT_SCRIPTS)
    found += sorted(BENCH.glob("*.sh"))
    if only:
        found = [p for p in found if p.stem in only or p.name in only]
    return found


def has_quick(script: Path) -> bool:
    return script.suffix == ".py" and QUICK_FLAG.search(script.read_text(encoding="utf-8")) is not None


def machine() -> str:
    return f"{os.cpu_count()} CPUs, {platform.machine()}, {platform.python_implementation()} {platform.python_version()}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", help="script names to run (default: all)")
    ap.add_argument("--quick", action="store_true", help="the small sizes of the scripts that have them")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds each script may take")
    ap.add_argument("--quiet", action="store_true", help="hide the scripts' own output")
    args = ap.parse_args(argv)
    # piped output keeps whole rows instead of rich's 80-column fallback
    console = Console() if sys.stdout.isatty() else Console(width=160)
    gpu = has_gpu()
    rows: list[tuple[str, dict]] = []
    failed = 0
    work = Path(tempfile.mkdtemp(prefix="gridbench-bench-all-"))
    load_before = os.getloadavg()[0]
    try:
        for script in scripts(args.only):
            if script.suffix == ".sh" and not gpu:
                rows.append((script.name, {"figure": "(skipped: no GPU on this machine)", "met": None}))
                continue
            out = work / f"{script.stem}.jsonl"
            env = {**os.environ, RESULTS_ENV: str(out)}
            cmd = ["bash", str(script)] if script.suffix == ".sh" else [sys.executable, str(script)]
            if args.quick and has_quick(script):
                cmd.append("--quick")
            console.rule(f"[bold]{script.name}")
            t0 = time.monotonic()
            try:
                proc = subprocess.run(cmd, env=env, timeout=args.timeout, cwd=BENCH.parent,
                                      stdout=subprocess.DEVNULL if args.quiet else None,
                                      stderr=subprocess.DEVNULL if args.quiet else None)
                code = proc.returncode
            except subprocess.TimeoutExpired:
                code = "timeout"
            took = time.monotonic() - t0
            figures = read(out)
            for f in figures:
                rows.append((script.name, f))
            if code != 0 or not figures:
                failed += 1
                why = f"exit {code}" if code != 0 else "recorded no figure"
                rows.append((script.name, {"figure": f"(script failed: {why} after {took:.0f} s)", "met": False}))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    # other work on the machine slows wall-clock figures: the load says how far to trust them
    table = Table(title=f"gridbench performance figures ({machine()}; load average {load_before:.1f} at the "
                        f"start, {os.getloadavg()[0]:.1f} at the end)")
    for col, justify in (("script", "left"), ("figure", "left"), ("goal", "right"), ("measured", "right"),
                         ("ratio", "right"), ("met", "center")):
        table.add_column(col, justify=justify)
    unmet = 0
    for script, f in rows:
        met = f.get("met")
        unmet += met is False
        ratio = f.get("ratio")
        table.add_row(
            script, str(f.get("figure", "")), str(f.get("goal", "") or ""), str(f.get("measured", "") or ""),
            "" if ratio is None else f"{ratio:.2f}",
            "[green]yes[/]" if met else ("" if met is None else "[bold red]NO[/]"),
        )
    console.print(table)
    console.print(f"{sum(1 for _, f in rows if f.get('met'))} goals met, {unmet} not met or failed "
                  f"({failed} scripts failed)")
    return 1 if unmet else 0


if __name__ == "__main__":
    sys.exit(main())
