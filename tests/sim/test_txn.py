"""Idempotence and transactions in the simulator: scripted scenarios, and rules broken on purpose.

Each scenario runs the brokers' cores, the coordinator's core and the clients
of tests/sim/txn.py over the simulated network, with the checkers of
tests/sim/txn_invariants.py watching every event. The tests that break a rule
on purpose (the leader's duplicate check, the verification of KIP-890, the
refusal of a marker of an ended transaction) show that the checkers catch
what the rule prevents.
"""

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.core.errors import ErrorCode
from replog.core.producer_state import APPEND, ProducerStates
from replog.core.txn.requests import AddPartitionsRequest
from replog.core.txn.state import TxnState

from .invariants import InvariantBroken
from .network import NetworkFaults
from .simulation import SimConfig, Simulation, SimulationFailed
from .txn import TransactionalProducer
from .wire import CONTROLLER, TXN_COORDINATOR, Produce, ProduceReply, TxnCall, VerifyTxn

pytestmark = pytest.mark.timeout(60)

WAIT_MS = 10_000
SETTLE_MS = 30_000
READY = TransactionalProducer.READY


def txn_cluster(*, seed: int = 1, partitions: int = 3, **overrides) -> Simulation:
    """Three brokers, a reliable network unless told, no background traffic: the test does the writing."""
    config = SimConfig(**{"brokers": 3, "partitions": partitions, "flush_interval_ms": (0, 0, 0), "producers": 0,
                          "consumers": 0, "read_committed": True,
                          "network": NetworkFaults(delay_ms_min=1, delay_ms_max=5), **overrides})
    sim = Simulation(seed, config)
    assert sim.run_until(lambda: all(sim.leader_node(p) for p in sim.partitions), WAIT_MS)
    return sim


def producer(sim: Simulation, transactional_id: str = "tx") -> TransactionalProducer:
    started = sim.add_transactional_producer(transactional_id, automatic=False)
    assert sim.run_until(lambda: started.state == READY, WAIT_MS)
    return started


def transaction(sim: Simulation, client: TransactionalProducer, partitions: dict[int, int], commit: bool = True):
    attempt = client.begin(partitions, commit)
    assert sim.run_until(lambda: attempt.outcome != "open" and client.state in (READY, client.RETIRED), WAIT_MS)
    return attempt


def shown(sim: Simulation, partition: int) -> list[bytes]:
    """What the read_committed consumer of a partition has been given."""
    consumer = next(c for c in sim.consumers if c.read_committed and c.partition == partition)
    return [record.value for record in consumer.visible]


class Hold:
    """Stands at an address and keeps back the messages `matches` picks, handing on everything else."""

    def __init__(self, sim: Simulation, address, matches) -> None:
        self.sim, self.address, self.matches = sim, address, matches
        self.receiver = sim.brokers[address] if address in sim.brokers else None
        self.held: list[tuple[object, object]] = []
        sim.network.attach(address, self)

    @property
    def up(self) -> bool:
        return self.receiver.up

    def receive(self, source, message) -> None:
        if self.matches(source, message):
            self.held.append((source, message))
        else:
            self.receiver.receive(source, message)

    def release(self) -> None:
        """Stop holding; deliver what was held now (late)."""
        self.sim.network.attach(self.address, self.receiver)
        for source, message in self.held:
            self.sim.schedule(self.sim.now_ms, self.receiver.receive, source, message)


# -- idempotence ----------------------------------------------------------------------------------------


def idempotent_through_leader_changes(seed: int = 5) -> Simulation:
    """An idempotent producer writes to three partitions while answers are lost and leadership moves."""
    sim = txn_cluster(seed=seed, read_committed=False, idempotent_producers=1,
                      network=NetworkFaults(drop_rate=0.05, duplicate_rate=0.03, delay_ms_max=30))
    for _ in range(4):
        sim.run_for(700)
        sim.controller.controlled_shutdown(sim.controller.states[sim.rng.randrange(3)].leader)
    sim.heal_and_settle(SETTLE_MS)
    return sim


