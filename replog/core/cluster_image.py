"""The live brokers as the active controller sees them at one moment: what every controller rule decides over.

Immutable, in the manner of KRaft's ClusterImage: the controller takes one
image per event and hands it to the pure rules, so a rule never sees the
brokers change under it.
"""

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class ClusterImage:
    # Every live broker and its broker epoch (the czxid of its registration).
    broker_epochs: Mapping[int, int]
    # broker.rack of the live brokers that have one.
    racks: Mapping[int, str] = field(default_factory=dict)
    # Brokers in controlled shutdown: live (their replicas have not failed) but
    # never elected, and never let into an ISR.
    shutting_down: Collection[int] = frozenset()
    live: frozenset[int] = field(init=False)
    electable: frozenset[int] = field(init=False)  # live and not shutting down

    def __post_init__(self) -> None:
        epochs = MappingProxyType(dict(self.broker_epochs))
        object.__setattr__(self, "broker_epochs", epochs)
        object.__setattr__(self, "racks", MappingProxyType({b: r for b, r in self.racks.items() if r and b in epochs}))
        object.__setattr__(self, "shutting_down", frozenset(self.shutting_down).intersection(epochs))
        object.__setattr__(self, "live", frozenset(epochs))
        object.__setattr__(self, "electable", self.live - self.shutting_down)

    def live_racks(self) -> dict[int, str | None]:
        """Every live broker and its rack (None without one): what placement spreads replicas over."""
        return {broker: self.racks.get(broker) for broker in sorted(self.live)}
