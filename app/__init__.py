"""The user's surfaces: the ``gridbench`` command (``cli``), its commands (``commands/``), the
progress bar of long work, and the viewer and human-play pages (``web/``). The one layer that
sees every package: it runs sweeps through ``orchestrator``, episodes through ``episodes`` and
the report through ``analysis``; nothing imports it.
"""
