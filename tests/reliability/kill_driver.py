"""``gridbench`` that SIGKILLs itself at a chosen file write: ``python kill_driver.py WHEN ARGS...``.

WHEN is ``parquet:N`` (killed after the Nth trace file was written to its temporary name, just
before its rename: the window a crash mid-write hits) or ``manifest:N`` (killed right after the
Nth manifest is in place: before the first episode). The rest is ``gridbench``'s command line.
Timing-free: the kill lands exactly in the window every time.
"""

from __future__ import annotations

import os
import signal
import sys


def main() -> None:
    when, argv = sys.argv[1], sys.argv[2:]
    kind, _, count = when.partition(":")
    target, seen = int(count), [0]
    real_replace = os.replace

    def replace(src, dst, *args, **kwargs):
        name = os.fspath(dst)
        if kind == "parquet" and name.endswith(".parquet"):
            seen[0] += 1
            if seen[0] == target:
                os.kill(os.getpid(), signal.SIGKILL)  # the temporary file is complete, not renamed
        result = real_replace(src, dst, *args, **kwargs)
        if kind == "manifest" and name.endswith("manifest.json"):
            seen[0] += 1
            if seen[0] == target:
                os.kill(os.getpid(), signal.SIGKILL)
        return result

    os.replace = replace
    from orchestrator.cli import main as cli_main

    cli_main(argv)


if __name__ == "__main__":
    main()
