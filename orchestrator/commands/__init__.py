"""One module per command group; each exposes ``register(app)``.

``orchestrator.cli`` imports them in ``COMMAND_MODULES`` order.
"""
