"""Fakes for gridbench's own tests and benches, kept out of the installed packages.

``testing.scripted_server`` is a real HTTP chat server on 127.0.0.1 (scripted replies, faults,
provider personas from ``testing.personas``, requests read by ``testing.reading``). The test
suite imports it through its rootdir (``pythonpath`` in pyproject's pytest settings), the bench
scripts through the repository root on their ``sys.path``; ``python -m testing.scripted_server``
runs it as a process from the repository root. ``testing.dispatch`` runs the driver's real
scheduler over fake actors on a simulated clock (no Ray).
"""
