"""The cluster dashboard: health at a glance, brokers, replication, throughput, requests,
purgatories, storage, processes, ZooKeeper sessions and TLS certificates."""

from __future__ import annotations

from replog.monitoring.dashboards.board import RATE, Board, q, quantiles, rate, thresholds
from replog.monitoring.dashboards.controller import elections
from replog.monitoring.dashboards.topics import throughput
from replog.monitoring.rules import DAY_S

# process_* comes from every program Prometheus scrapes: keep the replog members, which all
# have a ZooKeeper session.
CONNECTED = 'state="connected"'
REPLOG_MEMBERS = f"and on (namespace, instance) {q('replog_zookeeper_session_state', CONNECTED)}"


def build() -> Board:
    board = Board("replog-cluster", "replog / Cluster",
                  "The whole cluster: brokers, controllers, partitions, traffic and the processes that serve it.")
    _overview(board)
    _brokers(board)
    _replication(board)
    throughput(board)
    _requests(board)
    _storage(board)
    _processes(board)
    return board


def _overview(board: Board) -> None:
    board.row("Overview")
    board.stat("Brokers up", "Brokers registered in ZooKeeper, as the active controller sees them.",
               f"sum({q('replog_active_broker_count')})", steps=thresholds((None, "blue")))
    board.stat("Active controllers", "Controllers holding /controller: exactly 1 is healthy.",
               f"sum({q('replog_active_controller_count')})",
               steps=thresholds((None, "red"), (1, "green"), (2, "red")))
    board.stat("Topics", "Topics in the cluster.", f"sum({q('replog_global_topic_count')})",
               steps=thresholds((None, "blue")))
    board.stat("Partitions", "Partitions in the cluster.", f"sum({q('replog_global_partition_count')})",
               steps=thresholds((None, "blue")))
    board.stat("Under-replicated", "Partitions whose ISR is smaller than their replica set.",
               f"sum({q('replog_under_replicated_partitions')})")
    board.stat("Under min ISR", "Partitions whose ISR is below min.insync.replicas: acks=all writes fail.",
               f"sum({q('replog_under_min_isr_partitions')})")
    board.stat("Offline partitions", "Partitions without a live leader: neither readable nor writable.",
               f"sum({q('replog_offline_partitions')})")
    board.stat("Offline replicas", "Replicas assigned to brokers that are not registered (down).",
               f"sum({q('replog_offline_replica_count')})")


def _brokers(board: Board) -> None:
    board.row("Brokers")
    board.timeseries("Leaders per broker", "Partitions each broker leads.",
                     [(f"sum by (instance) ({q('replog_leader_count')})", "{{instance}}")])
    board.timeseries("Partition replicas per broker", "Partition replicas each broker hosts.",
                     [(f"sum by (instance) ({q('replog_partition_count')})", "{{instance}}")])
    board.timeseries("Offline replicas per broker",
                     "Replicas assigned to each broker while it is not registered in ZooKeeper.",
                     [(f"max by (broker) ({q('replog_offline_replica_count')})", "broker {{broker}}")])


def _replication(board: Board) -> None:
    board.row("Replication")
    board.timeseries("Under-replicated and under min ISR, by leader",
                     "Partitions each leader reports under-replicated, and under min.insync.replicas.",
                     [(f"sum by (instance) ({q('replog_under_replicated_partitions')})", "{{instance}} under-replicated"),
                      (f"sum by (instance) ({q('replog_under_min_isr_partitions')})", "{{instance}} under min ISR")])
    board.timeseries("ISR shrinks and expands", "Changes of the ISRs of the partitions each broker leads, per second.",
                     [(f"sum by (instance) ({rate('replog_isr_shrinks_total')})", "{{instance}} shrinks"),
                      (f"sum by (instance) ({rate('replog_isr_expands_total')})", "{{instance}} expands")],
                     unit="ops")
    elections(board, width=8)


