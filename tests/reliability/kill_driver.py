"""``gridbench`` that SIGKILLs itself at a chosen file write: ``python kill_driver.py WHEN ARGS...``.

WHEN is ``parquet:N`` (killed after the Nth trace file was written to its temporary name, just
before its rename: the window a crash mid-write hits) or ``manifest:N`` (killed right after the
Nth manifest is in place: before the first episode). ``readonly:N`` and ``full:N`` do not kill:
right after the Nth trace file is in place, the file system mounted at ``$GB_MOUNT`` is
remounted read-only, or filled to the last byte. The rest is ``gridbench``'s command line.
Timing-free: the fault lands exactly in its window every time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path


def fill(mount: str) -> None:
    """Write one file until the file system has no byte left."""
    with open(Path(mount) / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass


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
        if kind in ("readonly", "full") and name.endswith(".parquet"):
            seen[0] += 1
            if seen[0] == target and kind == "readonly":
                subprocess.run(["mount", "-o", "remount,ro", os.environ["GB_MOUNT"]], check=True)
            elif seen[0] == target:
                fill(os.environ["GB_MOUNT"])
        if kind == "manifest" and name.endswith("manifest.json"):
            seen[0] += 1
            if seen[0] == target:
                os.kill(os.getpid(), signal.SIGKILL)
        return result

    os.replace = replace
    from app.cli import main as cli_main

    cli_main(argv)


if __name__ == "__main__":
    main()
