"""ListOffsets at the partitions' leaders: the earliest or latest offset, or the first at a time.

The consumer's fetcher resets positions with it; the admin client reads log
ends and offsets by time with it (e.g. to reset a group's offsets).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import grpc

from replog.client.broker_requests import list_offsets_request, partition_results
from replog.client.cluster import ClusterMetadata
from replog.client.errors import ClientError, FetchError
from replog.client.io import Channels
from replog.client.metadata import MetadataManager
from replog.client.retry import error_code_for_status
from replog.core.errors import ErrorCode
from replog.core.topic_partition import TopicPartition

# What one partition's lookup found: its error, the detail, the offset, the leader epoch and the record's
# timestamp (-1 for earliest and latest).
Found = tuple[ErrorCode, str, int, int, int]


async def ask_leader(channels: Channels, metadata: ClusterMetadata, leader: int,
                     items: list[tuple[TopicPartition, int, int]], *, isolation_level: str,
                     timeout_s: float) -> dict[TopicPartition, Found]:
    """One ListOffsets at `leader` for (partition, leader epoch, timestamp: -2 earliest, -1 latest)."""
    request = list_offsets_request(items, isolation_level)
    address = metadata.brokers[leader]
    try:
        response = await channels.broker(address).ListOffsets(request, timeout=timeout_s)
    except grpc.aio.AioRpcError as error:
        detail = f"broker {leader} at {address} answered {error.code().name}: {error.details()}"
        return {tp: (error_code_for_status(error.code()), detail, -1, -1, -1) for tp, _e, _t in items}
    answers = {tp: (ErrorCode.of(part.error_code), part.error_message, part.offset, part.leader_epoch,
                    part.timestamp_ms) for tp, part in partition_results(response).items()}
    missing = (ErrorCode.UNKNOWN_SERVER_ERROR, "the broker's answer left the partition out", -1, -1, -1)
    return {tp: answers.get(tp, missing) for tp, _e, _t in items}


async def list_offsets(metadata: MetadataManager, channels: Channels, timestamps: Mapping[TopicPartition, int], *,
                       isolation_level: str, request_timeout_s: float, retry_backoff_s: float,
                       timeout_s: float) -> dict[TopicPartition, tuple[int, int, int]]:
    """{tp: (offset, leader_epoch, timestamp)} for each partition's timestamp, retrying stale leaders.

    The offset is -1 where no record is at or after a timestamp; the timestamp is that of the record at the
    offset found by time (-1 for earliest and latest).
    """
    deadline = time.monotonic() + timeout_s
    found: dict[TopicPartition, tuple[int, int, int]] = {}
    while True:
        current = metadata.current
        by_leader: dict[int, list[tuple[TopicPartition, int, int]]] = {}
        for tp, timestamp in timestamps.items():
            if tp not in found and current.leader_of(tp) >= 0:
                by_leader.setdefault(current.leader_of(tp), []).append((tp, current.leader_epoch_of(tp), timestamp))
        for leader, items in by_leader.items():
            answers = await ask_leader(channels, current, leader, items, isolation_level=isolation_level,
                                       timeout_s=request_timeout_s)
            for tp, (code, detail, offset, epoch, timestamp) in answers.items():
                if code is ErrorCode.NONE:
                    found[tp] = (offset, epoch, timestamp)
                elif not code.retriable:
                    raise FetchError(tp.topic, tp.partition, code, detail)
        if len(found) == len(timestamps):
            return found
        if time.monotonic() >= deadline:
            missing = ", ".join(str(tp) for tp in timestamps if tp not in found)
            raise ClientError(f"no leader answered for {missing} within {timeout_s:g} s",
                              ErrorCode.LEADER_NOT_AVAILABLE)
        await metadata.refresh()
        await asyncio.sleep(retry_backoff_s)
