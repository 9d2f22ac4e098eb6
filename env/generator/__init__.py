"""Maze generation: layouts (``topology``), dependency chains (``chains``), the generator with
its retry loop (``generator``), and the pool and its stratified sets (``pool``)."""

from env.generator.chains import PATTERNS
from env.generator.generator import (
    Generated,
    GenerationError,
    GenParams,
    GenStats,
    build_candidate,
    generate,
    regenerate,
    verify,
)
from env.generator.topology import TOPOLOGIES

__all__ = [
    "PATTERNS", "TOPOLOGIES", "GenParams", "GenStats", "Generated", "GenerationError",
    "build_candidate", "generate", "regenerate", "verify",
]
