"""`replog topics create|describe|list|delete|alter`, with kafka-topics' flags and layout."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from replog.cli.bootstrap import add_cluster_arguments, command_admin
from replog.cli.names import topic_name
from replog.cli.numbers import COUNT, INT32_MAX, first_out_of_range
from replog.client import Admin, AdminError, NewTopic, TopicDescription
from replog.client.errors import ServerUnsupportedError
from replog.core.errors import ErrorCode


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("topics", help="create, describe, list, delete and grow topics",
                                 description="Create, describe, list, delete and grow topics (as kafka-topics does).")
    sub = parser.add_subparsers(dest="topics_command", metavar="ACTION", required=True)

    create = sub.add_parser("create", help="create a topic")
    create.add_argument("topic", type=topic_name)
    create.add_argument("--partitions", type=COUNT, help="number of partitions (default: the cluster's)")
    create.add_argument("--replication-factor", type=COUNT,
                        help="replicas per partition (default: the cluster's)")
    create.add_argument("--replica-assignment", type=parse_replica_assignment, metavar="0:1,1:2,2:0",
                        help="the replicas of each partition: partitions separated by commas, the broker ids "
                        "of one partition's replicas by colons, preferred leader first")
    create.add_argument("--config", action="append", default=[], type=parse_config, metavar="KEY=VALUE",
                        help="a topic config, e.g. min.insync.replicas=2 (repeatable)")
    create.add_argument("--if-not-exists", action="store_true", help="succeed if the topic exists already")
    add_cluster_arguments(create)
    create.set_defaults(handler=_create)

    describe = sub.add_parser("describe", help="show partitions, leaders, replicas and ISR")
    describe.add_argument("topic", nargs="?", type=topic_name, help="one topic (default: all)")
    describe.add_argument("--json", action="store_true", help="print the stable JSON shape")
    describe.add_argument("--under-replicated-partitions", action="store_true",
                          help="only partitions whose ISR is smaller than their replicas")
    describe.add_argument("--unavailable-partitions", action="store_true",
                          help="only partitions without a live leader")
    add_cluster_arguments(describe)
    describe.set_defaults(handler=_describe)

    listing = sub.add_parser("list", help="list the topic names")
    add_cluster_arguments(listing)
    listing.set_defaults(handler=_list)

    delete = sub.add_parser("delete", help="delete a topic and its data on every broker")
    delete.add_argument("topic", type=topic_name)
    add_cluster_arguments(delete)
    delete.set_defaults(handler=_delete)

    alter = sub.add_parser("alter", help="add partitions to a topic")
    alter.add_argument("topic", type=topic_name)
    alter.add_argument("--partitions", type=COUNT, required=True,
                       help="the topic's new number of partitions (only ever more)")
    add_cluster_arguments(alter)
    alter.set_defaults(handler=_alter)


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """Kafka's "0:1,1:2,2:0": partition 0 on brokers 0 and 1, partition 1 on 1 and 2, ..."""
    assignment: dict[int, list[int]] = {}
    for partition, replicas in enumerate(text.split(",")):
        try:
            ids = [int(broker) for broker in replicas.split(":")]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r} is not a replica assignment: write the broker ids of each partition's replicas "
                "separated by colons, and the partitions separated by commas (e.g. 1:2,2:3,3:1)") from None
        problem = first_out_of_range(ids, 0, INT32_MAX)
        if problem:
            raise argparse.ArgumentTypeError(f"a broker id in {text!r}: {problem}")
        if len(set(ids)) != len(ids):
            raise argparse.ArgumentTypeError(f"partition {partition} lists a broker twice in {text!r}")
        assignment[partition] = ids
    if len({len(ids) for ids in assignment.values()}) != 1:
        raise argparse.ArgumentTypeError(f"every partition needs the same number of replicas in {text!r}")
    return assignment


