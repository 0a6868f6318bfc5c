"""Unclean leader elections on a real cluster: a partition whose whole ISR died stays offline, unless
its topic allows an unclean election or an operator asks for one; the metric counts each."""

import pytest

from replog.api.common.v1 import common_pb2
from replog.client import Producer
from tests.integration.cluster import wait_for
from tests.integration.test_admin_support import (
    FAILOVER_S_MAX,
    active_controller,
    bootstrap,
    controller_metric,
    partitions,
)

pytestmark = pytest.mark.slow


def test_an_isr_that_died_stays_offline_unless_unclean_election_is_allowed_or_asked_for(cluster):
    for topic in ("lossy", "forced"):
        cluster("topics", "create", topic, "--replica-assignment", "2:3")
    with Producer(bootstrap(cluster)) as producer:
        for topic in ("lossy", "forced"):
            producer.send_many(topic, [b"early-%d" % i for i in range(50)]).result(30)
    cluster.signal("broker", 3, "TERM")
    wait_for(lambda: all(list(partitions(cluster, t)[0].isr) == [2] for t in ("lossy", "forced")),
             FAILOVER_S_MAX, "broker 3 to leave the ISRs")
    with Producer(bootstrap(cluster)) as producer:
        producer.send_many("lossy", [b"late-%d" % i for i in range(50)]).result(30)  # broker 3 never gets these
    cluster.signal("broker", 2, "KILL")
    wait_for(lambda: all(partitions(cluster, t)[0].leader == -1 for t in ("lossy", "forced")), FAILOVER_S_MAX,
             "the partitions to go offline with their last ISR member")
    active = active_controller(cluster)
    handled = cluster.log_text("controller", active).count("registered: [3]")
    cluster("dev", "start", "broker", "3")
    wait_for(lambda: cluster.log_text("controller", active).count("registered: [3]") > handled, 10,
             "the controller to handle broker 3's return")

    # Unclean election off (the default): the live, out-of-sync broker 3 is not elected.
    for topic in ("lossy", "forced"):
        offline = partitions(cluster, topic)[0]
        assert offline.leader == -1 and offline.error_code == common_pb2.ERROR_CODE_LEADER_NOT_AVAILABLE
        assert list(offline.isr) == [2] and list(offline.offline_replicas) == [2]
    assert controller_metric(cluster, "replog_offline_partitions") >= 2
    unavailable = cluster("topics", "describe", "--unavailable-partitions").stdout.splitlines()
    assert "Topic: lossy  Partition: 0  Leader: none  Replicas: 2,3  Isr: 2  Offline: 2" in unavailable
    unclean = controller_metric(cluster, "replog_unclean_leader_elections_total")

    # Allowed by the topic's config: broker 3 leads at once, and the metric counts it.
    cluster("configs", "alter", "--entity-type", "topics", "--entity-name", "lossy",
            "--add-config", "unclean.leader.election.enable=true")
    elected = wait_for(lambda: (p := partitions(cluster, "lossy")[0]).leader == 3 and p, 10, "an unclean leader")
    assert list(elected.isr) == [3] and elected.error_code == common_pb2.ERROR_CODE_NONE
    assert controller_metric(cluster, "replog_unclean_leader_elections_total") == unclean + 1
    assert partitions(cluster, "forced")[0].leader == -1, "the other topic still does not allow it"

    # Asked for explicitly, whatever the topic says.
    out = cluster("leader-election", "--election-type", "unclean", "--topic", "forced", "--partition", "0").stdout
    assert out == "Successfully completed leader election (UNCLEAN) for partitions forced-0\n"
    wait_for(lambda: partitions(cluster, "forced")[0].leader == 3, 10, "the requested unclean leader")
    assert controller_metric(cluster, "replog_unclean_leader_elections_total") == unclean + 2

    cluster("dev", "start", "broker", "2")
    wait_for(lambda: all(2 in partitions(cluster, t)[0].isr for t in ("lossy", "forced")), 30,
             "broker 2 to follow the new leaders")
    assert controller_metric(cluster, "replog_offline_partitions") == 0
