"""Scripted scenarios: the failures the leader epoch design exists for, and what users see."""

from replog.core.log import MemoryBatch
from replog.core.messages import ACKS_ALL

from .network import NetworkFaults
from .simulation import SimConfig, Simulation
from .wire import CONTROLLER

SETTLE_MS = 20_000
WAIT_MS = 10_000


def scripted(brokers: int = 3, *, seed: int = 1, clean: bool = True, **overrides) -> Simulation:
    """A cluster with no background traffic and a reliable network: the test does the writing."""
    config = SimConfig(
        brokers=brokers,
        flush_interval_ms=(0,) * brokers,
        producers=0,
        consumers=0,
        network=NetworkFaults(delay_ms_min=1, delay_ms_max=5),
        **overrides,
    )
    sim = Simulation(seed, config, clean=clean)
    assert sim.run_until(lambda: sim.leader_node() is not None, WAIT_MS)
    return sim


def acknowledge(sim: Simulation, producer, payload: bytes, acks: int = ACKS_ALL) -> int:
    """Write one record and wait for the producer to hear it was acknowledged; return its offset."""
    producer.send(payload, acks)
    assert sim.run_until(lambda: any(a.payload == payload for a in producer.acknowledged), WAIT_MS), payload
    return next(a.base_offset for a in producer.acknowledged if a.payload == payload)


def log_records(sim: Simulation, broker: int) -> list[bytes]:
    return [record for batch in sim.brokers[broker].disk.log.batches for record in batch.records]


def kip_101_leader_change(*, legacy_hw_truncation: bool) -> tuple[Simulation, int]:
    """KIP-101's first scenario, with a leader change.

    Broker 0 leads; brokers 1 and 2 fetch m2 and the leader commits it, but the
    answers that would tell them so never arrive: both hold m2 with HW 1. Broker
    0 is cut off; broker 1 is elected; then broker 1 crashes (losing nothing)
    and broker 2 is elected. Returns the simulation and m2's offset.
    """
    sim = scripted(seed=101, min_insync_replicas=2, legacy_hw_truncation=legacy_hw_truncation)
    sim.checker.raise_on_violation = not legacy_hw_truncation
    producer = sim.add_producer(automatic=False)
    acknowledge(sim, producer, b"m1")
    assert sim.run_until(lambda: all(n.replica.high_watermark == 1 for n in sim.brokers.values()), WAIT_MS)
    producer.send(b"m2")
    assert sim.run_until(lambda: sim.brokers[0].replica.high_watermark == 2, WAIT_MS)
    sim.partition([0, producer.address], [1, 2, CONTROLLER])
    assert sim.run_until(lambda: any(a.payload == b"m2" for a in producer.acknowledged), WAIT_MS)
    for follower in (1, 2):
        replica = sim.brokers[follower].replica
        assert (replica.log_end_offset, replica.high_watermark) == (2, 1), "the scenario's premise"
    assert sim.run_until(lambda: sim.brokers[2].replica.leader_epoch == 1 and sim.leader_node() is not None, WAIT_MS)
    assert sim.controller.state.leader == 1
    sim.crash(1)
    assert sim.run_until(lambda: sim.controller.state.leader == 2 and sim.leader_node() is not None, WAIT_MS)
    sim.heal_and_settle(SETTLE_MS)
    return sim, next(a.base_offset for a in producer.acknowledged if a.payload == b"m2")


def test_kip_101_follower_truncating_by_epoch_keeps_the_committed_record_through_two_elections():
    sim, offset = kip_101_leader_change(legacy_hw_truncation=False)
    assert sim.checker.violations == []
    for broker in sim.brokers:
        assert log_records(sim, broker) == [b"m1", b"m2"]
    assert offset == 1


def test_kip_101_truncating_to_the_high_watermark_instead_loses_the_acknowledged_record():
    sim, offset = kip_101_leader_change(legacy_hw_truncation=True)
    assert any(f"losing the acknowledged write at {offset}" in v for v in sim.checker.violations)
    for broker in sim.brokers:
        assert b"m2" not in log_records(sim, broker)


def test_five_fast_leader_changes_converge_without_losing_an_acknowledged_write():
    # KIP-279's case: leadership moves again before followers have settled
    # with the previous leader, while producers keep writing with acks=1 and all.
    config = SimConfig(
        brokers=3,
        min_insync_replicas=1,
        flush_interval_ms=(0, 0, 0),
        producers=2,
        consumers=1,
        acks_all_ratio=0.5,
        network=NetworkFaults(delay_ms_min=1, delay_ms_max=40),
    )
    sim = Simulation(279, config)
    sim.run_for(500)
    leaders = []
    for _ in range(5):
        assert sim.run_until(
            lambda: sim.leader_node() is not None and len(sim.controller.state.isr) >= 2, WAIT_MS
        )
        leaders.append(sim.controller.state.leader)
        sim.controller.controlled_shutdown(sim.controller.state.leader)
        sim.run_for(sim.rng.randint(20, 150))
    sim.heal_and_settle(SETTLE_MS)
    assert sim.controller.state.leader_epoch >= 5
    assert len(set(leaders)) >= 2
    assert any(removed for _, _, removed in sim.checker.truncations), "no log ever diverged"
    assert sim.checker.acknowledged, "nothing was acknowledged"