def parse_config(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--config takes KEY=VALUE, not {text!r}")
    return key.strip(), value.strip()


def _create(args: argparse.Namespace) -> int:
    if args.replica_assignment is not None and (args.partitions or args.replication_factor):
        raise AdminError("give either --replica-assignment or --partitions/--replication-factor, not both",
                         ErrorCode.INVALID_REQUEST)
    topic = NewTopic(
        args.topic,
        num_partitions=args.partitions or -1,
        replication_factor=args.replication_factor or -1,
        replica_assignment=args.replica_assignment,
        configs=dict(args.config),
    )
    with command_admin(args) as admin:
        try:
            admin.create_topics([topic])
        except AdminError as error:
            if args.if_not_exists and error.error_code is ErrorCode.TOPIC_ALREADY_EXISTS:
                return 0
            raise
    print(f"Created topic {args.topic}.")
    return 0


def _describe(args: argparse.Namespace) -> int:
    partitions_only = args.under_replicated_partitions or args.unavailable_partitions
    with command_admin(args) as admin:
        topics = admin.describe_topics([args.topic] if args.topic else None)
        configs, note = _configs(admin, [t.name for t in topics]) if args.json or not partitions_only else ({}, None)
    if note:
        print(f"replog: {note}", file=sys.stderr)
    report = describe_report(topics, configs, under_replicated=args.under_replicated_partitions,
                             unavailable=args.unavailable_partitions)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(describe_text(report, topics, partitions_only=partitions_only), end="")
    return 0


def _configs(admin: Admin, names: list[str]) -> tuple[dict[str, dict[str, str]], str | None]:
    try:
        return admin.describe_configs(names), None
    except ServerUnsupportedError:
        return {}, "topic configs are not shown: the controller does not serve DescribeConfigs yet"


def describe_report(topics: list[TopicDescription], configs: dict[str, dict[str, str]], *,
                    under_replicated: bool = False, unavailable: bool = False) -> dict:
    """The stable JSON shape of `topics describe --json` (DESIGN §9)."""
    report = []
    for topic in topics:
        partitions = [
            {"partition": p.partition, "leader": p.leader, "leader_epoch": p.leader_epoch,
             "replicas": list(p.replicas), "isr": list(p.isr)}
            for p in topic.partitions
            if (not under_replicated or len(p.isr) < len(p.replicas))
            and (not unavailable or p.leader < 0 or p.leader in p.offline_replicas)
        ]
        if partitions or not (under_replicated or unavailable):
            report.append({"name": topic.name, "configs": dict(sorted(configs.get(topic.name, {}).items())),
                           "partitions": partitions})
    return {"topics": report}


def describe_text(report: dict, topics: list[TopicDescription], *, partitions_only: bool = False) -> str:
    """Kafka's layout: a summary line per topic, then one line per partition."""
    by_name = {t.name: t for t in topics}
    lines = []
    for topic in report["topics"]:
        described = by_name[topic["name"]]
        if not partitions_only:
            configs = ",".join(f"{k}={v}" for k, v in topic["configs"].items())
            replication = len(described.partitions[0].replicas) if described.partitions else 0
            lines.append(f"Topic: {topic['name']}  TopicId: {described.topic_id}  "
                         f"PartitionCount: {len(described.partitions)}  ReplicationFactor: {replication}  "
                         f"Configs: {configs}")
        offline = {p.partition: p.offline_replicas for p in described.partitions}
        for part in topic["partitions"]:
            leader = part["leader"] if part["leader"] >= 0 else "none"
            line = (f"Topic: {topic['name']}  Partition: {part['partition']}  Leader: {leader}  "
                    f"Replicas: {_ids(part['replicas'])}  Isr: {_ids(part['isr'])}")
            if offline[part["partition"]]:
                line += f"  Offline: {_ids(offline[part['partition']])}"
            lines.append(line)
    return "".join(line + "\n" for line in lines)


def _ids(ids: list[int] | tuple[int, ...]) -> str:
    return ",".join(str(i) for i in ids)


def _list(args: argparse.Namespace) -> int:
    with command_admin(args) as admin:
        for name in admin.list_topics():
            print(name)
    return 0


# How long `topics delete` waits for the brokers to delete the topic's replicas.
DELETE_WAIT_MS = 30_000


def _delete(args: argparse.Namespace) -> int:
    with command_admin(args) as admin:
        try:
            admin.delete_topics([args.topic], timeout_ms=DELETE_WAIT_MS)
        except AdminError as error:
            if error.error_code is not ErrorCode.REQUEST_TIMED_OUT:
                raise
            print(f"Topic {args.topic} is marked for deletion and not gone yet ({error.message}).")
            return 0
    print(f"Deleted topic {args.topic}.")
    return 0


def _alter(args: argparse.Namespace) -> int:
    with command_admin(args) as admin:
        admin.create_partitions({args.topic: args.partitions})
    print(f"Topic {args.topic} now has {args.partitions} partitions.")
    return 0
