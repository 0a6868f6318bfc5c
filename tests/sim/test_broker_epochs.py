"""KIP-903 in the simulator: what a follower's previous incarnation said cannot put it back in the ISR.

A follower that crashed lost its unflushed tail and registered again under a
new broker epoch. A fetch its previous incarnation sent while it was caught up
reaches the leader late, so the leader takes it as caught up and proposes it
for the ISR with the broker epoch of that incarnation. The controller (the core
rule the real one runs) refuses; the follower rejoins only once its new
incarnation has fetched everything again.
"""

from dataclasses import replace

from replog.core.errors import ErrorCode
from replog.core.messages import ACKS_ALL

from .network import NetworkFaults
from .simulation import SimConfig, Simulation
from .wire import Fetch

WAIT_MS = 10_000
SETTLE_MS = 20_000
LEADER, STEADY, RESTARTED = 0, 1, 2
RECORDS = 20


class HoldOneFetch:
    """Stands at a broker's address and keeps back the first fetch `follower` sends from `offset` on,
    handing everything else to the broker."""

    def __init__(self, node, follower: int, offset: int) -> None:
        self.node, self.follower, self.offset = node, follower, offset
        self.held: Fetch | None = None

    @property
    def up(self) -> bool:
        return self.node.up

    def receive(self, source, message) -> None:
        if (self.held is None and source == self.follower and isinstance(message, Fetch)
                and message.request.fetch_offset >= self.offset):
            self.held = message
            return
        self.node.receive(source, message)


def cluster() -> Simulation:
    """Three brokers; broker 2 never flushes, so a crash takes its whole log. Small fetches make its
    new incarnation catch up over many rounds."""
    base = SimConfig()
    config = SimConfig(brokers=3, min_insync_replicas=2, flush_interval_ms=(0, 0, 60_000), producers=0,
                       consumers=0, network=NetworkFaults(delay_ms_min=1, delay_ms_max=5),
                       replica=replace(base.replica, replica_fetch_bytes_max=400))
    sim = Simulation(903, config)
    assert sim.run_until(lambda: sim.leader_node() is not None, WAIT_MS)
    assert sim.controller.state.leader == LEADER
    return sim


def test_a_restarted_follower_is_refused_on_a_fetch_from_its_previous_incarnation_and_rejoins_once_caught_up():
    sim = cluster()
    producer = sim.add_producer(automatic=False)
    for n in range(RECORDS):
        producer.send(b"m%d" % n, ACKS_ALL)
        assert sim.run_until(lambda: len(producer.acknowledged) == n + 1, WAIT_MS)
    leader, follower = sim.brokers[LEADER], sim.brokers[RESTARTED]
    end = leader.replica.log_end_offset
    assert sim.run_until(lambda: follower.replica.log_end_offset == end, WAIT_MS)

    # A fetch from the caught-up follower is held back on its way to the leader; then the follower crashes.
    hold = HoldOneFetch(leader, RESTARTED, end)
    sim.network.attach(LEADER, hold)
    assert sim.run_until(lambda: hold.held is not None, WAIT_MS)
    sim.network.attach(LEADER, leader)
    old_epoch = follower.broker_epoch
    assert hold.held.request.replica_epoch == old_epoch
    lost_before = sim.lost_batches
    sim.crash(RESTARTED)
    assert sim.lost_batches > lost_before, "the scenario's premise: the crash lost the follower's tail"
    assert sim.run_until(lambda: RESTARTED not in sim.controller.state.isr
                         and RESTARTED not in leader.replica.isr, WAIT_MS)

    # It registers again, and the held fetch arrives now: the leader proposes it with its old epoch.
    sim.restart(RESTARTED)
    new_epoch = follower.broker_epoch
    assert new_epoch > old_epoch and follower.replica.log_end_offset < end
    sim.schedule(sim.now_ms, leader.receive, RESTARTED, hold.held)
    assert sim.run_until(lambda: sim.controller.refusals, WAIT_MS)
    ((proposal, refusal),) = sim.controller.refusals
    assert [(m.broker_id, m.broker_epoch) for m in proposal.new_isr if m.broker_id == RESTARTED] == \
        [(RESTARTED, old_epoch)]
    assert refusal.error == ErrorCode.INELIGIBLE_REPLICA
    assert refusal.message == (f"broker {RESTARTED} was proposed with broker epoch {old_epoch}, but its current "
                               f"registration has broker epoch {new_epoch}")
    assert RESTARTED not in sim.controller.state.isr

    # It is back in the ISR only once its new incarnation has fetched everything again.
    assert sim.run_until(lambda: RESTARTED in sim.controller.state.isr, WAIT_MS)
    assert follower.replica.log_end_offset == leader.replica.log_end_offset == end
    assert len(sim.controller.refusals) == 1
    sim.heal_and_settle(SETTLE_MS)
    assert sim.checker.violations == []
    assert [batch.records for batch in follower.disk.log.batches] == [(b"m%d" % n,) for n in range(RECORDS)]