def _requests(board: Board) -> None:
    board.row("Requests")
    board.timeseries("Requests by RPC", "RPCs served per second, every service.",
                     [(f"sum by (rpc) ({rate('replog_request_duration_seconds_count')})", "{{rpc}}")], unit="reqps")
    board.timeseries("Latency by RPC", "p50 and p99 from arrival to answer. A fetch's time includes its long poll.",
                     quantiles("replog_request_duration_seconds", "rpc"), unit="s")
    board.timeseries("Failed requests by RPC",
                     "RPCs per second that ended with a gRPC error status, by status (0: none failed).",
                     [(f"sum by (rpc, error) ({rate('replog_requests_failed_total')})"
                       f" or sum by (rpc) ({rate('replog_request_duration_seconds_count')}) * 0", "{{rpc}} {{error}}")],
                     unit="reqps")
    board.timeseries("Produce purgatory", "Produce requests waiting for their answer (acks=all: for the HW).",
                     [(f"sum by (instance) ({q('replog_produce_purgatory_size')})", "{{instance}}")], width=12)
    board.timeseries("Fetch purgatory", "Fetches held in a long poll.",
                     [(f"sum by (instance) ({q('replog_fetch_purgatory_size')})", "{{instance}}")], width=12)


def _storage(board: Board) -> None:
    board.row("Storage")
    board.timeseries("Log size per topic", "Bytes of every replica's log on disk (replicas add up).",
                     [(f"sum by (topic) ({q('replog_log_size_bytes')})", "{{topic}}")], unit="bytes", width=12)
    board.timeseries("Log dir usage", "Share of each log dir's filesystem in use; alerts above 85%.",
                     [(f"1 - {q('replog_log_dir_usable_bytes')} / {q('replog_log_dir_total_bytes')}",
                       "{{instance}} {{log_dir}}")], unit="percentunit", width=12, maximum=1)


def _processes(board: Board) -> None:
    board.row("Processes")
    board.timeseries("CPU per process", "CPU seconds per second of every replog process.",
                     [(f"rate({q('process_cpu_seconds_total')}[{RATE}]) {REPLOG_MEMBERS}", "{{instance}}")],
                     unit="percentunit")
    board.timeseries("Memory per process", "Resident memory of every replog process.",
                     [(f"{q('process_resident_memory_bytes')} {REPLOG_MEMBERS}", "{{instance}}")], unit="bytes")
    board.timeseries("Open files per process", "File descriptors open (log segments, sockets).",
                     [(f"{q('process_open_fds')} {REPLOG_MEMBERS}", "{{instance}}")])
    board.states("ZooKeeper session", "Whether each process's ZooKeeper session is connected.",
                 f"max by (instance) ({q('replog_zookeeper_session_state', CONNECTED)})", "{{instance}}",
                 {0: ("not connected", "red"), 1: ("connected", "green")})
    board.timeseries("ZooKeeper disconnects and expiries",
                     "Connections lost (the session may resume) and sessions expired, per interval.",
                     [(f"sum by (instance) (increase({q('replog_zookeeper_disconnects_total')}[{RATE}]))",
                       "{{instance}} disconnects"),
                      (f"sum by (instance) (increase({q('replog_zookeeper_expires_total')}[{RATE}]))",
                       "{{instance}} expiries")], width=12)
    left = f"min by (instance, kind) ({q('replog_tls_certificate_expiry_timestamp_seconds')}) - time()"
    board.stat("First certificate to expire",
               "Time until the first TLS certificate of any process stops being valid: the chains they present "
               "and the CA certificates they verify by. No data on a plaintext cluster.",
               f"min({left})", unit="s", steps=thresholds((None, "red"), (7 * DAY_S, "orange"), (30 * DAY_S, "green")),
               width=6)
    board.timeseries("Certificates: time left",
                     "Time until each process's TLS certificate (certificate) and CA certificates (ca) expire.",
                     [(left, "{{instance}} {{kind}}")], unit="s", width=18, height=4)
    board.stat("Versions running",
               "replog versions the processes run: 1 normally, 2 while a rolling upgrade is under way.",
               f"count(count by (version) ({q('replog_build_info')}))",
               steps=thresholds((None, "green"), (2, "orange")), width=6)
    board.timeseries("Processes per version",
                     "How many broker, controller and metadata processes run each replog version.",
                     [(f"count by (version, service) ({q('replog_build_info')})", "{{version}} {{service}}")],
                     width=18, height=4)
