"""The topics and partitions dashboard: per-topic throughput, per-partition offsets and sizes,
how far each follower is behind its leader, and what producers and open transactions hold
per partition."""

from __future__ import annotations

from replog.monitoring.dashboards.board import Board, q, rate

TOPIC = 'topic=~"$topic"'


def build() -> Board:
    board = Board("replog-topics", "replog / Topics and partitions",
                  "Throughput per topic, offsets and sizes per partition, replica lag, and producers and "
                  "transactions per partition.")
    board.add_variable("topic", "Topic", "replog_log_end_offset")
    throughput(board, TOPIC)
    board.row("Partitions")
    board.timeseries("Log end offset", "The offset after each partition's last record (the highest replica's).",
                     [(f"max by (topic, partition) ({q('replog_log_end_offset', TOPIC)})", "{{topic}}-{{partition}}")])
    board.timeseries("Log start offset", "Each partition's first offset still kept (retention moves it).",
                     [(f"max by (topic, partition) ({q('replog_log_start_offset', TOPIC)})",
                       "{{topic}}-{{partition}}")])
    board.timeseries("Log size", "Bytes of each partition's log, on its largest replica.",
                     [(f"max by (topic, partition) ({q('replog_log_size_bytes', TOPIC)})", "{{topic}}-{{partition}}")],
                     unit="bytes")
    board.row("Replication")
    board.timeseries("Replica lag", "Records each follower is behind its leader's log end offset.",
                     [(f"max by (topic, partition, replica) ({q('replog_replica_lag_records', TOPIC)})",
                       "{{topic}}-{{partition}} replica {{replica}}")], width=24)
    board.row("Producers and transactions")
    board.timeseries("Last stable offset lag",
                     "High watermark minus last stable offset, on each partition's leader: records open "
                     "transactions hold back from read_committed consumers. It returns to 0 as transactions "
                     "end; one that never does is a hanging transaction.",
                     [(f"max by (topic, partition) ({q('replog_last_stable_offset_lag', TOPIC)})",
                       "{{topic}}-{{partition}}")], width=12)
    board.timeseries("Active producer ids", "Producer ids (idempotent and transactional) each partition's leader "
                     "keeps state for; one expires after producer.id.expiration.ms without a write, unless its "
                     "transaction is open.",
                     [(f"max by (topic, partition) ({q('replog_producer_ids', TOPIC)})", "{{topic}}-{{partition}}")],
                     width=12)
    board.timeseries("Produce refused", "Partitions of produce requests the leader refused before appending, by "
                     "error: malformed or too large batches, records without a key on a compacted topic, "
                     "timestamps outside message.timestamp.before/after.max.ms. Each is in the broker's log with "
                     "its reason.",
                     [(f"sum by (topic, error) ({rate('replog_produce_refused_total', TOPIC)})",
                       "{{topic}} {{error}}")], unit="reqps", width=24)
    return board


def throughput(board: Board, *matchers: str) -> None:
    """A row of bytes in, bytes out and messages in per topic (of the topics `matchers` select)."""
    board.row("Throughput")
    board.timeseries("Bytes in per topic", "Record bytes appended from producers.",
                     [(f"sum by (topic) ({rate('replog_bytes_in_total', *matchers)})", "{{topic}}")], unit="Bps")
    board.timeseries("Bytes out per topic", "Record bytes sent to followers and consumers.",
                     [(f"sum by (topic) ({rate('replog_bytes_out_total', *matchers)})", "{{topic}}")], unit="Bps")
    board.timeseries("Messages in per topic", "Records appended from producers.",
                     [(f"sum by (topic) ({rate('replog_messages_in_total', *matchers)})", "{{topic}}")], unit="cps")