def test_an_idempotent_producer_through_lost_answers_and_leader_changes_writes_each_record_once_in_order():
    sim = idempotent_through_leader_changes()
    acknowledged = sim.idempotent_producers[0].acknowledged
    assert len(acknowledged) > 50
    assert sum(checker.retries_answered for checker in sim.checkers) > 0, "leaders saw no retry of an appended batch"
    for partition in sim.partitions:
        records = [r for b in sim.brokers[0].disks[partition].log.batches for r in b.records]
        assert len(records) == len(set(records))
        numbers = [int(r.split(b"#")[1]) for r in records]
        assert numbers == sorted(numbers), "the producer's order is kept"


def test_without_the_leaders_duplicate_check_a_retried_batch_is_appended_twice_and_caught(monkeypatch):
    check = ProducerStates.check

    def forgetful(self, append):
        found = check(self, append)
        return APPEND if found.duplicate_of is not None else found

    monkeypatch.setattr(ProducerStates, "check", forgetful)
    with pytest.raises(InvariantBroken, match="appended twice"):
        idempotent_through_leader_changes()


# -- transactions ---------------------------------------------------------------------------------------


def test_a_committed_transaction_shows_on_every_partition_and_an_aborted_one_on_none():
    sim = txn_cluster()
    client = producer(sim)
    committed = transaction(sim, client, {0: 2, 1: 1, 2: 3})
    aborted = transaction(sim, client, {0: 1, 2: 2}, commit=False)
    again = transaction(sim, client, {1: 2})
    assert (committed.outcome, aborted.outcome, again.outcome) == ("committed", "aborted", "committed")
    assert again.producer_epoch == committed.producer_epoch + 2, "every end bumps the epoch"
    sim.heal_and_settle(SETTLE_MS)
    for partition in sim.partitions:
        wanted = committed.sent.get(partition, []) + again.sent.get(partition, [])
        assert shown(sim, partition) == wanted


def test_back_to_back_transactions_start_while_the_last_one_completes_without_a_retry():
    """Each transaction begins as soon as the last one's EndTxn is answered, while its markers are still out:
    the coordinator holds the AddPartitionsToTxn and answers it with the write that completes the last one."""
    sim = txn_cluster()
    client = producer(sim)
    attempts = [transaction(sim, client, {n % 3: 2, (n + 1) % 3: 1}) for n in range(6)]
    assert [a.outcome for a in attempts] == ["committed"] * 6
    assert sim.coordinator.adds_held == 5, "every transaction after the first began while the last one completed"
    assert sim.coordinator.adds_released == 0
    sim.heal_and_settle(SETTLE_MS)
    for partition in sim.partitions:
        assert shown(sim, partition) == [v for a in attempts for v in a.sent.get(partition, [])]


@pytest.mark.parametrize("verification", [1, 0], ids=["verification on", "verification off"])
def test_on_transactions_v2_the_leaders_add_the_partitions_and_the_producer_sends_no_add(verification):
    """KIP-890 part 2: the producer writes at once; each partition's leader adds its partition before it
    appends the transaction's first batch there, whatever transaction.partition.verification.enable says.
    The leaders of a transaction ask side by side, and while the last transaction completes: the
    coordinator holds their adds and decides them together."""
    sim = txn_cluster(leader_adds=True, replica=replace(
        SimConfig().replica, transaction_partition_verification_enable=verification))
    sent = {"producer adds": 0, "leader adds": 0}
    send = sim.network.send

    def counting(source, destination, message, now_ms):
        if isinstance(message, TxnCall) and isinstance(message.request, AddPartitionsRequest):
            sent["producer adds"] += 1
        elif isinstance(message, VerifyTxn) and message.request.leader_add:
            sent["leader adds"] += 1
        return send(source, destination, message, now_ms)

    sim.network.send = counting
    client = producer(sim)
    attempts = [transaction(sim, client, {n % 3: 2, (n + 1) % 3: 1, (n + 2) % 3: 1}) for n in range(6)]
    assert [a.outcome for a in attempts] == ["committed"] * 6
    assert sent["producer adds"] == 0 and sent["leader adds"] >= 18, sent
    assert sim.coordinator.adds_held >= 10, "adds held while the last transaction completed, or another was written"
    sim.heal_and_settle(SETTLE_MS)
    for partition in sim.partitions:
        assert shown(sim, partition) == [v for a in attempts for v in a.sent.get(partition, [])]


