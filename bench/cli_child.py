"""``gridbench ARGV`` in this process, for a bench that measures it in a child of its own.

    python bench/cli_child.py RESULT ARGV...

Writes the command's exit code and this process's peak RSS to ``RESULT`` (JSON) and exits with
that code. Not a bench script (``bench/run_all.py`` leaves it out): ``bench/scale.py`` runs it.
It imports nothing before the command but ``app.cli``, as the ``gridbench`` script does: a
library imported first would be counted in the peak, and would be set up before the command
could choose its settings (``gridbench report`` picks Arrow's allocator before pyarrow loads).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def peak_rss() -> int:
    """This process's peak RSS in bytes (``VmHWM``: its own, not inherited across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def main(result: str, argv: list[str]) -> int:
    """Run ``gridbench ARGV``; write its exit code and the peak RSS to ``result``."""
    from app.cli import main as gridbench

    code = 0
    try:
        gridbench(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        Path(result).write_text(json.dumps({"code": code, "rss": peak_rss()}))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))
