"""The broker's Prometheus metrics (names from DESIGN §10)."""

import prometheus_client

PARTITION_COUNT = prometheus_client.Gauge("replog_partition_count", "Partition replicas hosted on this broker.")
LEADER_COUNT = prometheus_client.Gauge("replog_leader_count", "Partitions this broker leads.")
UNDER_REPLICATED = prometheus_client.Gauge(
    "replog_under_replicated_partitions", "Partitions led here whose ISR is smaller than their replica set.")
UNDER_MIN_ISR = prometheus_client.Gauge(
    "replog_under_min_isr_partitions", "Partitions led here whose ISR is below min.insync.replicas.")
ISR_SHRINKS = prometheus_client.Counter("replog_isr_shrinks_total", "ISR shrinks of partitions led here.")
ISR_EXPANDS = prometheus_client.Counter("replog_isr_expands_total", "ISR expansions of partitions led here.")
BYTES_IN = prometheus_client.Counter("replog_bytes_in_total", "Record bytes appended from producers.", ["topic"])
BYTES_OUT = prometheus_client.Counter("replog_bytes_out_total", "Record bytes sent to fetchers.", ["topic"])
MESSAGES_IN = prometheus_client.Counter("replog_messages_in_total", "Records appended from producers.", ["topic"])
PRODUCE_PURGATORY = prometheus_client.Gauge(
    "replog_produce_purgatory_size", "Produce requests waiting for acks=all replication.")
FETCH_PURGATORY = prometheus_client.Gauge(
    "replog_fetch_purgatory_size", "Fetch requests waiting (long-poll) for data.")
FETCH_SESSIONS = prometheus_client.Gauge(
    "replog_fetch_sessions", "KIP-227 fetch sessions this broker keeps for its followers.")
LOG_SIZE = prometheus_client.Gauge("replog_log_size_bytes", "Size of a partition's log on disk.",
                                   ["topic", "partition"])
REPLICA_LAG = prometheus_client.Gauge(
    "replog_replica_lag_records", "How many records a follower is behind the leader's log end offset.",
    ["topic", "partition", "replica"])
