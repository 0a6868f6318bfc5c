"""`replog log-dirs describe`, as kafka-log-dirs --describe: each broker's log dirs and the replicas in them."""

from __future__ import annotations

import argparse
import json
from typing import Any

from replog.cli.bootstrap import add_cluster_arguments, command_admin
from replog.cli.lists import whole_numbers
from replog.client import AdminError, LogDirDescription
from replog.core.errors import ErrorCode


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("log-dirs", help="show brokers' log dirs and the size of each replica in them")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    describe = actions.add_parser(
        "describe", help="each broker's log dirs, their free space, and their replicas' sizes and offsets",
        description="Ask each broker for its log dirs (as kafka-log-dirs --describe does): the filesystem's size "
        "and free space, and every partition replica in the dir with its size on disk, log start, log end and "
        "high watermark.")
    describe.add_argument("--broker-list", metavar="ID[,ID...]", help="the brokers to ask (default: every live one)")
    describe.add_argument("--topic-list", metavar="T[,T...]", help="only these topics' replicas (default: all)")
    describe.add_argument("--json", action="store_true",
                          help='print {"brokers": [{"broker", "logDirs": [{"logDir", "error", "totalBytes", '
                          '"usableBytes", "partitions": [{"partition", "size", ...}]}]}]}')
    add_cluster_arguments(describe)
    describe.set_defaults(handler=_describe)


def _describe(args: argparse.Namespace) -> int:
    brokers = whole_numbers(args.broker_list, "--broker-list", "broker ids", "1,2")
    topics = _names(args.topic_list)
    with command_admin(args) as admin:
        described = admin.describe_log_dirs(brokers, topics)
    if args.json:
        print(json.dumps(log_dirs_json(described), indent=2))
        return 0
    for broker, log_dirs in sorted(described.items()):
        for log_dir in log_dirs:
            room = (f"{_size(log_dir.usable_bytes)} free of {_size(log_dir.total_bytes)}"
                    if log_dir.total_bytes >= 0 else "size unknown")
            status = "" if log_dir.error is ErrorCode.NONE else f"  ERROR {log_dir.error.name}"
            print(f"Broker: {broker}  LogDir: {log_dir.log_dir}  {room}  "
                  f"Replicas: {len(log_dir.replicas)}{status}")
            for tp, replica in sorted(log_dir.replicas.items()):
                role = "leader" if replica.leader else "follower"
                print(f"  {tp}  size: {replica.size_bytes}  log start: {replica.log_start_offset}  "
                      f"log end: {replica.log_end_offset}  high watermark: {replica.high_watermark}  {role}")
    return 0


def log_dirs_json(described: dict[int, list[LogDirDescription]]) -> dict[str, Any]:
    """`log-dirs describe --json`: kafka-log-dirs' shape, with each replica's offsets and role besides."""
    return {"brokers": [{"broker": broker, "logDirs": [{
        "logDir": log_dir.log_dir,
        "error": None if log_dir.error is ErrorCode.NONE else log_dir.error.name,
        "totalBytes": log_dir.total_bytes, "usableBytes": log_dir.usable_bytes,
        "partitions": [{"partition": str(tp), "size": replica.size_bytes, "logStartOffset": replica.log_start_offset,
                        "logEndOffset": replica.log_end_offset, "highWatermark": replica.high_watermark,
                        "leader": replica.leader} for tp, replica in sorted(log_dir.replicas.items())],
    } for log_dir in log_dirs]} for broker, log_dirs in sorted(described.items())]}


def _names(given: str | None) -> list[str] | None:
    if given is None:
        return None
    names = [part.strip() for part in given.split(",")]
    if not all(names):
        raise AdminError(f"--topic-list takes topic names separated by commas, not {given!r}",
                         ErrorCode.INVALID_REQUEST)
    return names


def _size(count: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1024
    return str(count)