def test_a_next_transaction_held_longer_than_the_hold_is_told_to_retry_and_starts_once_the_marker_lands():
    """The last transaction's marker is kept from partition 0's leader for 1.5 s: the next transaction's
    AddPartitionsToTxn is held 0.5 s, answered CONCURRENT_TRANSACTIONS, asked again; once the marker lands,
    a held add is decided with COMPLETE_COMMIT and the transaction commits."""
    sim = txn_cluster()
    client = producer(sim)
    hold = Hold(sim, sim.controller.states[0].leader, lambda source, m: source == TXN_COORDINATOR
                and isinstance(m, Produce) and m.request.marker is not None)
    first = transaction(sim, client, {0: 1}, commit=True)
    assert first.outcome == "committed" and sim.coordinator.core.get("tx").state is TxnState.PREPARE_COMMIT
    second = client.begin({0: 2})
    sim.run_for(1_500)
    assert sim.coordinator.adds_released >= 2 and second.outcome == "open", "held 0.5 s at a time, then retried"
    hold.release()
    assert sim.run_until(lambda: second.outcome != "open", WAIT_MS)
    assert second.outcome == "committed"
    sim.heal_and_settle(SETTLE_MS)
    assert shown(sim, 0) == first.sent[0] + second.sent[0]


def test_a_new_instance_fences_the_old_one_whose_transaction_is_aborted():
    sim = txn_cluster()
    zombie = producer(sim)
    attempt = zombie.begin({0: 2, 1: 2})
    assert sim.run_until(lambda: zombie.state == zombie.SENDING, WAIT_MS)
    zombie.go_silent(2_000)  # paused mid-transaction (a GC, SIGSTOP)
    successor = zombie.replace()
    assert sim.run_until(lambda: successor.state == READY, WAIT_MS)
    assert successor.sequencer.producer_id == attempt.producer_id
    assert successor.sequencer.producer_epoch > attempt.producer_epoch
    newer = transaction(sim, successor, {0: 1, 1: 1})
    assert newer.outcome == "committed"
    # The old instance resumes: what it sends now is refused, and it stops for good.
    assert sim.run_until(lambda: zombie.state == zombie.RETIRED, WAIT_MS)
    assert zombie.fenced == 1 and attempt.outcome == "unknown"
    sim.heal_and_settle(SETTLE_MS)
    decision = sim.txn_checker.decisions[(attempt.producer_id, attempt.producer_epoch + 1)]
    assert not decision.commit
    for partition in (0, 1):
        assert shown(sim, partition) == newer.sent[partition]


def test_a_silent_producers_transaction_times_out_and_the_producer_aborts_and_goes_on():
    """KIP-588: the timeout aborts the transaction without fencing the producer, which learns it from the
    refusals of its old epoch, aborts, and writes the next transaction at the epoch the abort hands it."""
    sim = txn_cluster(transaction_timeout_ms=1_500)
    client = producer(sim)
    attempt = client.begin({0: 1, 2: 1})
    assert sim.run_until(lambda: client.state == client.SENDING, WAIT_MS)
    client.go_silent(3_000)
    coordinator = sim.coordinator.core
    assert sim.run_until(lambda: coordinator.get("tx").state is TxnState.COMPLETE_ABORT, WAIT_MS)
    assert sim.run_until(lambda: attempt.outcome != "open" and client.state == READY, WAIT_MS)
    assert (attempt.outcome, client.fenced) == ("aborted", 0)
    next_one = transaction(sim, client, {0: 1})
    assert next_one.outcome == "committed"
    assert (next_one.producer_id, next_one.producer_epoch) == (attempt.producer_id, attempt.producer_epoch + 1)
    sim.heal_and_settle(SETTLE_MS)
    assert not any(value in attempt.sent[0] for value in shown(sim, 0))


