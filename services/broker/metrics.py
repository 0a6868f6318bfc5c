"""The broker's Prometheus metrics (names from DESIGN §10)."""

import os
from collections.abc import Iterator, Sequence

import prometheus_client
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

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
PRODUCE_REFUSED = prometheus_client.Counter(
    "replog_produce_refused_total",
    "Partitions of produce requests refused before anything was appended: malformed or too large batches, "
    "records the topic's configs refuse (a missing key, a timestamp out of bounds), bad producer fields.",
    ["topic", "error"])
PRODUCE_PURGATORY = prometheus_client.Gauge(
    "replog_produce_purgatory_size", "Produce requests waiting for acks=all replication.")
DELETE_RECORDS_PURGATORY = prometheus_client.Gauge(
    "replog_delete_records_purgatory_size",
    "DeleteRecords requests waiting for the live and in-sync replicas' log starts to follow.")
FETCH_PURGATORY = prometheus_client.Gauge(
    "replog_fetch_purgatory_size", "Fetch requests waiting (long-poll) for data.")
# Kafka's RemoteTimeMs: how long a request waited on other brokers or clients rather than on this one.
REMOTE_TIME = prometheus_client.Histogram(
    "replog_request_remote_time_seconds",
    "Time a request waited after it was handled here: Produce for its partitions' answers (acks=all: for the "
    "followers to fetch its batches), FetchFollower and FetchConsumer in their long poll.",
    ["rpc"],
    buckets=(0.0005, 0.001, 0.002, 0.003, 0.005, 0.0075, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30))
FETCH_SESSIONS = prometheus_client.Gauge(
    "replog_fetch_sessions", "KIP-227 fetch sessions this broker keeps for its followers.")
LOG_SIZE = prometheus_client.Gauge("replog_log_size_bytes", "Size of a partition's log on disk.",
                                   ["topic", "partition"])
LOG_END_OFFSET = prometheus_client.Gauge(
    "replog_log_end_offset", "The offset after a partition's last record here.", ["topic", "partition"])
LOG_START_OFFSET = prometheus_client.Gauge(
    "replog_log_start_offset", "The first offset of a partition still in its log here.", ["topic", "partition"])
REPLICA_LAG = prometheus_client.Gauge(
    "replog_replica_lag_records", "How many records a follower is behind the leader's log end offset.",
    ["topic", "partition", "replica"])

# Consumer groups, served by the broker that coordinates each group (DESIGN §13, §17).
CONSUMERGROUP_MEMBERS = prometheus_client.Gauge(
    "replog_consumergroup_members", "Members of a consumer group coordinated here.", ["group"])
CONSUMERGROUP_STATE = prometheus_client.Gauge(
    "replog_consumergroup_state",
    "State of a consumer group coordinated here: 1 empty, 2 assigning, 3 reconciling, 4 stable.", ["group"])
CONSUMERGROUP_LAG = prometheus_client.Gauge(
    "replog_consumergroup_lag", "Records between a group's committed offset and the partition's high watermark.",
    ["group", "topic", "partition"])
GROUP_REBALANCES = prometheus_client.Counter(
    "replog_group_rebalances_total", "New group epochs: a member joined or left, or subscriptions or topics changed.",
    ["group"])
GROUP_REBALANCE_SECONDS = prometheus_client.Histogram(
    "replog_group_rebalance_seconds", "From a new group epoch until every member owns its target assignment.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
GROUP_COMMIT_SECONDS = prometheus_client.Histogram(
    "replog_group_commit_seconds", "From an OffsetCommit's arrival until it is durable and answered.",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1))
PRODUCER_IDS_ISSUED = prometheus_client.Counter(
    "replog_producer_ids_issued_total", "Producer ids this broker handed out (InitProducerId).")

# Both coordinators (groups and transactions) load and write their internal topic's partitions alike.
COORDINATOR_LOAD_FAILURES = prometheus_client.Counter(
    "replog_coordinator_load_failures_total",
    "Loads of a coordinator shard that failed (logged as ERROR) and were started again.", ["topic"])
