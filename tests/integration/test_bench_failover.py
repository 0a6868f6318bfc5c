"""`replog bench failover` on a local cluster: kill the busiest leader, time until every partition leads again."""

import json

import pytest

pytestmark = pytest.mark.slow

SESSION_TIMEOUT_S = 6.0  # replog dev's zookeeper.session.timeout.ms


@pytest.mark.parametrize("signal", ["KILL", "TERM"])
def test_failover_reports_the_time_without_a_leader_and_restores_the_broker(cluster, signal):
    result = json.loads(cluster("bench", "failover", "--partitions", "12", "--signal", signal, "--json").stdout)
    assert result["kind"] == "failover" and result["signal"] == signal
    assert result["leaderships_moved"] >= 4, "the busiest of 3 brokers leads at least a third of 12"
    assert 0 < result["unavailable_s"] <= SESSION_TIMEOUT_S + 5
    if signal == "TERM":
        assert result["unavailable_s"] < SESSION_TIMEOUT_S, "a controlled shutdown does not wait for the session"
    assert result["propagation_partitions"] >= 1, "the delay from the controller's write to the stream is measured"
    assert 0 <= result["propagation_p50_ms"] <= result["propagation_p99_ms"] < result["unavailable_s"] * 1000
    broker = next(b for b in cluster.status()["brokers"] if b["id"] == result["broker"])
    assert broker["alive"], "the stopped broker is started again"
