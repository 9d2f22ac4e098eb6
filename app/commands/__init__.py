"""One module per command group; each exposes ``register(app)``.

``app.cli`` imports them in ``COMMAND_MODULES`` order.
"""