def test_a_write_delayed_past_the_end_of_its_transaction_is_refused():
    sim = txn_cluster()
    client = producer(sim)
    leader = sim.controller.states[1].leader
    hold = Hold(sim, leader, lambda source, m: source == client.address and isinstance(m, Produce)
                and m.partition == 1 and not hold.held)
    aborted = transaction(sim, client, {0: 1, 1: 1}, commit=False)  # its first write to 1 never arrives
    assert hold.held and aborted.outcome == "aborted"
    answers = []
    receive = client.receive
    client.receive = lambda source, message: (answers.append(message), receive(source, message))
    next_one = client.begin({1: 2})
    hold.release()  # the old write arrives in the next transaction
    assert sim.run_until(lambda: next_one.outcome == "committed", WAIT_MS)
    late = [a.completion.error for a in answers
            if isinstance(a, ProduceReply) and a.completion.request_id == hold.held[0][1].request.request_id]
    # Refused as fenced either way: by the leader itself, which knows the newer epoch from the abort
    # marker (INVALID_PRODUCER_EPOCH), or, had it not seen one yet, by the coordinator it would ask
    # before opening a transaction there (PRODUCER_FENCED).
    assert late in ([ErrorCode.INVALID_PRODUCER_EPOCH], [ErrorCode.PRODUCER_FENCED])
    sim.heal_and_settle(SETTLE_MS)
    assert shown(sim, 1) == next_one.sent[1]


def delayed_abort_marker(seed: int = 3) -> tuple[Simulation, object]:
    """The coordinator's first ABORT marker for partition 0 is held back; its retry ends the transaction;
    the held copy arrives during the producer's next transaction there, which then commits."""
    sim = txn_cluster(seed=seed)
    client = producer(sim)
    hold = Hold(sim, sim.controller.states[0].leader, lambda source, m: source == TXN_COORDINATOR
                and isinstance(m, Produce) and m.request.marker is not None and not hold.held)
    transaction(sim, client, {0: 1}, commit=False)
    core = sim.coordinator.core
    assert sim.run_until(lambda: hold.held and core.get("tx").state is TxnState.COMPLETE_ABORT, WAIT_MS)
    next_one = client.begin({0: 2})
    assert sim.run_until(lambda: client.state == client.SENDING and not client.sequencer.sending, WAIT_MS)
    hold.release()
    assert sim.run_until(lambda: next_one.outcome != "open", WAIT_MS)
    sim.heal_and_settle(SETTLE_MS)
    return sim, next_one


def test_a_marker_delayed_into_the_next_transaction_cannot_end_it():
    sim, next_one = delayed_abort_marker()
    assert next_one.outcome == "committed"
    assert shown(sim, 0) == next_one.sent[0]


def test_if_partitions_took_a_late_marker_it_would_tear_the_next_transaction_and_be_caught(monkeypatch):
    monkeypatch.setattr(ProducerStates, "check_marker", lambda self, marker: APPEND)
    with pytest.raises(InvariantBroken, match="torn transaction"):
        delayed_abort_marker()


def forgetful_client(sim: Simulation):
    """A client that leaves partition 1 out of AddPartitionsToTxn, then writes to it anyway."""
    client = producer(sim)
    client.skip_add_partitions = True
    attempt = client.begin({0: 1, 1: 1})
    assert sim.run_until(lambda: attempt.outcome != "open", WAIT_MS)
    sim.heal_and_settle(SETTLE_MS)
    return attempt


def test_a_write_to_a_partition_not_in_the_transaction_is_refused_after_verification():
    sim = txn_cluster()
    attempt = forgetful_client(sim)
    assert attempt.outcome == "aborted"
    assert [error for _, _, error in sim.checkers[1].verifications] == [ErrorCode.TRANSACTION_ABORTABLE]
    assert shown(sim, 1) == [] and sim.brokers[0].disks[1].log.batches == ()


