"""Who runs what where: episodes, sweeps, Ray actors, model servers, traces, and the CLI.

The only package that imports Ray.
"""
