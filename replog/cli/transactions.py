"""`replog transactions list|describe` and `replog producers`: transactional ids and the producers of a
partition, as kafka-transactions.sh shows them (list, describe, describe-producers)."""

from __future__ import annotations

import argparse
import datetime
import json
import time
from collections.abc import Sequence
from typing import Any

from replog.cli.bootstrap import add_cluster_arguments, bootstrap_address
from replog.cli.groups import columns
from replog.client import (
    Admin,
    ClientError,
    ProducerDescription,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)
from replog.core.errors import ErrorCode

LIST_HEADER = ("TRANSACTIONAL-ID", "PRODUCER-ID", "STATE")
DESCRIBE_HEADER = ("COORDINATOR-ID", "TRANSACTIONAL-ID", "PRODUCER-ID", "PRODUCER-EPOCH", "STATE",
                   "TRANSACTION-TIMEOUT-MS", "CURRENT-TRANSACTION-START-TIME", "TRANSACTION-DURATION-MS",
                   "TOPIC-PARTITIONS")
PRODUCERS_HEADER = ("PRODUCER-ID", "PRODUCER-EPOCH", "LATEST-COORDINATOR-EPOCH", "LAST-SEQUENCE", "LAST-TIMESTAMP",
                    "CURRENT-TRANSACTION-START-OFFSET")


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("transactions", help="list and describe transactional ids",
                                 description="List and describe transactional ids and their transactions "
                                 "(as kafka-transactions.sh does).")
    sub = parser.add_subparsers(dest="transactions_command", metavar="ACTION", required=True)

    listing = sub.add_parser("list", help="list the transactional ids, their producer ids and states")
    listing.add_argument("--json", action="store_true", help="print the stable JSON shape")
    add_cluster_arguments(listing)
    listing.set_defaults(handler=_list)

    describe = sub.add_parser("describe", help="show a transactional id's producer, state, timeout and open "
                              "transaction")
    describe.add_argument("transactional_id", metavar="ID")
    describe.add_argument("--json", action="store_true", help="print the stable JSON shape")
    add_cluster_arguments(describe)
    describe.set_defaults(handler=_describe)

    producers = commands.add_parser("producers", help="show the active producers of a partition",
                                    description="Show the producers a partition's leader keeps state for: "
                                    "ids, epochs, last sequence and timestamp, and the start of an open "
                                    "transaction (as kafka-transactions.sh describe-producers does).")
    producers.add_argument("--topic", required=True)
    producers.add_argument("--partition", type=int, required=True)
    producers.add_argument("--json", action="store_true", help="print the stable JSON shape")
    add_cluster_arguments(producers)
    producers.set_defaults(handler=_producers)


# -- list -----------------------------------------------------------------------------------------


def _list(args: argparse.Namespace) -> int:
    with Admin(bootstrap_address(args)) as admin:
        listed = admin.list_transactions()
    if args.json:
        print(json.dumps(list_report(listed), indent=2))
    else:
        print(columns(LIST_HEADER, [(t.transactional_id, t.producer_id, t.state) for t in listed]), end="")
    return 0


def list_report(listed: Sequence[TransactionListing]) -> dict:
    """`transactions list --json`: {"transactions": [{"transactional_id", "producer_id", "state"}]}."""
    return {"transactions": [{"transactional_id": t.transactional_id, "producer_id": t.producer_id,
                              "state": t.state} for t in listed]}


# -- describe -------------------------------------------------------------------------------------


def _describe(args: argparse.Namespace) -> int:
    if not args.transactional_id.strip():
        raise ClientError("the transactional id must not be empty", ErrorCode.INVALID_REQUEST)
    with Admin(bootstrap_address(args)) as admin:
        try:
            [description] = admin.describe_transactions([args.transactional_id])
        except ClientError as error:
            if error.error_code is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                raise ClientError(f"transactional id {args.transactional_id!r} does not exist; see "
                                  "`replog transactions list`", error.error_code) from None
            raise
    report = describe_report(description, now_ms=int(time.time() * 1000))
    if args.json:
        print(json.dumps({"transactions": [report]}, indent=2))
    else:
        print(describe_text(report), end="")
    return 0


def describe_report(description: TransactionDescription, *, now_ms: int) -> dict:
    """One transactional id in the stable JSON shape of `transactions describe --json`."""
    started = description.transaction_start_time_ms
    return {
        "transactional_id": description.transactional_id, "coordinator_id": description.coordinator_id,
        "state": description.state, "producer_id": description.producer_id,
        "producer_epoch": description.producer_epoch,
        "transaction_timeout_ms": description.transaction_timeout_ms,
        "transaction_start_time_ms": started if started >= 0 else None,
        "transaction_duration_ms": max(now_ms - started, 0) if started >= 0 else None,
        "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in description.partitions],
    }


def describe_text(report: dict) -> str:
    started = report["transaction_start_time_ms"]
    partitions = ",".join(f"{p['topic']}-{p['partition']}" for p in report["partitions"]) or None
    return columns(DESCRIBE_HEADER, [(
        report["coordinator_id"], report["transactional_id"], report["producer_id"], report["producer_epoch"],
        report["state"], report["transaction_timeout_ms"], None if started is None else _iso(started),
        report["transaction_duration_ms"], partitions,
    )])


# -- producers ------------------------------------------------------------------------------------


def _producers(args: argparse.Namespace) -> int:
    if args.partition < 0:
        raise ClientError(f"--partition must not be negative, not {args.partition}")
    tp = TopicPartition(args.topic, args.partition)
    with Admin(bootstrap_address(args)) as admin:
        producers = admin.describe_producers([tp])[tp]
    report = producers_report(tp, producers)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(columns(PRODUCERS_HEADER, [(
            p["producer_id"], p["producer_epoch"], p["coordinator_epoch"], p["last_sequence"],
            None if p["last_timestamp_ms"] is None else _iso(p["last_timestamp_ms"]),
            p["current_transaction_start_offset"],
        ) for p in report["producers"]]), end="")
    return 0


def producers_report(tp: TopicPartition, producers: Sequence[ProducerDescription]) -> dict:
    """`producers --json`: {"topic", "partition", "producers": [{"producer_id", "producer_epoch",
    "coordinator_epoch", "last_sequence", "last_timestamp_ms", "current_transaction_start_offset"}]};
    what is unknown is null."""
    def known(value: int) -> int | None:
        return value if value >= 0 else None

    return {"topic": tp.topic, "partition": tp.partition, "producers": [{
        "producer_id": p.producer_id, "producer_epoch": p.producer_epoch,
        "coordinator_epoch": known(p.coordinator_epoch), "last_sequence": known(p.last_sequence),
        "last_timestamp_ms": known(p.last_timestamp_ms),
        "current_transaction_start_offset": known(p.current_transaction_start_offset),
    } for p in producers]}


def _iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds")
