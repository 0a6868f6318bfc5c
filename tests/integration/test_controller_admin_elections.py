"""Preferred-leader elections on demand, on a real cluster: leadership moves back to the preferred
replica once it is in sync again."""

import pytest

from tests.integration.cluster import wait_for
from tests.integration.test_admin_support import FAILOVER_S_MAX, controller_metric, partitions

pytestmark = pytest.mark.slow


def leaders(cluster, topic: str) -> dict[int, int]:
    return {p: m.leader for p, m in partitions(cluster, topic).items()}


def restart_broker(cluster, broker: int, topic: str) -> None:
    """Stop the broker, wait until it has left every ISR of the topic, start it, wait until it is back in all."""
    cluster.signal("broker", broker, "TERM")
    wait_for(lambda: all(m.leader != broker and broker not in m.isr for m in partitions(cluster, topic).values()),
             FAILOVER_S_MAX, f"broker {broker} to lose its leaderships and ISR places")
    cluster("dev", "start", "broker", str(broker))
    wait_for(lambda: all(broker in m.isr for m in partitions(cluster, topic).values()), 30,
             f"broker {broker} to rejoin every ISR")


def test_a_preferred_election_moves_leadership_back_after_a_broker_restart(cluster):
    cluster("topics", "create", "prefer", "--partitions", "3", "--replication-factor", "3")
    preferred = {p: m.replicas[0] for p, m in partitions(cluster, "prefer").items()}
    assert leaders(cluster, "prefer") == preferred
    restart_broker(cluster, 1, "prefer")
    (moved,) = [p for p, broker in preferred.items() if broker == 1]
    assert leaders(cluster, "prefer")[moved] != 1, "a returning broker comes back as a follower"
    elections = controller_metric(cluster, "replog_leader_elections_total")

    out = cluster("leader-election", "--election-type", "preferred", "--all-topic-partitions").stdout
    assert f"Successfully completed leader election (PREFERRED) for partitions prefer-{moved}" in out
    assert leaders(cluster, "prefer") == preferred
    assert controller_metric(cluster, "replog_leader_elections_total") >= elections + 1

    again = cluster("leader-election", "--election-type", "preferred", "--topic", "prefer", "--partition", str(moved))
    assert again.stdout == f"Valid replica already elected for partitions prefer-{moved}\n"
    wrong = cluster("leader-election", "--election-type", "preferred", "--topic", "prefer", check=False)
    assert wrong.returncode == 1 and "--partition" in wrong.stderr and "Traceback" not in wrong.stderr
