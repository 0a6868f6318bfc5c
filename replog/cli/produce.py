"""`replog produce TOPIC`: one record per line of stdin (kafka-console-producer)."""

from __future__ import annotations

import argparse
import collections
import sys
from typing import Any, BinaryIO

from replog.cli.bootstrap import add_cluster_arguments, bootstrap_address
from replog.cli.names import topic_name
from replog.client import Admin, ClientError, Producer
from replog.client.producer import RecordFuture

REPORT_EVERY_LINES = 1024  # how often acknowledged lines are reported while input keeps coming


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("produce", help="send the lines of stdin as records",
                                 description="Send each line of stdin as one record (without its line end).")
    parser.add_argument("topic", type=topic_name)
    parser.add_argument("--acks", choices=["0", "1", "all", "-1"], default="all",
                        help="acknowledgements to wait for (default all)")
    parser.add_argument("--key-separator", metavar="SEP",
                        help="split each line at the first SEP into key and value")
    parser.add_argument("--report-offsets", action="store_true",
                        help="print partition<TAB>offset<TAB>line for each acknowledged line")
    add_cluster_arguments(parser)
    parser.set_defaults(handler=_produce)


def _produce(args: argparse.Namespace) -> int:
    separator = args.key_separator.encode() if args.key_separator is not None else None
    if separator == b"":
        raise ClientError("--key-separator must not be empty")
    bootstrap = bootstrap_address(args)
    with Admin(bootstrap) as admin:
        admin.describe_topics([args.topic])  # an unknown topic fails here, before any input is read
    with Producer(bootstrap, acks=args.acks) as producer:
        return produce_lines(producer, args.topic, sys.stdin.buffer, sys.stdout.buffer, separator,
                             report_offsets=args.report_offsets)


def produce_lines(producer: Producer, topic: str, lines: BinaryIO, out: BinaryIO, separator: bytes | None, *,
                  report_offsets: bool) -> int:
    pending: collections.deque[tuple[RecordFuture, bytes]] = collections.deque()
    failures = 0
    first_error: BaseException | None = None
    for number, raw in enumerate(lines, start=1):
        line = raw[:-1] if raw.endswith(b"\n") else raw
        line = line[:-1] if line.endswith(b"\r") else line
        key = None
        value = line
        if separator is not None:
            key, found, value = line.partition(separator)
            if not found:
                raise ClientError(f"line {number} has no key separator {separator.decode()!r}")
        pending.append((producer.send(topic, value, key=key), line))
        if number % REPORT_EVERY_LINES == 0:
            failures, first_error = _report(pending, out, report_offsets, failures, first_error, wait=False)
    producer.flush()
    failures, first_error = _report(pending, out, report_offsets, failures, first_error, wait=True)
    if failures:
        raise ClientError(f"{failures} lines were not written; the first failed with: {first_error}")
    return 0


def _report(pending, out: BinaryIO, report_offsets: bool, failures: int, first_error, *, wait: bool):
    """Report acknowledged lines in input order; with wait, every line."""
    while pending and (wait or pending[0][0].done()):
        future, line = pending.popleft()
        error = future.exception()
        if error is not None:
            failures += 1
            first_error = first_error or error
            continue
        if report_offsets:
            metadata = future.result()
            out.write(b"%d\t%d\t%s\n" % (metadata.partition, metadata.offset, line))
    if report_offsets:
        out.flush()
    return failures, first_error
