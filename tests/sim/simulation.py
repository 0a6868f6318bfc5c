"""A seeded, single-threaded simulation of a cluster serving one topic (one partition unless told).

Several brokers' cores, the controller, producers and consumers exchange
messages over a `Network` that drops, delays, reorders, duplicates and
partitions; brokers crash (losing unflushed records) and restart. One
`random.Random(seed)` makes every choice and a heap of timed events orders
them, so a seed replays exactly. After every event the `Checker` looks at
every live replica (in the manner of Kafka's RaftEventSimulationTest).

With `SimConfig.partitions` > 1 every broker hosts a replica of each partition
and the controller keeps each one's state; idempotent and transactional
producers, a transaction coordinator and read_committed consumers join in
(tests/sim/txn.py; their invariants in tests/sim/txn_invariants.py).

Replay a failing seed with `pytest tests/sim -k seed --sim-seed N` (or
REPLOG_SIM_SEED=N); see docs/REPLICATION.md.
"""

import heapq
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from random import Random
from typing import Any

from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.messages import (
    DELETE_TO_HIGH_WATERMARK,
    NO_LEADER,
    AlterPartitionRequest,
    CompleteDeleteRecords,
    DeleteRecordsRequest,
    PartitionState,
)
from replog.core.replica import Role

from .broker import BrokerNode
from .clients import Consumer, Producer
from .controller import ControllerNode
from .invariants import Checker
from .network import Network, NetworkFaults
from .txn import IdempotentProducer, ProducerIdCounter, TransactionalProducer, TxnCoordinatorNode
from .txn_invariants import TxnChecker
from .wire import CONTROLLER, TXN_COORDINATOR, Produce, TxnCall, VerifyTxn

TRACE_EVENTS_MAX = 60


class SimulationFailed(AssertionError):
    pass


@dataclass(frozen=True)
class SimConfig:
    brokers: int = 3
    min_insync_replicas: int = 2
    unclean_leader_election_enable: bool = False
    tick_ms: int = 50
    session_timeout_ms: int = 1_500
    controller_resend_ms: int = 500
    # 0 flushes after every append (flush.messages=1); otherwise every so often.
    flush_interval_ms: tuple[int, ...] = (0, 0, 0)
    producers: int = 2
    consumers: int = 1
    produce_interval_ms: int = 20
    acks_all_ratio: float = 0.8
    request_timeout_ms: int = 1_000
    network: NetworkFaults = NetworkFaults()
    legacy_hw_truncation: bool = False
    partitions: int = 1
    # Idempotent producers (acks=all, producer ids, sequences, five batches in flight per partition).
    idempotent_producers: int = 0
    # Transactional producers, each with its own transactional id, and the coordinator they use.
    transactional_producers: int = 0
    transaction_timeout_ms: int = 3_000
    # One read_committed consumer per partition.
    read_committed: bool = False
    # Transactions v2 (KIP-890 part 2): producers send no AddPartitionsToTxn; the leaders add their partitions.
    leader_adds: bool = False
    # An administrator deleting records (DeleteRecords) at random offsets now and then, during the faults.
    delete_records: bool = False
    replica: ReplicaConfig = field(
        default_factory=lambda: ReplicaConfig(
            replica_lag_time_ms_max=1_000,
            replica_fetch_wait_ms_max=200,
            replica_fetch_backoff_ms=100,
            replica_fetch_timeout_ms=500,
            alter_partition_retry_ms=300,
        )
    )

    @classmethod
    def random_transactions(cls, rng: Random) -> "SimConfig":
        """A run of idempotent and transactional producers over a few partitions, read_committed consumers,
        and a network that also holds back some writes, markers and coordinator calls for seconds."""
        brokers = rng.randint(3, 4)
        config = cls(
            brokers=brokers,
            min_insync_replicas=rng.choice((1, 2, 2)),
            flush_interval_ms=tuple(rng.choice((0, 0, 100, 400)) for _ in range(brokers)),
            producers=0,
            consumers=0,
            partitions=rng.randint(2, 4),
            idempotent_producers=rng.randint(0, 2),
            transactional_producers=rng.randint(1, 3),
            transaction_timeout_ms=rng.choice((1_500, 3_000)),
            read_committed=True,
            network=NetworkFaults(
                drop_rate=rng.choice((0.0, 0.01, 0.03)),
                duplicate_rate=rng.choice((0.0, 0.01, 0.03)),
                delay_ms_min=1,
                delay_ms_max=rng.choice((5, 20, 60)),
                long_delay_rate=rng.choice((0.0, 0.01, 0.03)),
                long_delay_ms_max=rng.choice((1_000, 4_000)),
            ),
            leader_adds=rng.random() < 0.5,
        )
        if config.leader_adds and rng.random() < 0.5:
            # Leaders add a version 2 producer's partitions whatever transaction.partition.verification.enable says.
            config = replace(config, replica=replace(config.replica, transaction_partition_verification_enable=0))
        return config

    @classmethod
    def random(cls, rng: Random) -> "SimConfig":
        brokers = rng.randint(3, 5)
        return cls(
            brokers=brokers,
            min_insync_replicas=rng.choice((1, 2, 2)),
            flush_interval_ms=tuple(rng.choice((0, 100, 400, 1_000)) for _ in range(brokers)),
            producers=rng.randint(1, 3),
            consumers=rng.randint(1, 2),
            acks_all_ratio=rng.choice((0.5, 0.8, 1.0)),
            # Small fetches make a returning follower catch up over many rounds.
            replica=replace(cls().replica, replica_fetch_bytes_max=rng.choice((400, 2_000, 1_048_576))),
            network=NetworkFaults(
                drop_rate=rng.choice((0.0, 0.01, 0.05)),
                duplicate_rate=rng.choice((0.0, 0.01, 0.05)),
                delay_ms_min=1,
                delay_ms_max=rng.choice((5, 20, 60)),
            ),
        )


