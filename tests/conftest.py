"""Settings for the whole suite, made before any test module imports grpc."""

import pytest

from replog.rpc.transport import keep_grpc_out_of_forks

# The suite's process holds gRPC channels to its clusters when PySpark forks it to start a JVM.
keep_grpc_out_of_forks()


@pytest.fixture(scope="session", autouse=True)
def _stop_the_shared_zookeeper():
    """The ZooKeeper the module clusters share (tests/integration/cluster.py) goes with the session."""
    yield
    from tests.integration.cluster import SHARED_ZOOKEEPER

    SHARED_ZOOKEEPER.stop()
