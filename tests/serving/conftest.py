"""A small local Ray cluster for the real-server tests of this folder."""

import pytest


@pytest.fixture(scope="module")
def ray_local():
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(address="local", num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024**2,
                 log_to_driver=False, configure_logging=False)
    yield ray
    if started:
        ray.shutdown()
