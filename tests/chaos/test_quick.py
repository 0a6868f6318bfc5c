"""The quick subset of the chaos matrix, run by `make test`: a hard failover, a torn follower, and the
negative control that proves the checker sees a lost write when one is lost.

Each test: given a 3-broker cluster (min.insync.replicas=2 unless said), writers of
unique values with acks=all, a live consumer, and a fault; then everything healed,
the topic read from the start and every replica's log compared batch by batch.
"""

from __future__ import annotations

import pytest

from tests.chaos import nemesis
from tests.chaos.conftest import FULL, make_cluster

pytestmark = pytest.mark.slow

ISOLATABLE = 3  # the broker that runs in a network namespace of its own


@pytest.fixture(scope="module")
def cluster(request):
    yield from make_cluster(request, brokers=3, isolatable=(ISOLATABLE,))


def assert_safe(report) -> None:
    assert not report.lost, report.summary()
    assert not report.read_then_lost, report.summary()
    assert not report.non_increasing, report.summary()
    assert not report.divergence, report.summary()


def test_acks_all_writes_survive_leader_sigkills(cluster, chaos):
    with chaos(cluster, "leader SIGKILL, restarted after the failover") as run:
        for _ in range(3 if FULL else 2):
            nemesis.crash_leader(run, "KILL")
    assert run.report.acknowledged_all > 0
    assert_safe(run.report)


def test_a_follower_whose_segment_tails_were_torn_recovers_and_matches(cluster, chaos):
    with chaos(cluster, "follower SIGKILL, its segment tails torn at a random byte") as run:
        for _ in range(3 if FULL else 1):
            nemesis.tear_follower_tail(run)
    assert_safe(run.report)


def test_the_checker_sees_the_writes_a_split_leader_acknowledged_with_acks_1(cluster, chaos, requires_netns):
    """Negative control: min.insync.replicas=1 and acks=1 on a leader cut off from its peers and ZooKeeper
    but not from its clients. It acknowledges writes the rest of the cluster never sees; healing
    truncates them. The checker must report them lost, or it could not be trusted to find loss."""
    assignment = {p: [ISOLATABLE, 1, 2] for p in range(3)}
    with chaos(cluster, "negative control: split leader, min.insync.replicas=1, acks=1",
               min_insync_replicas=1, acks=("1",), replica_assignment=assignment) as run:
        nemesis.split_leader(run, ISOLATABLE)
    assert run.report.lost, "the checker found no lost write although acks=1 writes to a split leader are lost:\n" \
        + run.report.summary()
    assert not run.report.divergence, run.report.summary()
