"""`replog leader-election`, as kafka-leader-election: preferred or unclean elections on demand."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from replog.cli.bootstrap import add_cluster_arguments, command_admin
from replog.cli.names import topic_name
from replog.cli.numbers import PARTITION
from replog.client import AdminError, TopicPartition
from replog.core.errors import ErrorCode


def add_commands(commands: Any) -> None:
    parser = commands.add_parser(
        "leader-election", help="move leadership to preferred replicas, or elect leaders for offline partitions",
        description="Run a preferred or unclean leader election (as kafka-leader-election does). preferred: "
        "the first replica leads again when it is alive and in the ISR. unclean: a partition without a live "
        "leader takes any live replica, which may lose records.")
    parser.add_argument("--election-type", choices=["preferred", "unclean"], required=True)
    parser.add_argument("--topic", type=topic_name, help="the topic of the partition to elect for (with --partition)")
    parser.add_argument("--partition", type=PARTITION, help="the partition to elect for (with --topic)")
    parser.add_argument("--all-topic-partitions", action="store_true", help="elect for every partition")
    add_cluster_arguments(parser)
    parser.set_defaults(handler=_elect)


def _elect(args: argparse.Namespace) -> int:
    if args.all_topic_partitions == (args.topic is not None or args.partition is not None):
        raise AdminError("give either --topic T --partition P, or --all-topic-partitions", ErrorCode.INVALID_REQUEST)
    if not args.all_topic_partitions and (args.topic is None or args.partition is None):
        raise AdminError("--topic and --partition go together", ErrorCode.INVALID_REQUEST)
    partitions = None if args.all_topic_partitions else [TopicPartition(args.topic, args.partition)]
    with command_admin(args) as admin:
        results = admin.elect_leaders(args.election_type, partitions)
    kind = args.election_type.upper()
    elected = [tp for tp, r in results.items() if r.error_code is ErrorCode.NONE]
    needless = [tp for tp, r in results.items() if r.error_code is ErrorCode.ELECTION_NOT_NEEDED]
    failed = {tp: r for tp, r in results.items() if r.error_code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)}
    if elected:
        print(f"Successfully completed leader election ({kind}) for partitions {_names(elected)}")
    if needless and not args.all_topic_partitions:
        print(f"Valid replica already elected for partitions {_names(needless)}")
    for partition, result in failed.items():
        print(f"Error completing leader election ({kind}) for partition {partition}: {result.error_code.name}: "
              f"{result.message}", file=sys.stderr)
    if not elected and not failed and args.all_topic_partitions:
        print(f"No partition needed a leader election ({kind}).")
    return 1 if failed else 0


def _names(partitions: list[TopicPartition]) -> str:
    return ", ".join(str(tp) for tp in partitions)
