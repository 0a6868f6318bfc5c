import pytest

from tests.client.fake_cluster import FakeCluster


@pytest.fixture
def fake():
    """An in-process cluster of 3 fake brokers, a metadata service and a controller."""
    cluster = FakeCluster(brokers=3)
    yield cluster
    cluster.stop()
