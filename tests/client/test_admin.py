"""The admin client with no cluster to talk to."""

import pytest

from replog.client import Admin, ClusterUnreachableError


def test_an_unreachable_cluster_is_reported():
    with Admin("127.0.0.1:1", request_timeout_ms=500) as admin:
        with pytest.raises(ClusterUnreachableError, match="127.0.0.1:1"):
            admin.list_topics()