def test_without_verification_that_write_opens_a_transaction_nothing_ends_and_is_caught(monkeypatch):
    monkeypatch.setattr(ProducerStates, "needs_verification", lambda self, append: False)
    sim = txn_cluster()
    with pytest.raises(InvariantBroken, match="was never ended"):
        forgetful_client(sim)


def test_a_coordinator_that_fails_after_deciding_sends_the_markers_once_back():
    sim = txn_cluster()
    client = producer(sim)
    attempt = client.begin({0: 1, 1: 1})
    assert sim.run_until(lambda: client.state == client.ENDING, WAIT_MS)
    sim.partition([TXN_COORDINATOR, client.address], [*sim.brokers, CONTROLLER])  # its markers go nowhere
    core = sim.coordinator.core
    assert sim.run_until(lambda: core.get("tx").state is TxnState.PREPARE_COMMIT, WAIT_MS)
    sim.coordinator.crash()
    sim.heal()
    sim.run_for(500)
    sim.coordinator.restart()
    assert sim.run_until(lambda: sim.coordinator.core.get("tx").state is TxnState.COMPLETE_COMMIT, WAIT_MS)
    assert sim.coordinator.coordinator_epoch == 1
    sim.heal_and_settle(SETTLE_MS)
    assert attempt.outcome in ("committed", "unknown")
    for partition in (0, 1):
        assert shown(sim, partition) == attempt.sent[partition]


# -- schedules chosen by Hypothesis --------------------------------------------------------------------

FAULT_PHASE_MS = 5_000
txn_faults = st.lists(
    st.tuples(
        st.integers(0, FAULT_PHASE_MS),  # when
        st.sampled_from(["crash", "isolate", "coordinator crash", "coordinator cut off", "silent", "replace"]),
        st.integers(0, 2),  # which broker or producer
        st.integers(50, 2_500),  # for how long
    ),
    max_size=8,
)


def apply_txn_fault(sim: Simulation, kind: str, target: int, duration_ms: int) -> None:
    producers = [p for p in sim.transactional_producers if not p.zombie]
    if kind == "crash":
        if sim.can_crash(target):
            sim.crash(target)
            sim.schedule(sim.now_ms + sim.config.session_timeout_ms + duration_ms, sim.restart, target)
    elif kind == "coordinator crash":
        if sim.coordinator.up:
            sim.coordinator.crash()
            sim.schedule(sim.now_ms + duration_ms, sim.coordinator.restart)
    elif kind == "silent":
        producers[target % len(producers)].go_silent(sim.config.transaction_timeout_ms + duration_ms)
    elif kind == "replace":
        producers[target % len(producers)].replace()
    elif not sim.network.partitioned:
        if kind == "isolate":
            sim.isolate(target)
        else:
            sim.partition([a for a in sim.everyone() if a != TXN_COORDINATOR], [TXN_COORDINATOR])
        sim.schedule(sim.now_ms + duration_ms, sim.heal)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 3), st.sampled_from([0, 300]), st.sampled_from([0.0, 0.03]), txn_faults, st.integers(0, 2**16))
def test_fault_schedules_keep_every_transaction_invariant(partitions, flush_ms, long_delays, schedule, rng_seed):
    config = SimConfig(brokers=3, partitions=partitions, flush_interval_ms=(flush_ms,) * 3, producers=0, consumers=0,
                       idempotent_producers=1, transactional_producers=2, transaction_timeout_ms=1_500,
                       read_committed=True,
                       network=NetworkFaults(drop_rate=0.01, duplicate_rate=0.01, delay_ms_max=20,
                                             long_delay_rate=long_delays, long_delay_ms_max=3_000))
    sim = Simulation(rng_seed, config)
    for at_ms, kind, target, duration_ms in schedule:
        sim.schedule(at_ms, apply_txn_fault, sim, kind, target, duration_ms)
    try:
        sim.run_for(FAULT_PHASE_MS)
        sim.heal_and_settle(SETTLE_MS)
    except Exception as error:
        raise SimulationFailed(sim.failure_report(error)) from error
    assert sim.txn_checker.decisions, "no transaction was decided"
