"""auto.leader.rebalance.enable on a real cluster: the controller's periodic check moves leadership
back to a preferred replica that returned, without anyone asking."""

import pytest

from tests.integration.cluster import wait_for
from tests.integration.test_admin_support import FAILOVER_S_MAX, partitions

pytestmark = pytest.mark.slow


def leaders(cluster, topic: str) -> dict[int, int]:
    return {p: m.leader for p, m in partitions(cluster, topic).items()}


def test_the_leader_rebalance_moves_leadership_back_by_itself(new_cluster):
    new_cluster.up_sharing_zookeeper("--brokers", "3", "--controllers", "1",
                                     "--config", "leader.imbalance.check.interval.seconds=1")
    cluster = new_cluster
    cluster("topics", "create", "balanced", "--partitions", "3", "--replication-factor", "3")
    preferred = {p: m.replicas[0] for p, m in partitions(cluster, "balanced").items()}
    cluster.signal("broker", 2, "TERM")
    wait_for(lambda: all(m.leader != 2 for m in partitions(cluster, "balanced").values()), FAILOVER_S_MAX,
             "broker 2's leadership to move")
    cluster("dev", "start", "broker", "2")
    wait_for(lambda: leaders(cluster, "balanced") == preferred, 30,
             "the rebalance to give broker 2 its preferred leadership back")