def test_divergent_logs_converge_batch_for_batch():
    sim = scripted(seed=7, min_insync_replicas=2)
    old_side, new_side = sim.add_producer(automatic=False), sim.add_producer(automatic=False)
    for payload in (b"a", b"b", b"c"):
        acknowledge(sim, new_side, payload)
    # Broker 0 keeps leading on its side of a partition and takes acks=1 writes
    # no one copies; the other side elects broker 1, which commits other records.
    sim.partition([0, old_side.address], [1, 2, CONTROLLER, new_side.address])
    acknowledge(sim, old_side, b"lost-1", acks=1)
    acknowledge(sim, old_side, b"lost-2", acks=1)
    assert sim.run_until(lambda: sim.controller.state.leader == 1 and sim.leader_node() is not None, WAIT_MS)
    for payload in (b"x", b"y", b"z"):
        acknowledge(sim, new_side, payload)
    assert log_records(sim, 0)[3:] == [b"lost-1", b"lost-2"]
    assert log_records(sim, 1)[3:] == [b"x", b"y", b"z"]
    sim.heal_and_settle(SETTLE_MS)
    logs = [sim.brokers[broker].disk.log.batches for broker in sim.brokers]
    assert logs[0] == logs[1] == logs[2]
    assert log_records(sim, 0) == [b"a", b"b", b"c", b"x", b"y", b"z"]
    assert [(b.base_offset, b.leader_epoch) for b in logs[0]][3] == (3, 1)


def test_offsets_handed_out_and_read_never_go_backwards_across_failures():
    sim = Simulation(2020, SimConfig(brokers=3, producers=2, consumers=2, flush_interval_ms=(0, 100, 400)))
    sim.inject_random_faults(until_ms=8_000)
    sim.run_for(8_000)
    sim.heal_and_settle(SETTLE_MS)
    assert sim.controller.state.leader_epoch >= 2, "the run should move leadership"
    final = [batch.base_offset for batch in sim.brokers[0].disk.log.batches]
    for consumer in sim.consumers:
        assert consumer.consumed_offsets == final  # each record once, in offset order
    acknowledged_in_order = list(sim.checker.acknowledged)  # in the order leaders acknowledged them
    assert acknowledged_in_order == sorted(set(acknowledged_in_order))
    assert len(acknowledged_in_order) > 20


def test_unclean_election_truncation_is_reported_to_the_consumer_not_skipped():
    sim = scripted(2, seed=11, clean=False, min_insync_replicas=1, unclean_leader_election_enable=True)
    producer = sim.add_producer(automatic=False)
    validating, unaware = sim.add_consumer(), sim.add_consumer(validate_epochs=False)
    for payload in (b"r1", b"r2"):
        acknowledge(sim, producer, payload)
    # Broker 1 is cut off; broker 0 shrinks the ISR to itself and commits alone.
    sim.partition([1], [0, CONTROLLER, producer.address, validating.address, unaware.address])
    assert sim.run_until(lambda: sim.controller.state.isr == (0,), WAIT_MS)
    for payload in (b"r3", b"r4", b"r5"):
        acknowledge(sim, producer, payload)
    assert sim.run_until(lambda: validating.position == unaware.position == 5, WAIT_MS)
    validating.active = unaware.active = False
    # Broker 0 dies for good; broker 1 comes back and is elected though not in sync.
    sim.heal()
    sim.crash(0)
    assert sim.run_until(lambda: sim.controller.state.leader == 1 and sim.leader_node() is not None, WAIT_MS)
    assert sim.controller.unclean_elections == 1
    for payload in (b"s1", b"s2", b"s3", b"s4", b"s5"):
        acknowledge(sim, producer, payload)
    validating.active = unaware.active = True
    assert sim.run_until(lambda: validating.position == unaware.position == 7, WAIT_MS)
    # The validating consumer is told its position (5) lies past the end (2) of
    # the last epoch it read, and reads the new records from there.
    assert validating.truncations == [(5, 2)]
    assert validating.consumed_offsets == [0, 1, 2, 3, 4, 2, 3, 4, 5, 6]
    assert [validating.records[o].records[0] for o in range(2, 7)] == [b"s1", b"s2", b"s3", b"s4", b"s5"]
    # Without epochs a consumer would carry on at 5 and silently skip s1-s3.
    assert unaware.truncations == []
    assert unaware.consumed_offsets == [0, 1, 2, 3, 4, 5, 6]
    assert unaware.records[2] == MemoryBatch((b"r3",), 2, 0)
