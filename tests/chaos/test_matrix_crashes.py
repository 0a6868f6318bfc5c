"""The crash half of the chaos matrix: clean (SIGTERM) and hard (SIGKILL) shutdowns and bounce loops
of partition leaders and of the active controller, on five brokers and two controllers.

Given a topic of 3 partitions, replication factor 3, min.insync.replicas=2, writers of unique
values with acks=all and a live consumer: after every fault and its recovery, no acknowledged
write is lost, offsets only increase, and the replicas agree batch for batch below the HW.
Whether SIGTERM moves leaderships away first (controlled shutdown) or not, the same must hold.
"""

from __future__ import annotations

import pytest

from tests.chaos import nemesis
from tests.chaos.conftest import make_cluster
from tests.chaos.test_quick import assert_safe

pytestmark = [pytest.mark.slow, pytest.mark.chaos]

SHUTDOWN_ROUNDS = 3


@pytest.fixture(scope="module")
def cluster(request):
    yield from make_cluster(request, brokers=5)


def test_leader_clean_shutdowns(cluster, chaos):
    with chaos(cluster, "leader SIGTERM, restarted after the failover") as run:
        for _ in range(SHUTDOWN_ROUNDS):
            nemesis.crash_leader(run, "TERM")
    assert_safe(run.report)


@pytest.mark.parametrize("signal", ["TERM", "KILL"])
def test_leader_bounce_loops(cluster, chaos, signal):
    with chaos(cluster, f"leader bounced with SIG{signal}, five in a row") as run:
        nemesis.bounce(run, "broker", signal)
    assert_safe(run.report)


@pytest.mark.parametrize("signal", ["TERM", "KILL"])
def test_controller_shutdowns(cluster, chaos, signal):
    with chaos(cluster, f"active controller SIG{signal}, restarted after the failover") as run:
        for _ in range(SHUTDOWN_ROUNDS):
            nemesis.crash_controller(run, signal)
    assert_safe(run.report)


@pytest.mark.parametrize("signal", ["TERM", "KILL"])
def test_controller_bounce_loops(cluster, chaos, signal):
    with chaos(cluster, f"active controller bounced with SIG{signal}, five in a row") as run:
        nemesis.bounce(run, "controller", signal)
    assert_safe(run.report)
