"""A seeded, single-threaded simulation of one partition's cluster.

Several brokers' cores, the controller, producers and consumers exchange
messages over a `Network` that drops, delays, reorders, duplicates and
partitions; brokers crash (losing unflushed records) and restart. One
`random.Random(seed)` makes every choice and a heap of timed events orders
them, so a seed replays exactly. After every event the `Checker` looks at
every live replica (in the manner of Kafka's RaftEventSimulationTest).

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
from replog.core.messages import NO_LEADER, AlterPartitionRequest, PartitionState
from replog.core.replica import Role

from .broker import BrokerNode
from .clients import Consumer, Producer
from .controller import ControllerNode
from .invariants import Checker
from .network import Network, NetworkFaults
from .wire import CONTROLLER

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
    def __init__(self, seed: int, config: SimConfig | None = None, *, clean: bool = True) -> None:
        self.seed = seed
        self.rng = Random(seed)
        self.config = config = config or SimConfig.random(self.rng)
        self.now_ms = 0
        self.events = 0
        self._queue: list[tuple[int, int, Callable[..., None], tuple]] = []
        self._sequence = 0
        self._trace: deque[tuple[int, Callable[..., None], tuple]] = deque(maxlen=TRACE_EVENTS_MAX)
        self.tick_ms = config.tick_ms
        self.checker = Checker(self, clean=clean)
        self.network = Network(self.rng, self.schedule, config.network)
        replica_config = replace(config.replica, min_insync_replicas=config.min_insync_replicas)
        broker_ids = tuple(range(config.brokers))
        self.controller = ControllerNode(
            self, broker_ids, unclean=config.unclean_leader_election_enable, resend_ms=config.controller_resend_ms
        )
        self.network.attach(CONTROLLER, self.controller)
        self.brokers = {
            broker: BrokerNode(
                self,
                broker,
                replica_config,
                config.flush_interval_ms[broker],
                legacy_hw_truncation=config.legacy_hw_truncation,
            )
            for broker in broker_ids
        }
        for broker, node in self.brokers.items():
            self.network.attach(broker, node)
        self._next_broker_epoch = 1
        self._cut_since: dict[int, int] = {}
        self._proposals_in_flight: list[AlterPartitionRequest] = []
        self.faults_active = False
        self.lost_batches = 0
        for broker in broker_ids:
            self._register(broker)
        self.producers: list[Producer] = []
        self.consumers: list[Consumer] = []
        for _ in range(config.producers):
            self.add_producer()
        for _ in range(config.consumers):
            self.add_consumer()

    def add_producer(self, *, automatic: bool = True) -> Producer:
        producer = Producer(
            self,
            f"producer-{len(self.producers)}",
            acks_all_ratio=self.config.acks_all_ratio,
            interval_ms=self.config.produce_interval_ms,
            request_timeout_ms=self.config.request_timeout_ms,
            automatic=automatic,
        )
        self.producers.append(producer)
        self.network.attach(producer.address, producer)
        return producer

    def add_consumer(self, *, validate_epochs: bool = True) -> Consumer:
        consumer = Consumer(
            self,
            f"consumer-{len(self.consumers)}",
            interval_ms=100,
            max_wait_ms=self.config.replica.replica_fetch_wait_ms_max,
            validate_epochs=validate_epochs,
        )
        self.consumers.append(consumer)
        self.network.attach(consumer.address, consumer)
        return consumer

    def leader_node(self) -> BrokerNode | None:
        """The broker the controller names leader, once it acts as that leader."""
        state = self.controller.state
        node = self.brokers.get(state.leader)
        if node is None or not node.up:
            return None
        replica = node.replica
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
        self.checker.after_event()
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

    def on_controller_change(self, old: PartitionState, new: PartitionState, unclean: bool) -> None:
        for broker in set(new.isr) - set(old.isr):
            self.brokers[broker].lossy = False
        # Only proposals made from the current partition epoch can still be applied.
        self._proposals_in_flight = [
            request
            for request in self._proposals_in_flight
            if (request.leader_epoch, request.partition_epoch) == (new.leader_epoch, new.partition_epoch)
        ]

    # -- faults ---------------------------------------------------------------

    def on_proposal_sent(self, request: AlterPartitionRequest) -> None:
        self._proposals_in_flight.append(request)

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
        """
        node = self.brokers[broker]
        if not node.up:
            return False
        if node.flushed:
            return True
        state = self.controller.state
        survivors = {member for member in state.isr if member != broker}
        for request in self._proposals_in_flight:
            if (request.leader_epoch, request.partition_epoch) == (state.leader_epoch, state.partition_epoch):
                survivors &= set(request.isr)
        return any(
            self.brokers[member].up
            and not self.brokers[member].lossy
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

    def isolate(self, broker: int) -> None:
        everyone = [*self.brokers, CONTROLLER, *(c.address for c in (*self.producers, *self.consumers))]
        self.partition([address for address in everyone if address != broker], [broker])

    def heal(self) -> None:
        self.network.heal()
        self._network_changed()

    def inject_random_faults(self, until_ms: int) -> None:
        self.faults_active = True
        self.schedule(self.now_ms + self.rng.randint(200, 800), self._random_fault, until_ms)

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
            everyone = [*self.brokers, CONTROLLER, *(c.address for c in (*self.producers, *self.consumers))]
            side = [address for address in everyone if self.rng.random() < 0.5]
            self.partition([address for address in everyone if address not in side], side)
            self.schedule(self.now_ms + self.rng.randint(200, 3_000), self.heal)

    # -- the end of a run -----------------------------------------------------

    def converged(self) -> bool:
        state = self.controller.state
        if state.leader == NO_LEADER or set(state.isr) != set(state.replicas):
            return False
        leader = self.brokers[state.leader].replica
        if not self.brokers[state.leader].up or leader.role is not Role.LEADER:
            return False
        if leader.leader_epoch != state.leader_epoch or leader.isr != state.isr:
            return False
        end_offset = leader.log_end_offset
        for node in self.brokers.values():
            replica = node.replica
            if not node.up or replica.log_end_offset != end_offset or replica.high_watermark != end_offset:
                return False
        return all(p.idle for p in self.producers) and all(c.position == end_offset for c in self.consumers)

    def heal_and_settle(self, timeout_ms: int) -> None:
        """Stop the faults and the producers, bring everything back, and wait for
        every replica (and consumer) to reach the same log end; then check the end state."""
        self.faults_active = False
        for producer in self.producers:
            producer.active = False
        for consumer in self.consumers:
            consumer.active = True
        self.heal()
        for broker, node in self.brokers.items():
            if not node.up:
                # Not before ZooKeeper has ended the old session: the controller
                # learns of deaths in the order the brokers died.
                restart_ms = max(self.now_ms, node.crashed_at_ms + self.config.session_timeout_ms + 1)
                self.schedule(restart_ms, self.restart, broker)
        if not self.run_until(self.converged, timeout_ms):
            self.checker.fail(f"the cluster did not settle within {timeout_ms} ms: {self.describe()}")
        self.checker.final_check()

    # -- reporting ------------------------------------------------------------

    def describe(self) -> str:
        state = self.controller.state
        lines = [f"controller: {state}, live {self.controller.live}"]
        for broker, node in self.brokers.items():
            replica = node.replica
            lines.append(
                f"broker {broker}: up={node.up} epoch={node.broker_epoch} role={replica.role.value} "
                f"leader_epoch={replica.leader_epoch} isr={replica.isr} LEO={replica.log_end_offset} "
                f"HW={replica.high_watermark} epochs={[(e.epoch, e.start_offset) for e in replica.epoch_entries]}"
            )
        for consumer in self.consumers:
            lines.append(f"{consumer.address}: position {consumer.position}, truncations {consumer.truncations}")
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
            f"replay: pytest tests/sim -k seed --sim-seed {self.seed}   (or REPLOG_SIM_SEED={self.seed})\n"
            f"config: {self.config}\n"
            f"state:\n  {self.describe()}\n"
            f"last {len(self._trace)} events:\n{self.trace()}"
        )


FAULT_PHASE_MS = 8_000
SETTLE_MS_MAX = 30_000


def run_seed(seed: int, *, fault_phase_ms: int = FAULT_PHASE_MS) -> Simulation:
    """One randomized run: faults for a while, then heal, settle and check the end state."""
    sim = Simulation(seed)
    try:
        sim.inject_random_faults(until_ms=fault_phase_ms)
        sim.run_for(fault_phase_ms)
        sim.heal_and_settle(SETTLE_MS_MAX)
    except Exception as error:
        raise SimulationFailed(sim.failure_report(error)) from error
    return sim
