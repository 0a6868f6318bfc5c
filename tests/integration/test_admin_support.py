"""What the admin tests share: reading a real cluster's metadata, metrics and ZooKeeper. No tests here."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import grpc

from replog.api.metadata.v1 import metadata_pb2, metadata_pb2_grpc
from replog.dev.processes import scrape_metric
from replog.zk.store import MetadataStore
from tests.integration.cluster import LocalCluster, wait_for

T = TypeVar("T")

SESSION_TIMEOUT_S = 6.0  # replog dev's zookeeper.session.timeout.ms
FAILOVER_S_MAX = SESSION_TIMEOUT_S + 10


def bootstrap(cluster: LocalCluster) -> str:
    """The metadata service's address, from cluster.json (quicker than `replog dev status`)."""
    return cluster.state()["metadata"][0]["address"]


def metadata(cluster: LocalCluster, *topics: str) -> metadata_pb2.MetadataResponse:
    with grpc.insecure_channel(bootstrap(cluster)) as channel:
        return metadata_pb2_grpc.MetadataServiceStub(channel).Metadata(
            metadata_pb2.MetadataRequest(topics=topics), timeout=5)


def partitions(cluster: LocalCluster, topic: str) -> dict[int, metadata_pb2.PartitionMetadata]:
    """The topic's partitions as the metadata service shows them ({} while it does not exist)."""
    (found,) = metadata(cluster, topic).topics
    return {p.partition: p for p in found.partitions}


def active_controller(cluster: LocalCluster) -> int:
    """The active controller's id, as the metadata service names it."""
    return wait_for(lambda: metadata(cluster).controller_id > 0 and metadata(cluster).controller_id,
                    FAILOVER_S_MAX, "an active controller")


def controller_metric(cluster: LocalCluster, name: str) -> float:
    active = active_controller(cluster)
    value = scrape_metric(cluster.metrics_address("controller", active), name)
    assert value is not None, f"controller {active} does not export {name}"
    return value


def in_zookeeper(cluster: LocalCluster, read: Callable[[MetadataStore], Awaitable[T]]) -> T:
    """read(store) on a session of the cluster's ZooKeeper."""

    async def session() -> T:
        store = MetadataStore(cluster.state()["zookeeper"]["address"], session_timeout_ms=6000,
                              connection_timeout_ms=5000)
        await store.start()
        try:
            return await read(store)
        finally:
            await store.stop()

    return asyncio.run(session())


def broker_epoch(cluster: LocalCluster, broker_id: int) -> int:
    async def read(store: MetadataStore) -> int:
        return (await store.live_brokers())[broker_id].broker_epoch

    return in_zookeeper(cluster, read)
