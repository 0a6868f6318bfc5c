"""The simulated controller: ZooKeeper and the active controller as one node.

It keeps the partition's registration, learns of broker sessions starting and
ending, validates AlterPartition with the pure rules of replog.core.election,
and sends LeaderAndIsr to every live replica on each change and again every
`resend_ms` (the real controller retries its requests until they arrive).
"""

from typing import TYPE_CHECKING

from replog.core.election import (
    Election,
    alter_partition,
    initial_state,
    on_broker_failure,
    on_broker_startup,
    on_controlled_shutdown,
)
from replog.core.messages import AlterPartitionResponse, PartitionState

from .wire import CONTROLLER, AlterPartition, AlterPartitionReply, LeaderAndIsr

if TYPE_CHECKING:
    from .simulation import Simulation


class ControllerNode:
    def __init__(self, sim: "Simulation", replicas: tuple[int, ...], *, unclean: bool, resend_ms: int) -> None:
        self.sim = sim
        self.up = True
        self.state: PartitionState = initial_state(replicas)
        self.live: dict[int, int] = {}
        self.unclean = unclean
        self.resend_ms = resend_ms
        self.unclean_elections = 0
        sim.schedule(resend_ms, self._resend)

    def register(self, broker: int, broker_epoch: int) -> None:
        self.live[broker] = broker_epoch
        self._commit(on_broker_startup(self.state, self.live, unclean_leader_election_enable=self.unclean))
        self._send(broker)

    def broker_failed(self, broker: int) -> None:
        self.live.pop(broker, None)
        self._commit(on_broker_failure(self.state, broker, self.live, unclean_leader_election_enable=self.unclean))

    def controlled_shutdown(self, broker: int) -> None:
        """Move leadership (and ISR membership) away from `broker` now."""
        self._commit(on_controlled_shutdown(self.state, broker, self.live))

    def receive(self, source: object, message: object) -> None:
        if not isinstance(message, AlterPartition):
            raise TypeError(f"controller got {message!r}")
        error, state = alter_partition(self.state, message.request, self.live)
        self._commit(Election(state))
        reply = AlterPartitionReply(message.proposal_id, AlterPartitionResponse(error, state), message.caller)
        self.sim.network.send(CONTROLLER, source, reply, self.sim.now_ms)

    def _commit(self, election: Election) -> None:
        if election.state == self.state:
            return
        old, self.state = self.state, election.state
        self.unclean_elections += election.unclean
        self.sim.on_controller_change(old, self.state, election.unclean)
        for broker in self.live:
            self._send(broker)

    def _send(self, broker: int) -> None:
        message = LeaderAndIsr(self.state, self.live[broker])
        self.sim.network.send(CONTROLLER, broker, message, self.sim.now_ms)

    def _resend(self) -> None:
        self.sim.schedule(self.sim.now_ms + self.resend_ms, self._resend)
        for broker in self.live:
            self._send(broker)
