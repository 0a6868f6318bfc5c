"""`replog get-offsets`, as kafka-get-offsets: partitions' earliest or latest offsets, or the offsets at a time."""

from __future__ import annotations

import argparse
import json
from typing import Any

from replog.cli.bootstrap import add_cluster_arguments, command_admin
from replog.cli.lists import whole_numbers
from replog.cli.names import topic_name
from replog.cli.numbers import INT64_MAX, out_of_range
from replog.client import AdminError, TopicPartition
from replog.core.errors import ErrorCode

TIMES = {"latest": "latest", "-1": "latest", "earliest": "earliest", "-2": "earliest"}


def add_commands(commands: Any) -> None:
    parser = commands.add_parser(
        "get-offsets", help="show partitions' earliest or latest offsets, or the offsets at a time",
        description="Print TOPIC:PARTITION:OFFSET for each partition (as kafka-get-offsets does), asking each "
        "partition's leader: the latest offset (the high watermark: the next record's offset), the earliest (the "
        "log start), or the first offset whose record is at or after a time (-1 when there is none).")
    parser.add_argument("--topic", type=topic_name, required=True)
    parser.add_argument("--partitions", metavar="P[,P...]",
                        help="comma-separated partitions of --topic (default: every partition)")
    parser.add_argument("--time", default="latest", metavar="latest|earliest|MS",
                        help="latest (-1, the default), earliest (-2), or milliseconds since the Unix epoch")
    parser.add_argument("--isolation-level", choices=["read_uncommitted", "read_committed"],
                        default="read_uncommitted",
                        help="read_committed: the latest offset is the last stable offset")
    parser.add_argument("--json", action="store_true",
                        help='print {"offsets": [{"topic", "partition", "offset"}]}')
    add_cluster_arguments(parser)
    parser.set_defaults(handler=_get_offsets)


def _get_offsets(args: argparse.Namespace) -> int:
    spec = time_spec(args.time)
    wanted = partitions_of(args.partitions)
    with command_admin(args) as admin:
        if wanted is None:
            wanted = [p.partition for p in admin.describe_topics([args.topic])[0].partitions]
        offsets = admin.list_offsets({TopicPartition(args.topic, p): spec for p in wanted},
                                     isolation_level=args.isolation_level)
    found = sorted(offsets.items())
    if args.json:
        print(json.dumps({"offsets": [{"topic": tp.topic, "partition": tp.partition, "offset": offset}
                                      for tp, offset in found]}, indent=2))
    else:
        for tp, offset in found:
            print(f"{tp.topic}:{tp.partition}:{offset}")
    return 0


def time_spec(given: str) -> str | int:
    """--time as Admin.list_offsets takes it."""
    text = given.strip().lower()
    if text in TIMES:
        return TIMES[text]
    if text.isascii() and text.isdigit():
        problem = out_of_range(int(text), 0, INT64_MAX)
        if problem:
            raise AdminError(f"--time: {problem}", ErrorCode.INVALID_REQUEST)
        return int(text)
    raise AdminError(f"--time takes latest (-1), earliest (-2) or milliseconds since the Unix epoch, not {given!r}",
                     ErrorCode.INVALID_REQUEST)


def partitions_of(given: str | None) -> list[int] | None:
    """--partitions as a list of indexes; None for every partition."""
    numbers = whole_numbers(given, "--partitions", "partition numbers", "0,2,5")
    return None if numbers is None else sorted(set(numbers))
