"""`replog consume TOPIC`: records to stdout, one per line (kafka-console-consumer)."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, BinaryIO

from replog.cli.bootstrap import add_cluster_arguments, bootstrap_address
from replog.client import Admin, ClientError, Consumer, ConsumerRecord, OffsetOutOfRangeError, TopicPartition

POLL_MS_MAX = 500


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("consume", help="print records of a topic",
                                 description="Print the records of a topic, one value per line.")
    parser.add_argument("topic")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the earliest offset instead of the latest")
    parser.add_argument("--partition", type=int, help="read only this partition")
    parser.add_argument("--offset", help="with --partition: start here (an offset, 'earliest' or 'latest')")
    parser.add_argument("--max-messages", type=int, help="exit after this many records")
    parser.add_argument("--timeout-ms", type=int, help="exit when no record arrives for this long")
    parser.add_argument("--print-offsets", action="store_true",
                        help="print partition<TAB>offset<TAB>value instead of the value")
    parser.add_argument("--group", help="consumer group (not supported yet)")
    add_cluster_arguments(parser)
    parser.set_defaults(handler=_consume)


def start_offset(args: argparse.Namespace) -> int | str:
    """Where to start: an offset, "earliest" or "latest"; ClientError for flags that do not fit together."""
    if args.group is not None:
        raise ClientError("consumer groups (--group) are not supported yet; read with --partition/--offset "
                          "or --from-beginning")
    if args.offset is not None and args.partition is None:
        raise ClientError("--offset needs --partition")
    if args.offset is not None and args.from_beginning:
        raise ClientError("give --offset or --from-beginning, not both")
    if args.max_messages is not None and args.max_messages < 1:
        raise ClientError("--max-messages must be at least 1")
    if args.timeout_ms is not None and args.timeout_ms < 0:
        raise ClientError("--timeout-ms must not be negative")
    if args.offset is None:
        return "earliest" if args.from_beginning else "latest"
    if args.offset in ("earliest", "latest"):
        return args.offset
    try:
        offset = int(args.offset)
    except ValueError:
        raise ClientError(f"--offset takes an offset, 'earliest' or 'latest', not {args.offset!r}") from None
    if offset < 0:
        raise ClientError(f"--offset must not be negative, not {offset}")
    return offset


def _consume(args: argparse.Namespace) -> int:
    start = start_offset(args)
    bootstrap = bootstrap_address(args)
    with Admin(bootstrap) as admin:
        [topic] = admin.describe_topics([args.topic])
    partitions = [p.partition for p in topic.partitions]
    if args.partition is not None:
        if args.partition not in partitions:
            raise ClientError(f"topic {args.topic!r} has partitions 0..{len(partitions) - 1}, "
                              f"not {args.partition}")
        partitions = [args.partition]
    # An offset given by hand that lies outside the log is an error to report, not a reason to jump.
    reset = start if isinstance(start, str) else "none"
    with Consumer(bootstrap, auto_offset_reset=reset) as consumer:
        tps = [TopicPartition(args.topic, p) for p in partitions]
        consumer.assign(tps)
        if isinstance(start, int):
            consumer.seek(tps[0], start)
        try:
            count, interrupted = consume_records(consumer, sys.stdout.buffer, max_messages=args.max_messages,
                                                 timeout_ms=args.timeout_ms, print_offsets=args.print_offsets)
        except OffsetOutOfRangeError as error:
            raise ClientError(_outside_the_log(consumer, error)) from None
    print(f"Processed a total of {count} messages", file=sys.stderr)
    if interrupted:
        raise KeyboardInterrupt
    return 0


def _outside_the_log(consumer: Consumer, error: OffsetOutOfRangeError) -> str:
    tp = TopicPartition(error.topic, error.partition)
    first, end = consumer.beginning_offsets([tp])[tp], consumer.end_offsets([tp])[tp]
    held = f"holds offsets {first} to {end - 1}" if end > first else f"holds no records yet (it starts at {first})"
    return (f"offset {error.offset} is outside {tp}, which {held}; give --offset between {first} and {end} "
            "(the end waits for new records), 'earliest' or 'latest'")


def consume_records(consumer: Consumer, out: BinaryIO, *, max_messages: int | None, timeout_ms: int | None,
                    print_offsets: bool) -> tuple[int, bool]:
    """Print records until max_messages, until none arrived for timeout_ms, or until Ctrl-C.

    Returns the count, and whether Ctrl-C ended it.
    """
    count = 0
    last_record_at = time.monotonic()
    try:
        while max_messages is None or count < max_messages:
            wait_ms = POLL_MS_MAX
            if timeout_ms is not None:
                wait_ms = min(wait_ms, max(timeout_ms - (time.monotonic() - last_record_at) * 1000, 0))
            records = consumer.poll(wait_ms)
            if records:
                last_record_at = time.monotonic()
                if max_messages is not None:
                    records = records[: max_messages - count]
                out.write(b"".join(format_record(r, print_offsets) for r in records))
                out.flush()
                count += len(records)
            elif timeout_ms is not None and (time.monotonic() - last_record_at) * 1000 >= timeout_ms:
                break
    except KeyboardInterrupt:
        return count, True
    return count, False


def format_record(record: ConsumerRecord, print_offsets: bool) -> bytes:
    value = record.value if record.value is not None else b"null"
    if print_offsets:
        return b"%d\t%d\t%s\n" % (record.partition, record.offset, value)
    return value + b"\n"
