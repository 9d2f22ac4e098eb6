"""``gridbench`` that SIGKILLs itself right before its Nth write, move or delete in a run's store:
``python kill_store.py N ARGS...``. With N = 0 it is not killed and prints each operation to
stderr (``op <kind> <path>``), so a test can count them first and then kill at each one.
The rest is ``gridbench``'s command line. Timing-free: the kill lands exactly before that step.
"""

from __future__ import annotations

import os
import signal
import sys

from traces._store import LocalStore, ObjectStore

OPS = ("put", "open_write", "move", "delete")


def main() -> None:
    target, argv = int(sys.argv[1]), sys.argv[2:]
    seen = [0]
    for cls in (LocalStore, ObjectStore):
        for op in OPS:
            real = getattr(cls, op)

            def wrapped(self, *args, _real=real, _op=op, **kwargs):
                seen[0] += 1
                if seen[0] == target:
                    os.kill(os.getpid(), signal.SIGKILL)
                if not target:
                    print(f"op {_op} {args[0]}", file=sys.stderr, flush=True)
                return _real(self, *args, **kwargs)

            setattr(cls, op, wrapped)
    from app.cli import main as cli_main

    cli_main(argv)


if __name__ == "__main__":
    main()
