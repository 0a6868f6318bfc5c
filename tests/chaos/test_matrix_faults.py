"""The rest of the chaos matrix: brokers cut off from the network, paused processes, expired
ZooKeeper sessions, a zombie controller, diverged logs, and an unclean election.

Broker 3 runs in a network namespace of its own behind a relay (netns.py), so that it can be
cut off from its peers, ZooKeeper and clients. Topics place their replicas explicitly so that
broker 3 is the follower or the leader the scenario needs.
"""

from __future__ import annotations

import pytest

from tests.chaos import nemesis
from tests.chaos.cluster import REPLICA_LAG_TIME_MS, SESSION_TIMEOUT_S, wait_for
from tests.chaos.conftest import make_cluster
from tests.chaos.netns import PEER_KINDS
from tests.chaos.test_quick import assert_safe

pytestmark = [pytest.mark.slow, pytest.mark.chaos]

ISOLATABLE = 3
FOLLOWING = {p: [1, 2, ISOLATABLE] for p in range(3)}  # broker 3 follows every partition
LEADING = {p: [ISOLATABLE, 1, 2] for p in range(3)}  # broker 3 leads every partition
ROUNDS = 2


@pytest.fixture(scope="module")
def cluster(request):
    yield from make_cluster(request, brokers=3, isolatable=(ISOLATABLE,))


# -- the network --------------------------------------------------------------------------------


def test_a_follower_cut_off_from_everything_leaves_the_isr_and_rejoins_when_healed(
        cluster, chaos, requires_netns):
    with chaos(cluster, "follower cut off from everything (session expiry), healed",
               replica_assignment=FOLLOWING) as run:
        for _ in range(ROUNDS):
            nemesis.cut_off_follower(run, ISOLATABLE, PEER_KINDS)
    assert_safe(run.report)


def test_a_follower_cut_off_from_the_other_brokers_is_dropped_by_the_leader_and_rejoins(
        cluster, chaos, requires_netns):
    with chaos(cluster, "follower cut off from the other brokers (replica lag), healed",
               replica_assignment=FOLLOWING) as run:
        for _ in range(ROUNDS):
            nemesis.cut_off_follower(run, ISOLATABLE, frozenset({"broker"}))
    assert_safe(run.report)


def test_a_split_leader_acknowledges_no_acks_all_write_it_cannot_replicate(cluster, chaos, requires_netns):
    with chaos(cluster, "leader cut off from ZooKeeper and peers, clients still reach it",
               replica_assignment=LEADING) as run:
        for round_ in range(ROUNDS):
            nemesis.split_leader(run, ISOLATABLE)
            if round_ < ROUNDS - 1:
                nemesis.move_leadership_back(run, ISOLATABLE)
    assert_safe(run.report)


def test_diverged_logs_are_reconciled_batch_for_batch(cluster, chaos, requires_netns):
    """A split leader appends writes (acks=1 and acks=all) that its successor never sees; after the
    heal it truncates them by leader epoch and copies its successor's log."""
    with chaos(cluster, "diverged logs (split leader with acks=1 and acks=all writers), reconciled",
               replica_assignment=LEADING, acks=("all", "1")) as run:
        differences = nemesis.split_leader(run, ISOLATABLE, show_divergence=True)
    assert differences, "the logs never diverged, so nothing was reconciled:\n" + run.report.summary()
    run.note("diverged before the heal: " + "; ".join(differences))
    assert run.report.lost_all == 0, run.report.summary()
    assert not run.report.divergence, run.report.summary()
    assert not run.report.non_increasing or all("acks1" in n for n in run.report.non_increasing), \
        run.report.summary()


# -- paused processes ---------------------------------------------------------------------------


def test_a_leader_paused_within_its_session_resumes_leading(cluster, chaos):
    with chaos(cluster, "leader SIGSTOP within its session timeout") as run:
        for _ in range(ROUNDS):
            nemesis.pause_leader(run, SESSION_TIMEOUT_S * 0.5)
    assert_safe(run.report)


def test_a_leader_paused_past_its_session_is_replaced_and_follows_when_it_wakes(cluster, chaos):
    with chaos(cluster, "leader SIGSTOP past its session timeout (ZooKeeper session expiry)") as run:
        for _ in range(ROUNDS):
            nemesis.pause_leader(run, SESSION_TIMEOUT_S * 1.5 + run.rng.uniform(0, 2))
    assert_safe(run.report)


def test_a_follower_paused_past_its_session_leaves_the_isr_and_rejoins(cluster, chaos):
    with chaos(cluster, "follower SIGSTOP past its session timeout and the replica lag") as run:
        for _ in range(ROUNDS):
            nemesis.pause_follower(run, max(SESSION_TIMEOUT_S, REPLICA_LAG_TIME_MS / 1000) + 1.5)
    assert_safe(run.report)


def test_an_active_controller_paused_within_its_session_carries_on(cluster, chaos):
    with chaos(cluster, "active controller SIGSTOP within its session timeout") as run:
        for _ in range(ROUNDS):
            nemesis.pause_controller(run, SESSION_TIMEOUT_S * 0.5)
    assert_safe(run.report)


def test_a_zombie_controller_is_fenced(cluster, chaos):
    with chaos(cluster, "zombie controller (SIGSTOP past its session, a leader killed meanwhile)") as run:
        for _ in range(ROUNDS):
            nemesis.zombie_controller(run)
    assert_safe(run.report)


# -- an unclean election --------------------------------------------------------------------------


def test_an_unclean_election_loses_writes_and_the_consumer_says_so(cluster, chaos):
    """Replicas on brokers 1 and 2, unclean.leader.election.enable=true, min.insync.replicas=1: the
    follower dies, the leader takes writes alone, dies too, and the stale follower is elected.
    Acknowledged writes are lost (the checker must say so) and the consumer that read them gets
    LogTruncationError instead of skipping silently."""
    with chaos(cluster, "unclean election (min.insync.replicas=1, unclean.leader.election.enable)",
               replica_assignment={0: [1, 2]}, min_insync_replicas=1, unclean=True) as run:
        nemesis.unclean_election(run, leader=1, follower=2)
        wait_for(lambda: run.reader.history.truncations, 30, "the consumer to report the truncation")
    assert run.report.truncations_detected >= 1, run.report.summary()
    assert run.report.lost_all > 0, "the unclean election lost nothing the checker could see:\n" \
        + run.report.summary()
    assert not run.report.divergence, run.report.summary()
