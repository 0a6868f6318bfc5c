"""An in-memory network that drops, delays, reorders, duplicates and partitions messages.

Every choice comes from the simulation's seeded random generator, so a seed
replays the same deliveries. A message is lost if its two ends are on
different sides of a partition when it is sent or when it would arrive, or if
its receiver is down by then. A few messages may also be held back for long
(`long_delay_rate`): the delayed writes and markers transactions must survive.
"""

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from random import Random
from typing import Any, Callable, Protocol

Address = Hashable


class Receiver(Protocol):
    up: bool

    def receive(self, source: Address, message: Any) -> None: ...


@dataclass(frozen=True)
class NetworkFaults:
    drop_rate: float = 0.0
    duplicate_rate: float = 0.0
    delay_ms_min: int = 1
    delay_ms_max: int = 5
    # Of the messages the network's `delayable` picks, this share arrives up to long_delay_ms_max later.
    long_delay_rate: float = 0.0
    long_delay_ms_max: int = 0


class Network:
    def __init__(self, rng: Random, schedule: Callable[..., None], faults: NetworkFaults = NetworkFaults(),
                 delayable: Callable[[Any], bool] = lambda message: True) -> None:
        self._rng = rng
        self._schedule = schedule
        self.faults = faults
        self._delayable = delayable
        self.long_delays = 0
        self._receivers: dict[Address, Receiver] = {}
        self._side: dict[Address, int] = {}
        self.sent_count = 0
        self.delivered_count = 0

    def attach(self, address: Address, receiver: Receiver) -> None:
        self._receivers[address] = receiver

    def connected(self, a: Address, b: Address) -> bool:
        return self._side.get(a, 0) == self._side.get(b, 0)

    def partition(self, *sides: Iterable[Address]) -> None:
        """Cut the network into sides; addresses named in no side are on the first one."""
        self._side = {address: index for index, side in enumerate(sides) for address in side}

    def heal(self) -> None:
        self._side = {}

    @property
    def partitioned(self) -> bool:
        return bool(self._side) and len(set(self._side.values())) > 1

    def send(self, source: Address, destination: Address, message: Any, now_ms: int) -> None:
        self.sent_count += 1
        if not self.connected(source, destination):
            return
        faults = self.faults
        copies = 2 if faults.duplicate_rate and self._rng.random() < faults.duplicate_rate else 1
        for _ in range(copies):
            if faults.drop_rate and self._rng.random() < faults.drop_rate:
                continue
            delay_ms = self._rng.randint(faults.delay_ms_min, faults.delay_ms_max)
            if faults.long_delay_rate and self._delayable(message) and self._rng.random() < faults.long_delay_rate:
                delay_ms += self._rng.randint(0, faults.long_delay_ms_max)
                self.long_delays += 1
            self._schedule(now_ms + delay_ms, self._deliver, source, destination, message)

    def _deliver(self, source: Address, destination: Address, message: Any) -> None:
        receiver = self._receivers.get(destination)
        if receiver is None or not receiver.up or not self.connected(source, destination):
            return
        self.delivered_count += 1
        receiver.receive(source, message)
