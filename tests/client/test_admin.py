"""The admin client with no cluster to talk to."""

import time

import pytest

from replog.client import Admin, ClientTimeoutError, ClusterUnreachableError


def test_an_unreachable_cluster_is_reported():
    with Admin("127.0.0.1:1", request_timeout_ms=500) as admin:
        with pytest.raises(ClusterUnreachableError, match="127.0.0.1:1"):
            admin.list_topics()


def test_group_calls_ask_again_until_their_timeout_unless_told_to_give_up_at_once():
    """An Admin in a long-lived program (Spark's commit) rides out a metadata service restart; the command line
    makes its Admin say at once that nothing answers."""
    with Admin("127.0.0.1:1", request_timeout_ms=1500) as admin:
        started = time.monotonic()
        with pytest.raises(ClientTimeoutError, match="no coordinator found for group 'g' in time"):
            admin.describe_groups(["g"])
        assert time.monotonic() - started > 0.5
    with Admin("127.0.0.1:1", request_timeout_ms=1500, retry_unreachable=False) as admin:
        started = time.monotonic()
        with pytest.raises(ClusterUnreachableError, match="127.0.0.1:1"):
            admin.describe_groups(["g"])
        assert time.monotonic() - started < 0.5
