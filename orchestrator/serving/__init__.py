"""Self-hosted model servers: vLLM on GPU nodes, llama.cpp on CPU, as Ray actors.

``spec`` (the ``serve:`` mapping of a sweep model entry) imports neither Ray nor any engine, so
sweep validation stays light; the actor and the pool import Ray.
"""

from orchestrator.serving.spec import ServeSpec, parse_serve

__all__ = ["ServeSpec", "parse_serve"]
