"""`replog groups list|describe|reset-offsets|delete`: consumer groups, as kafka-consumer-groups shows them."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from replog.cli.bootstrap import add_cluster_arguments, command_admin
from replog.cli.names import topic_name
from replog.cli.numbers import INT32_MAX, OFFSET, SHIFT, first_out_of_range
from replog.client import Admin, AdminError, ClientError, GroupDescription, OffsetAndMetadata, TopicPartition
from replog.core.errors import ErrorCode

OFFSETS_HEADER = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST",
                  "CLIENT-ID")
MEMBERS_HEADER = ("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                  "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT")
STATE_HEADER = ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH",
                "#MEMBERS")
RESET_HEADER = ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")
NONE_SHOWN = "-"
INACTIVE_STATES = ("Empty", "Dead")
RESET_KINDS = ("to_earliest", "to_latest", "to_offset", "to_datetime", "shift_by")


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("groups", help="list, describe, reset and delete consumer groups",
                                 description="List, describe, reset and delete consumer groups "
                                 "(as kafka-consumer-groups does).")
    sub = parser.add_subparsers(dest="groups_command", metavar="ACTION", required=True)

    listing = sub.add_parser("list", help="list the groups")
    listing.add_argument("--json", action="store_true", help="print the stable JSON shape")
    add_cluster_arguments(listing)
    listing.set_defaults(handler=_list)

    describe = sub.add_parser("describe", help="show a group's offsets and lag, members, or state")
    describe.add_argument("group")
    view = describe.add_mutually_exclusive_group()
    view.add_argument("--offsets", action="store_true", help="each partition's committed offset, log end and lag "
                      "(the default)")
    view.add_argument("--members", action="store_true", help="each member, its epoch and its partitions")
    view.add_argument("--state", action="store_true", help="the group's state, epochs, assignor and coordinator")
    describe.add_argument("--json", action="store_true", help="print the stable JSON shape (all of it)")
    add_cluster_arguments(describe)
    describe.set_defaults(handler=_describe)

    reset = sub.add_parser("reset-offsets", help="move a group's committed offsets (only while it has no members)")
    reset.add_argument("--group", required=True)
    reset.add_argument("--topic", action="append", required=True, type=parse_topic_partitions, metavar="T[:P,...]",
                       help="a topic, or some of its partitions (orders:0,1); repeatable")
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true", help="the start of each log")
    target.add_argument("--to-latest", action="store_true", help="the end of each log")
    target.add_argument("--to-offset", type=OFFSET, metavar="N", help="this offset (kept within each log)")
    target.add_argument("--to-datetime", type=parse_datetime, metavar="ISO8601",
                        help="the first record at or after this time (2024-05-01T12:00:00, local time unless a "
                        "zone is given)")
    target.add_argument("--shift-by", type=SHIFT, metavar="N",
                        help="the committed offset plus N (kept within each log)")
    action = reset.add_mutually_exclusive_group()
    action.add_argument("--dry-run", action="store_true", help="only show the new offsets (the default)")
    action.add_argument("--execute", action="store_true", help="commit the new offsets")
    reset.add_argument("--json", action="store_true", help="print the stable JSON shape")
    add_cluster_arguments(reset)
    reset.set_defaults(handler=_reset)

    delete = sub.add_parser("delete", help="delete a group and its committed offsets (only without members)")
    delete.add_argument("group")
    delete.add_argument("--json", action="store_true", help="print the stable JSON shape")
    add_cluster_arguments(delete)
    delete.set_defaults(handler=_delete)


# -- arguments ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopicSelection:
    topic: str
    partitions: tuple[int, ...] | None  # None: every partition


def parse_topic_partitions(text: str) -> TopicSelection:
    """Kafka's --topic syntax: "orders" or "orders:0,1,2"."""
    topic, sep, partitions = text.partition(":")
    if not topic:
        raise argparse.ArgumentTypeError(f"--topic takes TOPIC or TOPIC:PARTITION[,PARTITION...], not {text!r}")
    topic_name(topic)
    if not sep:
        return TopicSelection(topic, None)
    try:
        numbers = tuple(sorted({int(p) for p in partitions.split(",")}))
    except ValueError:
        raise argparse.ArgumentTypeError(f"the partitions in {text!r} are not whole numbers separated by commas "
                                         "(orders:0,1)") from None
    problem = first_out_of_range(numbers, 0, INT32_MAX)
    if problem:
        raise argparse.ArgumentTypeError(f"a partition in {text!r}: {problem}")
    return TopicSelection(topic, numbers)


def parse_datetime(text: str) -> int:
    """An ISO 8601 time as ms since the Unix epoch; without a zone it is local time, as in Kafka."""
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 time such as 2024-05-01T12:00:00 or "
                                         "2024-05-01T12:00:00+02:00") from None
    try:
        ms = int((moment if moment.tzinfo else moment.astimezone()).timestamp() * 1000)
    except (OverflowError, ValueError, OSError):  # too far back for the local zone's rules
        ms = -1
    if ms < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is before 1970-01-01T00:00:00Z: record times start there")
    return ms


