"""`replog consume TOPIC`: records to stdout, one per line (kafka-console-consumer); with --group, as a
member of a consumer group that commits what was printed."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, BinaryIO

from replog.cli.bootstrap import add_cluster_arguments, bootstrap_address
from replog.cli.names import topic_name
from replog.cli.numbers import INT64_MAX, PARTITION, out_of_range
from replog.cli.record_format import RecordFormat, record_format
from replog.client import Admin, ClientError, Consumer, ConsumerRecord, OffsetOutOfRangeError, TopicPartition
from replog.client.broker_requests import READ_COMMITTED, READ_UNCOMMITTED
from replog.client.membership import subscription_of
from replog.core.errors import ErrorCode

POLL_MS_MAX = 500


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("consume", help="print records of a topic",
                                 description="Print the records of a topic, one value per line.")
    parser.add_argument("topic", nargs="?", type=topic_name, help="the topic to read (or --include REGEX with --group)")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the earliest offset instead of the latest (with --group: where the group "
                        "has no committed offset)")
    parser.add_argument("--partition", type=PARTITION, help="read only this partition")
    parser.add_argument("--offset", help="with --partition: start here (an offset, 'earliest' or 'latest')")
    parser.add_argument("--max-messages", type=int, help="exit after this many records")
    parser.add_argument("--timeout-ms", type=int, help="exit when no record arrives for this long")
    parser.add_argument("--print-offsets", action="store_true",
                        help="print partition<TAB>offset<TAB>value instead of the value")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="kafka-console-consumer's formatter properties: print.timestamp, print.partition, "
                        "print.offset, print.headers, print.key, print.value (true|false), key.separator (a tab), "
                        "line.separator, headers.separator, headers.key.separator, null.literal; e.g. "
                        "--property print.key=true")
    parser.add_argument("--group", help="read as a member of this consumer group: its members share the "
                        "partitions, and what was printed is committed as it goes")
    parser.add_argument("--include", metavar="REGEX", help="with --group: every topic whose whole name matches "
                        "REGEX, topics created later too")
    parser.add_argument("--isolation-level", choices=(READ_UNCOMMITTED, READ_COMMITTED), default=READ_UNCOMMITTED,
                        help="read_committed: only records of committed transactions (and those written outside "
                        "transactions), up to the last stable offset; read_uncommitted (the default): every record "
                        "up to the high watermark. Transaction markers are never printed")
    add_cluster_arguments(parser)
    parser.set_defaults(handler=_consume)


def start_offset(args: argparse.Namespace) -> int | str:
    """Where to start: an offset, "earliest" or "latest"; ClientError for flags that do not fit together."""
    _check_group_flags(args)
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
    problem = out_of_range(offset, 0, INT64_MAX)
    if problem:
        raise ClientError(f"--offset: {problem}")
    return offset


def _check_group_flags(args: argparse.Namespace) -> None:
    if args.group is None:
        if args.include is not None:
            raise ClientError("--include needs --group: a regex subscription is a group's")
        if args.topic is None:
            raise ClientError("give the TOPIC to read")
        return
    if not args.group.strip():
        raise ClientError("the group id must not be empty", ErrorCode.INVALID_GROUP_ID)
    if args.partition is not None or args.offset is not None:
        raise ClientError("--group reads the partitions the group assigns: --partition and --offset do not go "
                          "with it")
    if (args.topic is None) == (args.include is None):
        raise ClientError("give a TOPIC or --include REGEX, not both" if args.topic else
                          "give the TOPIC to read, or --include REGEX")
    if args.include is not None:
        subscription_of(args.include)  # a regex that does not compile is refused before connecting


def _consume(args: argparse.Namespace) -> int:
    start = start_offset(args)
    shown = record_format(args.property, args.print_offsets)
    bootstrap = bootstrap_address(args)
    if args.group is not None:
        return _consume_in_group(args, bootstrap, shown)
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
    with Consumer(bootstrap, auto_offset_reset=reset, isolation_level=args.isolation_level) as consumer:
        tps = [TopicPartition(args.topic, p) for p in partitions]
        consumer.assign(tps)
        if isinstance(start, int):
            consumer.seek(tps[0], start)
        try:
            count, interrupted = consume_records(consumer, sys.stdout.buffer, max_messages=args.max_messages,
                                                 timeout_ms=args.timeout_ms, shown=shown)
        except OffsetOutOfRangeError as error:
            raise ClientError(_outside_the_log(consumer, error)) from None
    print(f"Processed a total of {count} messages", file=sys.stderr)
    if interrupted:
        raise KeyboardInterrupt
    return 0


def _consume_in_group(args: argparse.Namespace, bootstrap: str, shown: RecordFormat) -> int:
    """Join the group and print what it assigns; the consumer commits as it goes and when it stops."""
    if args.topic is not None:
        with Admin(bootstrap) as admin:
            admin.describe_topics([args.topic])  # an unknown topic is a mistake to report, not to wait for
    reset = "earliest" if args.from_beginning else "latest"
    with Consumer(bootstrap, group_id=args.group, auto_offset_reset=reset,
                  isolation_level=args.isolation_level) as consumer:
        consumer.subscribe([args.topic] if args.topic is not None else args.include)
        count, interrupted = consume_records(consumer, sys.stdout.buffer, max_messages=args.max_messages,
                                             timeout_ms=args.timeout_ms, shown=shown)
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
                    shown: RecordFormat) -> tuple[int, bool]:
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
                if max_messages is not None and len(records) > max_messages - count:
                    records = _keep(consumer, records, max_messages - count)
                out.write(b"".join(map(shown.render, records)))
                out.flush()
                count += len(records)
            elif timeout_ms is not None and (time.monotonic() - last_record_at) * 1000 >= timeout_ms:
                break
    except KeyboardInterrupt:
        return count, True
    return count, False


def _keep(consumer: Consumer, records: list[ConsumerRecord], count: int) -> list[ConsumerRecord]:
    """The first `count` records; the consumer goes back to the first of the others in each partition,
    so that what it commits (a group's consumer) is what was printed."""
    first_left: dict[TopicPartition, int] = {}
    for record in records[count:]:
        first_left.setdefault(TopicPartition(record.topic, record.partition), record.offset)
    for tp, offset in first_left.items():
        consumer.seek(tp, offset)
    return records[:count]
