"""`replog produce TOPIC`: one record per line of stdin (kafka-console-producer)."""

from __future__ import annotations

import argparse
import collections
import sys
from typing import Any, BinaryIO

from replog.cli.bootstrap import add_cluster_arguments, bootstrap_address
from replog.cli.line_format import LineFormat, line_format
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
                        help="split each line at the first SEP into key and value (--property parse.key=true "
                        "--property key.separator=SEP)")
    parser.add_argument("--property", action="append", default=[], metavar="KEY=VALUE",
                        help="kafka-console-producer's reader properties: parse.key, parse.headers (true|false), "
                        "key.separator (a tab), headers.delimiter (a tab), headers.separator (,), "
                        "headers.key.separator (:), null.marker; a line is [headers<TAB>][key<TAB>]value, "
                        "the headers k1:v1,k2:v2")
    parser.add_argument("--report-offsets", action="store_true",
                        help="print partition<TAB>offset<TAB>line for each acknowledged line")
    add_cluster_arguments(parser)
    parser.set_defaults(handler=_produce)


def _produce(args: argparse.Namespace) -> int:
    read = line_format(args.property, args.key_separator)
    bootstrap = bootstrap_address(args)
    with Admin(bootstrap) as admin:
        admin.describe_topics([args.topic])  # an unknown topic fails here, before any input is read
    with Producer(bootstrap, acks=args.acks) as producer:
        return produce_lines(producer, args.topic, sys.stdin.buffer, sys.stdout.buffer, read,
                             report_offsets=args.report_offsets)


def produce_lines(producer: Producer, topic: str, lines: BinaryIO, out: BinaryIO, read: LineFormat, *,
                  report_offsets: bool) -> int:
    pending: collections.deque[tuple[RecordFuture, bytes]] = collections.deque()
    failures = 0
    first_error: BaseException | None = None
    for number, raw in enumerate(lines, start=1):
        line = raw[:-1] if raw.endswith(b"\n") else raw
        line = line[:-1] if line.endswith(b"\r") else line
        key, value, headers = read.parse(line, number)
        pending.append((producer.send(topic, value, key=key, headers=headers or None), line))
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