class Simulation:
    def __init__(self, seed: int, config: SimConfig | None = None, *, clean: bool = True,
                 replay: str = "pytest tests/sim -k 'test_seed' --sim-seed {seed}") -> None:
        self.seed = seed
        self.replay = replay.format(seed=seed)
        self.rng = Random(seed)
        self.config = config = config or SimConfig.random(self.rng)
        self.now_ms = 0
        self.events = 0
        self._queue: list[tuple[int, int, Callable[..., None], tuple]] = []
        self._sequence = 0
        self._trace: deque[tuple[int, Callable[..., None], tuple]] = deque(maxlen=TRACE_EVENTS_MAX)
        self.tick_ms = config.tick_ms
        self.checkers = [Checker(self, partition, clean=clean) for partition in range(config.partitions)]
        self.checker = self.checkers[0]
        self.txn_checker = TxnChecker(self)
        # Long delays hold back writes, markers and the calls to the coordinator, not replication.
        self.network = Network(self.rng, self.schedule, config.network,
                               delayable=lambda message: isinstance(message, Produce | TxnCall | VerifyTxn))
        self.producer_ids = ProducerIdCounter()
        replica_config = replace(config.replica, min_insync_replicas=config.min_insync_replicas)
        broker_ids = tuple(range(config.brokers))
        self.controller = ControllerNode(
            self, broker_ids, unclean=config.unclean_leader_election_enable, resend_ms=config.controller_resend_ms,
            partitions=config.partitions,
        )
        self.network.attach(CONTROLLER, self.controller)
        self.brokers = {
            broker: BrokerNode(
                self,
                broker,
                replica_config,
                config.flush_interval_ms[broker],
                partitions=config.partitions,
                legacy_hw_truncation=config.legacy_hw_truncation,
            )
            for broker in broker_ids
        }
        for broker, node in self.brokers.items():
            self.network.attach(broker, node)
        self._next_broker_epoch = 1
        self._deletions = 0
        self.deletions_answered: list[tuple[int, CompleteDeleteRecords]] = []
        self._cut_since: dict[int, int] = {}
        self._proposals_in_flight: dict[int, list[AlterPartitionRequest]] = {p: [] for p in range(config.partitions)}
        self.faults_active = False
        self.lost_batches = 0
        for broker in broker_ids:
            self._register(broker)
        self.producers: list[Producer] = []
        self.consumers: list[Consumer] = []
        self.idempotent_producers: list[IdempotentProducer] = []
        self.transactional_producers: list[TransactionalProducer] = []
        self.coordinator: TxnCoordinatorNode | None = None
        for _ in range(config.producers):
            self.add_producer()
        for _ in range(config.consumers):
            self.add_consumer()
        if config.transactional_producers:
            self.coordinator = TxnCoordinatorNode(self, transaction_timeout_ms=config.transaction_timeout_ms)
            self.network.attach(TXN_COORDINATOR, self.coordinator)
        for _ in range(config.idempotent_producers):
            self.add_idempotent_producer()
        for _ in range(config.transactional_producers):
            self.add_transactional_producer()
        if config.read_committed:
            for partition in range(config.partitions):
                self.add_consumer(partition=partition, read_committed=True)

    @property
    def partitions(self) -> range:
        return range(self.config.partitions)

    def add_producer(self, *, automatic: bool = True, partition: int | None = None) -> Producer:
        producer = Producer(
            self,
            f"producer-{len(self.producers)}",
            acks_all_ratio=self.config.acks_all_ratio,
            interval_ms=self.config.produce_interval_ms,
            request_timeout_ms=self.config.request_timeout_ms,
            automatic=automatic,
            partition=len(self.producers) % self.config.partitions if partition is None else partition,
        )
        self.producers.append(producer)
        self.network.attach(producer.address, producer)
        return producer

    def add_consumer(self, *, validate_epochs: bool = True, partition: int | None = None,
                     read_committed: bool = False) -> Consumer:
        consumer = Consumer(
            self,
            f"consumer-{len(self.consumers)}",
            interval_ms=100,
            max_wait_ms=self.config.replica.replica_fetch_wait_ms_max,
            validate_epochs=validate_epochs,
            partition=len(self.consumers) % self.config.partitions if partition is None else partition,
            read_committed=read_committed,
        )
        self.consumers.append(consumer)
        self.network.attach(consumer.address, consumer)
        return consumer

    def add_idempotent_producer(self, *, automatic: bool = True) -> IdempotentProducer:
        producer = IdempotentProducer(self, f"idempotent-{len(self.idempotent_producers)}", automatic=automatic)
        self.idempotent_producers.append(producer)
        self.network.attach(producer.address, producer)
        return producer

    def add_transactional_producer(self, transactional_id: str | None = None, *,
                                   automatic: bool = True) -> TransactionalProducer:
        if self.coordinator is None:
            self.coordinator = TxnCoordinatorNode(self, transaction_timeout_ms=self.config.transaction_timeout_ms)
            self.network.attach(TXN_COORDINATOR, self.coordinator)
        index = len(self.transactional_producers)
        producer = TransactionalProducer(self, f"transactional-{index}", transactional_id or f"txn-{index}",
                                         automatic=automatic, leader_adds=self.config.leader_adds)
        self.transactional_producers.append(producer)
        self.network.attach(producer.address, producer)
        return producer

    def on_committed(self, partition: int, batch) -> None:
        """A batch is below some replica's high watermark for the first time (in offset order)."""
        self.txn_checker.on_committed(partition, batch)

    def leader_node(self, partition: int = 0) -> BrokerNode | None:
        """The broker the controller names leader, once it acts as that leader."""
        state = self.controller.states[partition]
        node = self.brokers.get(state.leader)
        if node is None or not node.up:
            return None
        replica = node.drivers[partition].replica
        if replica.role is not Role.LEADER or replica.leader_epoch != state.leader_epoch:
            return None
        return node

    # -- the event loop -------------------------------------------------------

    def schedule(self, at_ms: int, action: Callable[..., None], *args: Any) -> None:
        self._sequence += 1
        heapq.heappush(self._queue, (at_ms, self._sequence, action, args))

    def step(self) -> None:
        at_ms, _, action, args = heapq.heappop(self._queue)
        self.now_ms = at_ms
        self._trace.append((at_ms, action, args))
        action(*args)
        for checker in self.checkers:
            checker.after_event()
        self.events += 1

    def run_for(self, duration_ms: int) -> None:
        until_ms = self.now_ms + duration_ms
        while self._queue and self._queue[0][0] <= until_ms:
            self.step()
        self.now_ms = until_ms

    def run_until(self, condition: Callable[[], bool], timeout_ms: int) -> bool:
        until_ms = self.now_ms + timeout_ms
        while not condition():
            if not self._queue or self._queue[0][0] > until_ms:
                self.now_ms = max(self.now_ms, until_ms)
                return condition()
            self.step()
        return True

    # -- ZooKeeper sessions ---------------------------------------------------

    def _register(self, broker: int) -> None:
        """The broker's new session (a new ephemeral znode, so a new broker epoch)."""
        node = self.brokers[broker]
        if not node.up or not self.network.connected(broker, CONTROLLER):
            return  # it registers once it reaches ZooKeeper again
        node.broker_epoch = self._next_broker_epoch
        self._next_broker_epoch += 1
        self.controller.register(broker, node.broker_epoch)

    def _out_of_contact_since(self, broker: int) -> int | None:
        """Since when the broker has not reached ZooKeeper (down, or cut off), if it has not."""
        node = self.brokers[broker]
        cut_since = self._cut_since.get(broker)
        if node.up:
            return cut_since
        return node.crashed_at_ms if cut_since is None else min(cut_since, node.crashed_at_ms)

    def _expire_session(self, broker: int, broker_epoch: int) -> None:
        if self.controller.live.get(broker) != broker_epoch:
            return
        since = self._out_of_contact_since(broker)
        if since is not None and self.now_ms - since >= self.config.session_timeout_ms:
            self.controller.broker_failed(broker)

    def _network_changed(self) -> None:
        for broker, node in self.brokers.items():
            cut = not self.network.connected(broker, CONTROLLER)
            if cut and broker not in self._cut_since:
                self._cut_since[broker] = self.now_ms
                epoch = self.controller.live.get(broker)
                if epoch is not None:
                    self.schedule(self.now_ms + self.config.session_timeout_ms, self._expire_session, broker, epoch)
            elif not cut:
                self._cut_since.pop(broker, None)
                if node.up and self.controller.live.get(broker) != node.broker_epoch:
                    self._register(broker)
                elif node.up and broker not in self.controller.live:
                    self._register(broker)

    def on_controller_change(self, partition: int, old: PartitionState, new: PartitionState, unclean: bool) -> None:
        for broker in set(new.isr) - set(old.isr):
            self.brokers[broker].lossy.discard(partition)
        # Only proposals made from the current partition epoch can still be applied.
        self._proposals_in_flight[partition] = [
            request
            for request in self._proposals_in_flight[partition]
            if (request.leader_epoch, request.partition_epoch) == (new.leader_epoch, new.partition_epoch)
        ]

    # -- faults ---------------------------------------------------------------

    def on_proposal_sent(self, partition: int, request: AlterPartitionRequest) -> None:
        self._proposals_in_flight[partition].append(request)

    def can_crash(self, broker: int) -> bool:
        """Keep DESIGN §11's premise, "while one ISR member survives", for crashes that lose records.

        A crash that loses records is allowed only if another ISR member is up,
        has lost nothing, and holds its ZooKeeper session: the controller then
        learns of the lossy broker's death first and drops it from the ISR, so
        it cannot be elected. That member must also stay in every ISR that a
        proposal still in flight could install (a leader may shrink the ISR to
        itself just before it crashes). Without this premise a ZooKeeper-era
        controller can elect a replica that lost its tail (KIP-966 closes that
        gap; see docs/REPLICATION.md). A crash that loses nothing is always allowed.
        With several partitions this must hold for each partition the crash may lose records of.
        """
        node = self.brokers[broker]
        if not node.up:
            return False
        return all(self._can_lose(broker, partition) for partition in self.partitions if not node.flushed(partition))

    def _can_lose(self, broker: int, partition: int) -> bool:
        state = self.controller.states[partition]
        survivors = {member for member in state.isr if member != broker}
        for request in self._proposals_in_flight[partition]:
            if (request.leader_epoch, request.partition_epoch) == (state.leader_epoch, state.partition_epoch):
                survivors &= set(request.isr)
        return any(
            self.brokers[member].up
            and partition not in self.brokers[member].lossy
            and self.network.connected(member, CONTROLLER)
            for member in survivors
        )

    def crash(self, broker: int) -> None:
        node = self.brokers[broker]
        epoch = self.controller.live.get(broker)
        self.lost_batches += node.crash()
        if epoch is not None:
            self.schedule(self.now_ms + self.config.session_timeout_ms, self._expire_session, broker, epoch)

    def restart(self, broker: int) -> None:
        node = self.brokers[broker]
        if node.up:
            return
        if broker in self.controller.live:
            # ZooKeeper ends the old session before the new registration succeeds.
            self.controller.broker_failed(broker)
        node.restart()
        self._register(broker)

    def partition(self, *sides: list) -> None:
        self.network.partition(*sides)
        self._network_changed()

    def everyone(self) -> list:
        """Every address on the network."""
        clients = (*self.producers, *self.consumers, *self.idempotent_producers, *self.transactional_producers)
        coordinator = [TXN_COORDINATOR] if self.coordinator is not None else []
        return [*self.brokers, CONTROLLER, *coordinator, *(c.address for c in clients)]

    def isolate(self, broker: int) -> None:
        self.partition([address for address in self.everyone() if address != broker], [broker])

    def heal(self) -> None:
        self.network.heal()
        self._network_changed()

    def inject_random_faults(self, until_ms: int) -> None:
        self.faults_active = True
        self.schedule(self.now_ms + self.rng.randint(200, 800), self._random_fault, until_ms)
        if self.config.delete_records:
            self.schedule(self.now_ms + self.rng.randint(300, 900), self._random_delete_records, until_ms)

    def _random_delete_records(self, until_ms: int) -> None:
        """DeleteRecords at a random offset up to the leader's high watermark (or -1, the high watermark)."""
        if not self.faults_active or self.now_ms >= until_ms:
            return
        self.schedule(self.now_ms + self.rng.randint(300, 900), self._random_delete_records, until_ms)
        partition = self.rng.choice(list(self.partitions))
        node = self.leader_node(partition)
        if node is None:
            return
        replica = node.drivers[partition].replica
        offset = (DELETE_TO_HIGH_WATERMARK if self.rng.random() < 0.2
                  else self.rng.randint(replica.log_start_offset, replica.high_watermark))
        self._deletions += 1
        asked = offset if offset != DELETE_TO_HIGH_WATERMARK else replica.high_watermark
        node.delete_records(partition, DeleteRecordsRequest(("admin", self._deletions, asked), offset, 1_000))

    def on_records_deleted(self, node: BrokerNode, partition: int, completion: CompleteDeleteRecords) -> None:
        """A DeleteRecords answered: when it succeeded, the log of every replica in the leader's ISR or on a
        broker it knows to be alive starts at its offset."""
        self.deletions_answered.append((partition, completion))
        if completion.error != ErrorCode.NONE:
            return
        asked = completion.request_id[2]
        checker = self.checkers[partition]
        checker.deleted_before = max(checker.deleted_before, asked)
        if completion.low_watermark < asked:
            self.checkers[partition].fail(f"DeleteRecords before {asked} answered with low watermark "
                                          f"{completion.low_watermark}")
        replica = node.drivers[partition].replica
        alive = replica.alive_brokers
        for member in self.controller.states[partition].replicas:
            follower = self.brokers[member]
            counted = alive is None or member in alive or member in replica.isr
            if not counted or not follower.up:
                continue
            if follower.drivers[partition].replica.log_start_offset < asked:
                self.checkers[partition].fail(
                    f"DeleteRecords before {asked} answered while replica {member}'s log starts at "
                    f"{follower.drivers[partition].replica.log_start_offset}")

    def _random_fault(self, until_ms: int) -> None:
        if not self.faults_active or self.now_ms >= until_ms:
            return
        self.schedule(self.now_ms + self.rng.randint(200, 800), self._random_fault, until_ms)
        roll = self.rng.random()
        if roll < 0.3:
            candidates = [broker for broker in self.brokers if self.can_crash(broker)]
            if candidates:
                broker = self.rng.choice(candidates)
                self.crash(broker)
                downtime_ms = self.rng.randint(100, 2_500) + self.config.session_timeout_ms
                self.schedule(self.now_ms + downtime_ms, self.restart, broker)
        elif roll < 0.55 and not self.network.partitioned:
            self.isolate(self.rng.choice(list(self.brokers)))
            self.schedule(self.now_ms + self.rng.randint(200, 3_000), self.heal)
        elif roll < 0.7 and not self.network.partitioned:
            everyone = self.everyone()
            side = [address for address in everyone if self.rng.random() < 0.5]
            self.partition([address for address in everyone if address not in side], side)
            self.schedule(self.now_ms + self.rng.randint(200, 3_000), self.heal)
        elif roll < 0.8 and self.coordinator is not None and self.coordinator.up:
            self.coordinator.crash()
            self.schedule(self.now_ms + self.rng.randint(100, 2_000), self.coordinator.restart)
        elif roll < 0.9 and self.transactional_producers:
            self.rng.choice(self.transactional_producers).fault(self.rng)

    # -- the end of a run -----------------------------------------------------

    def converged(self) -> bool:
        if not all(self._partition_converged(partition) for partition in self.partitions):
            return False
        clients = (*self.producers, *self.idempotent_producers, *self.transactional_producers)
        if not all(client.idle for client in clients):
            return False
        return self.coordinator is None or self.coordinator.idle

    def _partition_converged(self, partition: int) -> bool:
        state = self.controller.states[partition]
        if state.leader == NO_LEADER or set(state.isr) != set(state.replicas):
            return False
        leader = self.brokers[state.leader].drivers[partition].replica
        if not self.brokers[state.leader].up or leader.role is not Role.LEADER:
            return False
        if leader.leader_epoch != state.leader_epoch or leader.isr != state.isr:
            return False
        end_offset = leader.log_end_offset
        for node in self.brokers.values():
            replica = node.drivers[partition].replica
            if not node.up or replica.log_end_offset != end_offset or replica.high_watermark != end_offset:
                return False
        # A read_committed consumer reads to the last stable offset: a transaction left open (which the
        # transaction checker reports) holds it there.
        stable_offset = leader.last_stable_offset
        return all(c.position == (stable_offset if c.read_committed else end_offset)
                   for c in self.consumers if c.partition == partition)

    def heal_and_settle(self, timeout_ms: int) -> None:
        """Stop the faults and the producers, bring everything back, and wait for
        every replica (and consumer) to reach the same log end; then check the end state."""
        self.faults_active = False
        for producer in (*self.producers, *self.idempotent_producers, *self.transactional_producers):
            producer.active = False
        for consumer in self.consumers:
            consumer.active = True
        self.heal()
        if self.coordinator is not None and not self.coordinator.up:
            self.coordinator.restart()
        for broker, node in self.brokers.items():
            if not node.up:
                # Not before ZooKeeper has ended the old session: the controller
                # learns of deaths in the order the brokers died.
                restart_ms = max(self.now_ms, node.crashed_at_ms + self.config.session_timeout_ms + 1)
                self.schedule(restart_ms, self.restart, broker)
        if not self.run_until(self.converged, timeout_ms):
            self.checker.fail(f"the cluster did not settle within {timeout_ms} ms: {self.describe()}")
        for checker in self.checkers:
            checker.final_check()
        self.txn_checker.final_check()

    # -- reporting ------------------------------------------------------------

    def describe(self) -> str:
        lines = [f"controller: live {self.controller.live}"]
        for partition in self.partitions:
            lines.append(f"partition {partition}: {self.controller.states[partition]}")
            for broker, node in self.brokers.items():
                replica = node.drivers[partition].replica
                lines.append(
                    f"  broker {broker}: up={node.up} epoch={node.broker_epoch} role={replica.role.value} "
                    f"leader_epoch={replica.leader_epoch} isr={replica.isr} LEO={replica.log_end_offset} "
                    f"HW={replica.high_watermark} LSO={replica.last_stable_offset} "
                    f"open={replica.open_transactions} "
                    f"epochs={[(e.epoch, e.start_offset) for e in replica.epoch_entries]}"
                )
        for consumer in self.consumers:
            lines.append(f"{consumer.address} (partition {consumer.partition}): position {consumer.position}, "
                         f"truncations {consumer.truncations}")
        for client in (*self.idempotent_producers, *self.transactional_producers):
            lines.append(client.describe())
        if self.coordinator is not None:
            lines.append(self.coordinator.describe())
        return "\n  ".join(lines)

    def trace(self) -> str:
        lines = []
        for at_ms, action, args in self._trace:
            owner = getattr(action, "__self__", None)
            name = f"{type(owner).__name__}.{action.__name__}" if owner is not None else action.__name__
            if owner is not None and hasattr(owner, "broker_id"):
                name += f"[{owner.broker_id}]"
            lines.append(f"{at_ms:>7} {name} {', '.join(repr(arg)[:160] for arg in args)}")
        return "\n".join(lines)

    def failure_report(self, error: BaseException) -> str:
        return (
            f"simulation seed {self.seed} failed after {self.events} events at t={self.now_ms}ms:\n"
            f"  {type(error).__name__}: {error}\n"
            f"replay: {self.replay}   (or REPLOG_SIM_SEED={self.seed})\n"
            f"config: {self.config}\n"
            f"state:\n  {self.describe()}\n"
            f"last {len(self._trace)} events:\n{self.trace()}"
        )


FAULT_PHASE_MS = 8_000
SETTLE_MS_MAX = 30_000


def run_seed(seed: int, *, fault_phase_ms: int = FAULT_PHASE_MS, transactions: bool = False,
             delete_records: bool = False) -> Simulation:
    """One randomized run: faults for a while, then heal, settle and check the end state. With
    `transactions`, a run of SimConfig.random_transactions (its seeds are another sequence); with
    `delete_records`, SimConfig.random's run with an administrator deleting records as well."""
    if delete_records:
        rng = Random(seed)
        sim = Simulation(seed, replace(SimConfig.random(rng), delete_records=True),
                         replay="pytest tests/sim -k 'test_delete_records_seed' --sim-seed {seed}")
    elif transactions:
        rng = Random(seed)
        sim = Simulation(seed, SimConfig.random_transactions(rng),
                         replay="pytest tests/sim -k 'test_txn_seed' --sim-seed {seed}")
    else:
        sim = Simulation(seed)
    try:
        sim.inject_random_faults(until_ms=fault_phase_ms)
        sim.run_for(fault_phase_ms)
        sim.heal_and_settle(SETTLE_MS_MAX)
    except Exception as error:
        raise SimulationFailed(sim.failure_report(error)) from error
    return sim
