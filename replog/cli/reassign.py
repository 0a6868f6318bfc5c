"""`replog reassign`: move a partition to other replicas, and watch it happen.

Kafka's kafka-reassign-partitions reads a JSON plan; one partition on the
command line is what an operator types most. With --wait the command follows
the reassignment until it is done: the replicas being added catch up and join
the ISR, then the controller drops the replicas that leave.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from replog.cli.bootstrap import add_cluster_arguments, command_admin
from replog.cli.names import topic_name
from replog.cli.numbers import INT32_MAX, PARTITION, first_out_of_range
from replog.client import Admin, AdminError, TopicPartition
from replog.client.types import PartitionInfo
from replog.core.errors import ErrorCode

POLL_S = 0.5


def add_commands(commands: Any) -> None:
    parser = commands.add_parser(
        "reassign", help="move a partition to other replicas",
        description="Move one partition to the given replicas (preferred leader first), or cancel its move.")
    parser.add_argument("--topic", type=topic_name, required=True)
    parser.add_argument("--partition", type=PARTITION, required=True)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--replicas", type=_broker_ids, metavar="1,2,3",
                        help="the broker ids of the new replicas, preferred leader first")
    target.add_argument("--cancel", action="store_true",
                        help="cancel the reassignment in progress and go back to the original replicas")
    parser.add_argument("--wait", action="store_true", help="show progress until the reassignment is done")
    add_cluster_arguments(parser)
    parser.set_defaults(handler=_reassign)


def _broker_ids(text: str) -> list[int]:
    try:
        ids = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of broker ids such as 1,2,3") from None
    problem = first_out_of_range(ids, 0, INT32_MAX)
    if problem:
        raise argparse.ArgumentTypeError(f"a broker id in {text!r}: {problem}")
    if len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"{text!r} names a broker twice")
    return ids


def _reassign(args: argparse.Namespace) -> int:
    partition = TopicPartition(args.topic, args.partition)
    with command_admin(args) as admin:
        before = _partition(admin, partition)
        prior = admin.list_partition_reassignments([partition]).get(partition)
        admin.alter_partition_reassignments({partition: None if args.cancel else args.replicas})
        ongoing = admin.list_partition_reassignments([partition]).get(partition)
        if args.cancel:
            # A cancel puts back the replicas the partition had before: what it has less what it was
            # adding (read from the controller now; the metadata service may not show it yet).
            original = [r for r in prior.replicas if r not in prior.adding_replicas] if prior else before.replicas
            print(f"Cancelled the reassignment of {partition}: its replicas are {_ids(original)} again.")
        elif ongoing is None:
            print(f"Reassignment of {partition} to {_ids(args.replicas)} is complete.")
        else:
            adding, removing = _ids(ongoing.adding_replicas) or "none", _ids(ongoing.removing_replicas) or "none"
            print(f"Reassignment of {partition} from {_ids(before.replicas)} to {_ids(args.replicas)} started: "
                  f"adding {adding}, removing {removing}.")
            if args.wait:
                _follow(admin, partition)
        if args.wait:
            now = _partition(admin, partition)
            print(f"Topic: {partition.topic}  Partition: {partition.partition}  Leader: {now.leader}  "
                  f"Replicas: {_ids(now.replicas)}  Isr: {_ids(now.isr)}")
    return 0


def _follow(admin: Admin, partition: TopicPartition) -> None:
    """Print a line whenever the ISR or the replica sets change, until the reassignment is gone."""
    started = time.monotonic()
    shown = None
    while True:
        ongoing = admin.list_partition_reassignments([partition]).get(partition)
        if ongoing is None:
            print(f"[{time.monotonic() - started:6.1f} s] done")
            return
        now = _partition(admin, partition)
        behind = [b for b in ongoing.adding_replicas if b not in now.isr]
        line = (f"{len(ongoing.adding_replicas) - len(behind)} of {len(ongoing.adding_replicas)} new replicas "
                f"in sync; leader {now.leader}, ISR {_ids(now.isr)}; catching up: {_ids(behind) or 'none'}")
        if line != shown:
            print(f"[{time.monotonic() - started:6.1f} s] {line}", flush=True)
            shown = line
        time.sleep(POLL_S)


def _partition(admin: Admin, partition: TopicPartition) -> PartitionInfo:
    (topic,) = admin.describe_topics([partition.topic])
    for info in topic.partitions:
        if info.partition == partition.partition:
            return info
    raise AdminError(f"topic {partition.topic!r} has no partition {partition.partition}",
                     ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partition.topic)


def _ids(ids: tuple[int, ...] | list[int]) -> str:
    return ",".join(str(i) for i in ids)