def _check_group(group: str) -> None:
    if not group.strip():
        raise ClientError("the group id must not be empty", ErrorCode.INVALID_GROUP_ID)


# -- list -----------------------------------------------------------------------------------------


def _list(args: argparse.Namespace) -> int:
    with command_admin(args) as admin:
        groups = admin.list_groups()
    if args.json:
        print(json.dumps({"groups": [{"group": g.group_id, "state": g.state, "type": g.type} for g in groups]},
                         indent=2))
    else:
        for group in groups:
            print(group.group_id)
    return 0


# -- describe ----------------------------------------------------------------------------------------


def _describe(args: argparse.Namespace) -> int:
    _check_group(args.group)
    with command_admin(args) as admin:
        description = _description(admin, args.group)
        if description is None:
            raise AdminError(f"group {args.group!r} does not exist; see `replog groups list`",
                             ErrorCode.GROUP_ID_NOT_FOUND)
        committed = admin.list_group_offsets(args.group)
        log_ends = _log_ends(admin, _offset_partitions(description, committed))
    report = describe_report(description, committed, log_ends)
    if args.json:
        print(json.dumps({"groups": [report]}, indent=2))
    elif args.members:
        print(members_text(description), end="")
    elif args.state:
        print(state_text(description), end="")
    else:
        if not description.members:
            print(f"Consumer group '{description.group_id}' has no active members.")
        print(offsets_text(report, description), end="")
    return 0


def _description(admin: Admin, group: str) -> GroupDescription | None:
    """The group, or None when it does not exist."""
    try:
        [description] = admin.describe_groups([group])
    except AdminError as error:
        if error.error_code is ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        raise
    return description


def _offset_partitions(description: GroupDescription, committed: Mapping[TopicPartition, Any]) -> set:
    return set(committed) | {tp for member in description.members for tp in member.assignment}


def _log_ends(admin: Admin, partitions: set[TopicPartition]) -> dict[TopicPartition, int]:
    """The log end offsets (high watermarks) of the partitions that still exist."""
    existing = {TopicPartition(t.name, p.partition) for t in admin.cluster().topics.values() for p in t.partitions}
    wanted = sorted(partitions & existing)
    return admin.list_offsets({tp: "latest" for tp in wanted}) if wanted else {}


def describe_report(description: GroupDescription, committed: Mapping[TopicPartition, OffsetAndMetadata],
                    log_ends: Mapping[TopicPartition, int]) -> dict:
    """One group in the stable JSON shape of `groups describe --json` (DESIGN §13)."""
    owner = {tp: m for m in description.members for tp in m.assignment}
    offsets = []
    for tp in sorted(_offset_partitions(description, committed)):
        current = committed[tp].offset if tp in committed else None
        log_end = log_ends.get(tp)
        offsets.append({
            "topic": tp.topic, "partition": tp.partition, "current_offset": current, "log_end_offset": log_end,
            "lag": max(log_end - current, 0) if current is not None and log_end is not None else None,
            "member_id": owner[tp].member_id if tp in owner else None,
        })
    return {
        "group": description.group_id, "state": description.state, "group_epoch": description.group_epoch,
        "assignor": description.assignor,
        "members": [{
            "member_id": m.member_id, "instance_id": m.instance_id, "client_id": m.client_id, "host": m.host,
            "member_epoch": m.member_epoch,
            "assignment": [{"topic": tp.topic, "partition": tp.partition} for tp in sorted(m.assignment)],
        } for m in description.members],
        "offsets": offsets,
    }


def offsets_text(report: dict, description: GroupDescription) -> str:
    members = {m.member_id: m for m in description.members}
    rows = []
    for row in report["offsets"]:
        member = members.get(row["member_id"])
        rows.append((report["group"], row["topic"], row["partition"], row["current_offset"], row["log_end_offset"],
                     row["lag"], row["member_id"], member.host if member else None,
                     member.client_id if member else None))
    return "\n" + columns(OFFSETS_HEADER, rows)


def members_text(description: GroupDescription) -> str:
    rows = [(description.group_id, m.member_id, m.instance_id, m.host, m.client_id, len(m.assignment),
             m.member_epoch, _assignment(m.assignment), description.assignment_epoch, _assignment(m.target_assignment))
            for m in description.members]
    if not rows:
        return f"\nConsumer group '{description.group_id}' has no active members.\n"
    return "\n" + columns(MEMBERS_HEADER, rows)


def state_text(description: GroupDescription) -> str:
    row = (description.group_id, f"{description.coordinator} ({description.coordinator_id})",
           description.assignor or None, description.state, description.group_epoch, description.assignment_epoch,
           len(description.members))
    return "\n" + columns(STATE_HEADER, [row])


def _assignment(partitions: frozenset[TopicPartition]) -> str:
    """Kafka's verbose form: topic(0,1,2), topics separated by commas."""
    by_topic: dict[str, list[int]] = {}
    for tp in sorted(partitions):
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ",".join(f"{t}({','.join(str(p) for p in ps)})" for t, ps in by_topic.items()) or NONE_SHOWN


