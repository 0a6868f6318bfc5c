"""The simulated controller: ZooKeeper and the active controller as one node.

It keeps the partition's state and the live brokers' epochs, and decides with
the very functions the real controller calls (`replog.core.partition_change`,
`replog.core.isr_judgement`) over a `ClusterImage` of the moment: the reconcile
pass when a broker's session starts or ends, the AlterPartition judgement, the
controlled shutdown. It sends LeaderAndIsr to every live replica on each change
and again every `resend_ms` (the real controller retries its requests until
they arrive).

One difference from the real controller: a simulated broker keeps running
after its controlled shutdown (the scenarios use one to move leadership at
once), so the broker is marked as shutting down for that decision only.
"""

from typing import TYPE_CHECKING

from replog.core.cluster_image import ClusterImage
from replog.core.election import initial_state
from replog.core.errors import ErrorCode
from replog.core.isr_judgement import judge_isr_proposal
from replog.core.messages import AlterPartitionRequest, AlterPartitionResponse, PartitionState
from replog.core.outcome import Outcome
from replog.core.partition_change import PartitionChange, reconcile_partition, shut_down_replica
from replog.core.topic_partition import TopicPartition

from .wire import CONTROLLER, AlterPartition, AlterPartitionReply, LeaderAndIsr

if TYPE_CHECKING:
    from .simulation import Simulation

PARTITION = TopicPartition("simulated", 0)


class ControllerNode:
    def __init__(self, sim: "Simulation", replicas: tuple[int, ...], *, unclean: bool, resend_ms: int) -> None:
        self.sim = sim
        self.up = True
        self.state: PartitionState = initial_state(replicas)
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

    def _take_over(self) -> None:
        """As the real controller on winning its election: the reconcile pass, then every live broker
        hears the partition's state."""
        self.acting = True
        self._reconcile()
        for broker in self.live:
            self._send(broker)

    def register(self, broker: int, broker_epoch: int) -> None:
        if self.live.get(broker, broker_epoch) != broker_epoch:
            # As the real controller: a new registration before the old one was seen gone
            # counts as a death first, since the broker may have lost unflushed records.
            self.broker_failed(broker)
        self.live[broker] = broker_epoch
        if self.acting:
            self._reconcile()
            self._send(broker)

    def broker_failed(self, broker: int) -> None:
        self.live.pop(broker, None)
        self._reconcile()

    def controlled_shutdown(self, broker: int) -> None:
        """Move leadership (and ISR membership) away from `broker` now."""
        image = ClusterImage(self.live, shutting_down={broker})
        self._commit(shut_down_replica(PARTITION, self.state, broker, image))

    def receive(self, source: object, message: object) -> None:
        if not isinstance(message, AlterPartition):
            raise TypeError(f"controller got {message!r}")
        outcome, change = judge_isr_proposal(PARTITION, self.state, message.request, ClusterImage(self.live))
        if outcome.error != ErrorCode.NONE:
            self.refusals.append((message.request, outcome))
        self._commit(change)
        reply = AlterPartitionReply(message.proposal_id, AlterPartitionResponse(outcome.error, self.state),
                                    message.caller)
        self.sim.network.send(CONTROLLER, source, reply, self.sim.now_ms)

    def _reconcile(self) -> None:
        image = ClusterImage(self.live)
        self._commit(reconcile_partition(PARTITION, self.state, image, unclean_allowed=self.unclean))

    def _commit(self, change: PartitionChange | None) -> None:
        if change is None:
            return
        old, self.state = self.state, change.after
        self.unclean_elections += change.unclean
        self.sim.on_controller_change(old, self.state, change.unclean)
        for broker in self.live:
            self._send(broker)

    def _send(self, broker: int) -> None:
        message = LeaderAndIsr(self.state, self.live[broker])
        self.sim.network.send(CONTROLLER, broker, message, self.sim.now_ms)

    def _resend(self) -> None:
        self.sim.schedule(self.sim.now_ms + self.resend_ms, self._resend)
        for broker in self.live:
            self._send(broker)
