"""`replog delete-records`, as kafka-delete-records: a partition's records before an offset deleted."""

from __future__ import annotations

import argparse
import json
from typing import Any

from replog.cli.bootstrap import add_cluster_arguments, command_admin
from replog.cli.json_files import file_error, is_whole, partition_entries
from replog.cli.names import topic_name
from replog.cli.numbers import INT64_MAX, PARTITION, out_of_range, whole_number
from replog.client import AdminError, TopicPartition
from replog.core.errors import ErrorCode

OPTION = "--offset-json-file"
OFFSET_FILE_SHAPE = '{"partitions": [{"topic": "T", "partition": 0, "offset": 42}], "version": 1}'


def add_commands(commands: Any) -> None:
    parser = commands.add_parser(
        "delete-records", help="delete a partition's records before an offset",
        description="Delete the records of partitions before given offsets (as kafka-delete-records does): each "
        "partition's log then starts at its offset on every replica, and consumers behind it move on as their "
        "auto.offset.reset says. Needs Delete on the topic. A topic that only compacts is refused.")
    parser.add_argument("--topic", type=topic_name, help="the topic (with --offset)")
    parser.add_argument("--partition", type=PARTITION, action="append",
                        help="a partition of --topic; repeat for more (default: every partition)")
    parser.add_argument("--offset", type=whole_number(-1, INT64_MAX),
                        help="delete the records before this offset; -1 deletes every record a consumer can read")
    parser.add_argument("--offset-json-file", metavar="FILE",
                        help=f"the partitions and offsets as kafka-delete-records takes them: {OFFSET_FILE_SHAPE}")
    parser.add_argument("--json", action="store_true",
                        help='print {"partitions": [{"topic", "partition", "low_watermark"}]}')
    add_cluster_arguments(parser)
    parser.set_defaults(handler=_delete)


def _delete(args: argparse.Namespace) -> int:
    if (args.offset_json_file is None) == (args.topic is None):
        raise AdminError("give --topic T --offset O [--partition P]..., or --offset-json-file FILE",
                         ErrorCode.INVALID_REQUEST)
    with command_admin(args) as admin:
        if args.offset_json_file is not None:
            if args.offset is not None or args.partition:
                raise AdminError("--offset-json-file names its partitions and offsets itself; leave out --offset "
                                 "and --partition", ErrorCode.INVALID_REQUEST)
            offsets = read_offset_file(args.offset_json_file)
        else:
            if args.offset is None:
                raise AdminError("--topic needs --offset: the records before it are deleted (-1: all a consumer "
                                 "can read)", ErrorCode.INVALID_REQUEST)
            partitions = args.partition
            if not partitions:
                topic = admin.describe_topics([args.topic])[0]
                partitions = [p.partition for p in topic.partitions]
            offsets = {TopicPartition(args.topic, p): args.offset for p in partitions}
        low_watermarks = admin.delete_records(offsets)
    if args.json:
        print(json.dumps({"partitions": [{"topic": tp.topic, "partition": tp.partition, "low_watermark": low}
                                         for tp, low in sorted(low_watermarks.items())]}, indent=2))
    else:
        print("Records delete operation completed:")
        for tp, low in sorted(low_watermarks.items()):
            print(f"partition: {tp}\tlow_watermark: {low}")
    return 0


def read_offset_file(path: str) -> dict[TopicPartition, int]:
    """kafka-delete-records' --offset-json-file, checked: AdminError names what is wrong."""
    offsets: dict[TopicPartition, int] = {}
    for index, tp, entry in partition_entries(OPTION, path, OFFSET_FILE_SHAPE, required=("offset",)):
        offset = entry["offset"]
        if not is_whole(offset):
            raise file_error(OPTION, path, f"partitions[{index}] needs a whole number for its offset, not "
                             f"{json.dumps(entry)}")
        problem = out_of_range(offset, -1, INT64_MAX)
        if problem:
            raise file_error(OPTION, path, f"partitions[{index}]'s offset: {problem}")
        offsets[tp] = offset
    return offsets
