"""DescribeLogDirs: this broker's log dirs, their filesystems' room, and the replicas in each (Kafka's
DescribeLogDirs, what kafka-log-dirs.sh shows)."""

from __future__ import annotations

import logging
import shutil

from replog.api.broker.v1 import broker_pb2
from replog.broker.partitions import Partitions
from replog.core.errors import ErrorCode
from replog.core.replica import Role
from replog.core.topic_partition import TopicPartition

log = logging.getLogger("replog.broker")


def handle_describe_log_dirs(partitions: Partitions,
                             request: broker_pb2.DescribeLogDirsRequest) -> broker_pb2.DescribeLogDirsResponse:
    hosted = partitions.hosted
    asked = {TopicPartition(topic.topic, partition) for topic in request.topics for partition in topic.partitions}
    by_dir: dict[str, dict[str, list[TopicPartition]]] = {log_dir: {} for log_dir in hosted.log_dirs}
    for key in sorted(hosted.by_name):
        if not asked or key in asked:
            by_dir[hosted.log_dir_of(key)].setdefault(key.topic, []).append(key)
    response = broker_pb2.DescribeLogDirsResponse()
    for log_dir, topics in by_dir.items():
        described = response.log_dirs.add(log_dir=log_dir, error_code=int(ErrorCode.NONE), total_bytes=-1,
                                          usable_bytes=-1)
        try:
            usage = shutil.disk_usage(log_dir)
            described.total_bytes, described.usable_bytes = usage.total, usage.free
        except OSError as error:
            log.warning("log dir %s cannot be read: %s", log_dir, error)
            described.error_code = int(ErrorCode.KAFKA_STORAGE_ERROR)
        for topic, keys in topics.items():
            listed = described.topics.add(topic=topic)
            for key in keys:
                driver = hosted.by_name[key]
                replica = driver.replica
                listed.partitions.add(partition=key.partition, size_bytes=driver.log.size_bytes,
                                      log_start_offset=replica.log_start_offset,
                                      log_end_offset=replica.log_end_offset, high_watermark=replica.high_watermark,
                                      leader=replica.role is Role.LEADER)
    return response
