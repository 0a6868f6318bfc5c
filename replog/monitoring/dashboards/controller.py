"""The controller and coordinators dashboard: who is active, the controller's event queue,
elections and their latency, how fast metadata reaches the metadata services, the transaction
coordinators' transactions and markers, and the loads and refused writes of both coordinators."""

from __future__ import annotations

from replog.monitoring.dashboards.board import RATE, Board, q, quantiles, rate, thresholds


def build() -> Board:
    board = Board("replog-controller", "replog / Controller and coordinators",
                  "The active controller's work, how quickly metadata reaches clients, and the group and "
                  "transaction coordinators.")
    board.row("Controller")
    board.states("Active controller", "Which controller holds /controller.",
                 f"max by (instance) ({q('replog_active_controller_count')})", "{{instance}}",
                 {0: ("standby", "blue"), 1: ("active", "green")}, width=16)
    board.stat("Controller epoch", "Bumped by every controller election.", f"max({q('replog_controller_epoch')})",
               steps=thresholds((None, "blue")), width=4)
    board.stat("Brokers up", "Brokers registered in ZooKeeper.", f"sum({q('replog_active_broker_count')})",
               steps=thresholds((None, "blue")), width=4)
    board.timeseries("Event queue size", "Controller events waiting to run.",
                     [(f"max by (instance) ({q('replog_controller_event_queue_size')})", "{{instance}}")])
    board.timeseries("Event queue time", "How long events waited before they ran (p50, p99).",
                     quantiles("replog_controller_event_queue_time_seconds", "instance"), unit="s")
    board.timeseries("Event processing time", "How long events ran (p50, p99).",
                     quantiles("replog_controller_event_queue_processing_time_seconds", "instance"), unit="s")
    board.row("Elections")
    elections(board, width=12)
    board.timeseries("Election latency", "From the start of the event that elected leaders until they were written.",
                     quantiles("replog_leader_election_seconds", ""), unit="s", width=12)
    board.row("Metadata")
    board.timeseries("Metadata propagation time",
                     "From a controller's write of partition states until each metadata service serves them.",
                     quantiles("replog_metadata_propagation_seconds", "instance"), unit="s", width=24)
    _transactions(board)
    _coordinators(board)
    return board


def _transactions(board: Board) -> None:
    board.row("Transactions")
    board.timeseries("Transactions by state",
                     "Transactional ids by the state of their latest transaction, summed over the coordinators. "
                     "Ongoing: open; PrepareCommit and PrepareAbort: decided, markers being written.",
                     [(f"sum by (state) ({q('replog_transactions')})", "{{state}}")], width=6)
    board.timeseries("Transactions ended", "Transactions whose markers every partition has, per second, "
                     "by coordinating broker: commits, aborts and timeouts.",
                     [(f"sum by (instance) ({rate('replog_txn_marker_latency_seconds_count')})", "{{instance}}")],
                     unit="ops", width=6)
    board.timeseries("Marker latency",
                     "From a transaction's decision (PREPARE_*) being written until every partition has its "
                     "marker (p50, p99). Long: a partition of the transaction has no leader or too few in-sync "
                     "replicas.", quantiles("replog_txn_marker_latency_seconds", ""), unit="s", width=6)
    board.timeseries("Next transactions held",
                     "AddPartitionsToTxn requests that came while their producer's last transaction was still "
                     "completing, held until it completed (p50, p99). Near 0.5 s: the markers are late, and the "
                     "producers are answered CONCURRENT_TRANSACTIONS and retry.",
                     quantiles("replog_txn_add_held_seconds", ""), unit="s", width=6)
    board.timeseries("First writes waiting for the coordinator",
                     "How long partition leaders held a transaction's first batch on a partition while the "
                     "transaction coordinator added the partition (add: producers on transaction version 2) or "
                     "verified it (verify), p50 and p99. This is what a transaction's first write to a partition "
                     "costs beyond a plain write.", quantiles("replog_txn_partition_verification_seconds", "mode"),
                     unit="s", width=12)


def _coordinators(board: Board) -> None:
    board.row("Coordinators")
    board.timeseries("Coordinator load failures",
                     "Loads of a __consumer_offsets or __transaction_state partition that failed and were started "
                     "again, per interval (0: none). The broker's log has the ERROR.",
                     [(f"sum by (instance, topic) (increase({q('replog_coordinator_load_failures_total')}"
                       f"[{RATE}]))", "{{instance}} {{topic}}")], width=12)
    board.timeseries("Coordinator writes refused",
                     "Writes of the coordinators' records that the partition refused, per interval, by error "
                     "(0: none). NOT_ENOUGH_REPLICAS: the internal topic's partition is under min ISR.",
                     [(f"sum by (topic, error) (increase({q('replog_coordinator_writes_refused_total')}"
                       f"[{RATE}]))", "{{topic}} {{error}}")], width=12)


def elections(board: Board, *, width: int) -> None:
    board.timeseries("Leader elections", "Partitions given a new leader per second; unclean: from outside the ISR.",
                     [(f"sum ({rate('replog_leader_elections_total')})", "elections"),
                      (f"sum ({rate('replog_unclean_leader_elections_total')})", "unclean elections")],
                     unit="ops", width=width)
