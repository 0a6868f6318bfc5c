"""The metadata image: an immutable view of the cluster, replaced whole on every change."""

from __future__ import annotations

import dataclasses

from replog.zk.store import BrokerRegistration, ControllerInfo


@dataclasses.dataclass(frozen=True)
class MetadataImage:
    version: int = 0
    cluster_id: str = ""
    brokers: tuple[BrokerRegistration, ...] = ()
    controller: ControllerInfo | None = None

    def with_brokers(self, brokers: dict[int, BrokerRegistration]) -> MetadataImage:
        ordered = tuple(brokers[i] for i in sorted(brokers))
        return dataclasses.replace(self, version=self.version + 1, brokers=ordered)

    def with_controller(self, controller: ControllerInfo | None) -> MetadataImage:
        return dataclasses.replace(self, version=self.version + 1, controller=controller)
