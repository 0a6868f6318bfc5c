"""The simulated controller: ZooKeeper and the active controller as one node.

It keeps the partition's state and the live brokers' epochs, and decides with
the very functions the real controller calls (`replog.core.partition_change`,
`replog.core.isr_judgement`) over a `ClusterImage` of the moment: the reconcile
pass when a broker's session starts or ends, the AlterPartition judgement, the
controlled shutdown. It sends LeaderAndIsr to every live replica on each change,
UpdateMetadata with the live brokers to each when a broker comes or goes, and
both again every `resend_ms` (the real controller retries its requests until
they arrive).

One difference from the real controller: a simulated broker keeps running
after its controlled shutdown (the scenarios use one to move leadership at
once), so the broker is marked as shutting down for that decision only.

With several partitions, partition p's replica list is the brokers rotated by
p, so that their first leaders differ.
"""

from typing import TYPE_CHECKING

from replog.core.cluster_image import ClusterImage
from replog.core.election import initial_state
from replog.core.errors import ErrorCode
from replog.core.isr_judgement import judge_isr_proposal
from replog.core.messages import AlterPartitionRequest, AlterPartitionResponse, PartitionState
from replog.core.outcome import Outcome
from replog.core.partition_change import PartitionChange, reconcile_partition, shut_down_replica

from .broker import topic_partition
from .wire import CONTROLLER, AlterPartition, AlterPartitionReply, LeaderAndIsr, UpdateMetadata

if TYPE_CHECKING:
    from .simulation import Simulation



class ControllerNode:
    def __init__(self, sim: "Simulation", replicas: tuple[int, ...], *, unclean: bool, resend_ms: int,
                 partitions: int = 1) -> None:
        self.sim = sim
        self.up = True
        self.states: list[PartitionState] = [
            initial_state(replicas[p % len(replicas):] + replicas[:p % len(replicas)]) for p in range(partitions)]
        self.live: dict[int, int] = {}
        self.unclean = unclean
        self.resend_ms = resend_ms
        self.unclean_elections = 0
        # Every AlterPartition refused, with why: scenarios look for the refusals they provoke.
        self.refusals: list[tuple[AlterPartitionRequest, Outcome]] = []
        # The brokers the simulation starts register first; then this controller takes over.
        self.acting = False
        sim.schedule(0, self._take_over)
        sim.schedule(resend_ms, self._resend)

    @property
    def state(self) -> PartitionState:
        """Partition 0's state (the only one in a one-partition run)."""
        return self.states[0]

    def _take_over(self) -> None:
        """As the real controller on winning its election: the reconcile pass, then every live broker
        hears the partition's state."""
        self.acting = True
        self._reconcile()
        for broker in self.live:
            self._send(broker)
        self._send_live_brokers()

    def register(self, broker: int, broker_epoch: int) -> None:
        if self.live.get(broker, broker_epoch) != broker_epoch:
            # As the real controller: a new registration before the old one was seen gone
            # counts as a death first, since the broker may have lost unflushed records.
            self.broker_failed(broker)
        self.live[broker] = broker_epoch
        if self.acting:
            self._reconcile()
            self._send(broker)
            self._send_live_brokers()

    def broker_failed(self, broker: int) -> None:
        self.live.pop(broker, None)
        self._reconcile()
        if self.acting:
            self._send_live_brokers()

    def controlled_shutdown(self, broker: int) -> None:
        """Move leadership (and ISR membership) away from `broker` now."""
        image = ClusterImage(self.live, shutting_down={broker})
        for partition, state in enumerate(self.states):
            self._commit(partition, shut_down_replica(topic_partition(partition), state, broker, image))

    def receive(self, source: object, message: object) -> None:
        if not isinstance(message, AlterPartition):
            raise TypeError(f"controller got {message!r}")
        partition = message.partition
        outcome, change = judge_isr_proposal(topic_partition(partition), self.states[partition], message.request,
                                             ClusterImage(self.live))
        if outcome.error != ErrorCode.NONE:
            self.refusals.append((message.request, outcome))
        self._commit(partition, change)
        reply = AlterPartitionReply(message.proposal_id, AlterPartitionResponse(outcome.error, self.states[partition]),
                                    message.caller, partition)
        self.sim.network.send(CONTROLLER, source, reply, self.sim.now_ms)

    def _reconcile(self) -> None:
        image = ClusterImage(self.live)
        for partition, state in enumerate(self.states):
            self._commit(partition, reconcile_partition(topic_partition(partition), state, image,
                                                        unclean_allowed=self.unclean))

    def _commit(self, partition: int, change: PartitionChange | None) -> None:
        if change is None:
            return
        old, self.states[partition] = self.states[partition], change.after
        self.unclean_elections += change.unclean
        self.sim.on_controller_change(partition, old, change.after, change.unclean)
        for broker in self.live:
            self._send(broker, partition)

    def _send(self, broker: int, partition: int | None = None) -> None:
        for p in range(len(self.states)) if partition is None else (partition,):
            message = LeaderAndIsr(self.states[p], self.live[broker], p)
            self.sim.network.send(CONTROLLER, broker, message, self.sim.now_ms)

    def _send_live_brokers(self) -> None:
        live = frozenset(self.live)
        for broker, broker_epoch in self.live.items():
            self.sim.network.send(CONTROLLER, broker, UpdateMetadata(live, broker_epoch), self.sim.now_ms)

    def _resend(self) -> None:
        self.sim.schedule(self.sim.now_ms + self.resend_ms, self._resend)
        for broker in self.live:
            self._send(broker)
        if self.acting:
            self._send_live_brokers()
