"""The controller and coordinators dashboard: who is active, the controller's event queue,
elections and their latency, and how fast metadata reaches the metadata services.

Transactions (by state, marker latency) join here once the live monitoring scenario runs
transactional traffic to fill them; the brokers serve those metrics."""

from __future__ import annotations

from replog.monitoring.dashboards.board import Board, q, quantiles, rate, thresholds


def build() -> Board:
    board = Board("replog-controller", "replog / Controller and coordinators",
                  "The active controller's work and how quickly metadata reaches clients.")
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
    return board


def elections(board: Board, *, width: int) -> None:
    board.timeseries("Leader elections", "Partitions given a new leader per second; unclean: from outside the ISR.",
                     [(f"sum ({rate('replog_leader_elections_total')})", "elections"),
                      (f"sum ({rate('replog_unclean_leader_elections_total')})", "unclean elections")],
                     unit="ops", width=width)