def columns(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A table as Kafka's tools print one: left-aligned columns, "-" for what is unknown."""
    cells = [list(header)] + [[NONE_SHOWN if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "".join(" ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() + "\n" for row in cells)


# -- reset-offsets -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LogBounds:
    earliest: int
    latest: int
    at_time: int | None = None  # the first offset at or after --to-datetime; -1: none


def reset_target(kind: str, value: int | None, current: int | None, bounds: LogBounds,
                 tp: TopicPartition) -> tuple[int, str | None]:
    """The new offset for one partition, and a warning when it was brought within the log (as Kafka does)."""
    if kind == "to_earliest":
        return bounds.earliest, None
    if kind == "to_latest":
        return bounds.latest, None
    if kind == "to_datetime":
        return (bounds.at_time if bounds.at_time is not None and bounds.at_time >= 0 else bounds.latest), None
    if kind == "shift_by":
        if current is None:
            raise ClientError(f"cannot shift the offset of {tp}: the group has no committed offset for it; "
                              "use --to-earliest, --to-latest, --to-offset or --to-datetime")
        wanted = current + value
    else:
        wanted = value
    if wanted > bounds.latest:
        return bounds.latest, f"new offset {wanted} is past the end of {tp}; it is set to {bounds.latest}"
    if wanted < bounds.earliest:
        return bounds.earliest, f"new offset {wanted} is before the start of {tp}; it is set to {bounds.earliest}"
    return wanted, None


def reset_kind(args: argparse.Namespace) -> str:
    """Which of the exclusive --to-*/--shift-by flags was given (--to-offset 0 counts)."""
    return next(k for k in RESET_KINDS if getattr(args, k) is not None and getattr(args, k) is not False)


def _reset(args: argparse.Namespace) -> int:
    _check_group(args.group)
    kind = reset_kind(args)
    value = getattr(args, kind) if kind in ("to_offset", "shift_by") else None
    with command_admin(args) as admin:
        _refuse_active(admin, args.group)
        partitions = _selected_partitions(admin, args.topic)
        committed = admin.list_group_offsets(args.group, partitions)
        bounds = _bounds(admin, partitions, args.to_datetime if kind == "to_datetime" else None)
        new_offsets, warnings = {}, []
        for tp in partitions:
            current = committed[tp].offset if tp in committed else None
            new_offsets[tp], warning = reset_target(kind, value, current, bounds[tp], tp)
            if warning:
                warnings.append(warning)
        if args.execute:
            admin.alter_group_offsets(args.group, new_offsets)
    for warning in warnings:
        print(f"replog: {warning}", file=sys.stderr)
    rows = [(args.group, tp.topic, tp.partition, new_offsets[tp]) for tp in partitions]
    if args.json:
        print(json.dumps({"group": args.group, "executed": bool(args.execute), "offsets": [
            {"topic": tp.topic, "partition": tp.partition,
             "current_offset": committed[tp].offset if tp in committed else None, "new_offset": new_offsets[tp]}
            for tp in partitions]}, indent=2))
    else:
        print("\n" + columns(RESET_HEADER, rows), end="")
    if not args.execute:
        print("replog: a dry run changes nothing; add --execute to commit these offsets", file=sys.stderr)
    return 0


def _refuse_active(admin: Admin, group: str) -> None:
    description = _description(admin, group)
    if description is None:
        return  # a group that does not exist yet may be given offsets to start from, as in Kafka
    if description.members or description.state not in INACTIVE_STATES:
        raise ClientError(f"offsets can only be reset while group '{group}' is inactive, but it is "
                          f"{description.state} with {len(description.members)} member(s); stop its consumers first",
                          ErrorCode.NON_EMPTY_GROUP)


def _selected_partitions(admin: Admin, selections: list[TopicSelection]) -> list[TopicPartition]:
    described = {t.name: t for t in admin.describe_topics(sorted({s.topic for s in selections}))}
    partitions: set[TopicPartition] = set()
    for selection in selections:
        count = len(described[selection.topic].partitions)
        for p in selection.partitions if selection.partitions is not None else range(count):
            if p >= count:
                raise ClientError(f"topic {selection.topic!r} has partitions 0..{count - 1}, not {p}",
                                  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            partitions.add(TopicPartition(selection.topic, p))
    return sorted(partitions)


def _bounds(admin: Admin, partitions: list[TopicPartition], at_ms: int | None) -> dict[TopicPartition, LogBounds]:
    earliest = admin.list_offsets({tp: "earliest" for tp in partitions})
    latest = admin.list_offsets({tp: "latest" for tp in partitions})
    at_time = admin.list_offsets({tp: at_ms for tp in partitions}) if at_ms is not None else {}
    return {tp: LogBounds(earliest[tp], latest[tp], at_time.get(tp)) for tp in partitions}


# -- delete --------------------------------------------------------------------------------------------


def _delete(args: argparse.Namespace) -> int:
    _check_group(args.group)
    with command_admin(args) as admin:
        admin.delete_groups([args.group])
    if args.json:
        print(json.dumps({"deleted": [args.group]}))
    else:
        print(f"Deletion of requested consumer groups ('{args.group}') was successful.")
    return 0