COORDINATOR_WRITES_REFUSED = prometheus_client.Counter(
    "replog_coordinator_writes_refused_total",
    "Writes of a coordinator's records that the partition refused, leaving nothing in the log.", ["topic", "error"])

# Transactions (DESIGN §14, §17): the coordinator's side, served by the broker coordinating each id...
TRANSACTIONS = prometheus_client.Gauge(
    "replog_transactions", "Transactional ids coordinated here, by state (Kafka's names: Empty, Ongoing, "
    "PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort).", ["state"])
TXN_MARKER_LATENCY = prometheus_client.Histogram(
    "replog_txn_marker_latency_seconds",
    "From a transaction's decision (PREPARE_*) being committed until every partition has its marker.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
TXN_ADD_HELD = prometheus_client.Histogram(
    "replog_txn_add_held_seconds",
    "AddPartitionsToTxn requests that came while the producer's last transaction was completing, or while another "
    "add of the id was being written, by how long they were held until that was done (or until they were answered "
    "CONCURRENT_TRANSACTIONS).",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1))
TXN_PARTITION_VERIFICATION = prometheus_client.Histogram(
    "replog_txn_partition_verification_seconds",
    "How long a partition leader waited for the transaction coordinator before appending the first batch of a "
    "transaction on a partition, whatever it answered: mode=verify, it checked that the producer added the "
    "partition (KIP-890); mode=add, it added the partition for a producer on transaction version 2.",
    ["mode"], buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10))
# ...and the partitions' side, by each partition's leader.
PRODUCER_IDS = prometheus_client.Gauge(
    "replog_producer_ids", "Producer ids a partition led here keeps state for (idempotent and transactional).",
    ["topic", "partition"])
LAST_STABLE_OFFSET_LAG = prometheus_client.Gauge(
    "replog_last_stable_offset_lag",
    "High watermark minus last stable offset of a partition led here: records an open transaction holds back "
    "from read_committed consumers.", ["topic", "partition"])
PARTITIONS_WITH_LATE_TRANSACTIONS = prometheus_client.Gauge(
    "replog_partitions_with_late_transactions",
    "Partitions led here holding a transaction open whose producer has written nothing there for "
    "transaction.max.timeout.ms + 5 minutes: a hanging transaction (Kafka's PartitionsWithLateTransactionsCount; "
    "see `replog transactions find-hanging`).")


class LogDirCollector(Collector):
    """The size and free space of each log dir's filesystem, read when scraped (KIP-827's
    TotalBytes and UsableBytes)."""

    def __init__(self, log_dirs: Sequence[str]) -> None:
        self._log_dirs = tuple(log_dirs)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        total = GaugeMetricFamily("replog_log_dir_total_bytes", "Size of the filesystem a log dir is on.",
                                  labels=["log_dir"])
        usable = GaugeMetricFamily("replog_log_dir_usable_bytes",
                                   "Bytes of a log dir's filesystem that the broker may still write.",
                                   labels=["log_dir"])
        for log_dir in self._log_dirs:
            try:
                stats = os.statvfs(log_dir)
            except OSError:
                continue  # an offline log dir has no figures
            total.add_metric([log_dir], stats.f_blocks * stats.f_frsize)
            usable.add_metric([log_dir], stats.f_bavail * stats.f_frsize)
        yield total
        yield usable


def watch_log_dirs(log_dirs: Sequence[str]) -> None:
    prometheus_client.REGISTRY.register(LogDirCollector(log_dirs))


_groups_reported: set[str] = set()


def set_group_gauges(members: dict[str, int], states: dict[str, int]) -> None:
    """Members and state of every group coordinated here; groups no longer here lose their series."""
    for group in _groups_reported - members.keys():
        CONSUMERGROUP_MEMBERS.remove(group)
        CONSUMERGROUP_STATE.remove(group)
    for group in members:
        CONSUMERGROUP_MEMBERS.labels(group).set(members[group])
        CONSUMERGROUP_STATE.labels(group).set(states[group])
    _groups_reported.clear()
    _groups_reported.update(members)
