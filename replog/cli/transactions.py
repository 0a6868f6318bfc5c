"""`replog transactions list|describe|find-hanging|abort` and `replog producers`: transactional ids, the
producers of a partition, and the transactions no coordinator will end, as kafka-transactions.sh shows
and ends them (list, describe, describe-producers, find-hanging, abort)."""

from __future__ import annotations

import argparse
import datetime
import json
import time
from collections.abc import Sequence
from typing import Any

from replog.cli.bootstrap import add_cluster_arguments, command_admin
from replog.cli.groups import columns
from replog.cli.names import topic_name
from replog.cli.numbers import BROKER_ID, INT32_MAX, OFFSET, PARTITION, PRODUCER_EPOCH, PRODUCER_ID, whole_number
from replog.client import (
    AbortTransactionSpec,
    Admin,
    ClientError,
    ProducerDescription,
    TopicPartition,
    TransactionDescription,
    TransactionListing,
)
from replog.core.errors import ErrorCode
from replog.core.txn.hanging import (
    MAX_TRANSACTION_TIMEOUT_MINUTES,
    CoordinatorView,
    HangingTransaction,
    OpenTransaction,
    abort_coordinator_epoch,
    abort_marker_epoch,
    candidates,
    hanging,
)

LIST_HEADER = ("TRANSACTIONAL-ID", "PRODUCER-ID", "STATE")
DESCRIBE_HEADER = ("COORDINATOR-ID", "TRANSACTIONAL-ID", "PRODUCER-ID", "PRODUCER-EPOCH", "STATE",
                   "TRANSACTION-TIMEOUT-MS", "CURRENT-TRANSACTION-START-TIME", "TRANSACTION-DURATION-MS",
                   "TOPIC-PARTITIONS")
HANGING_HEADER = ("TOPIC", "PARTITION", "PRODUCER-ID", "PRODUCER-EPOCH", "COORDINATOR-EPOCH", "START-OFFSET",
                  "LAST-TIMESTAMP", "DURATION-MIN", "TRANSACTIONAL-ID")
PRODUCERS_HEADER = ("PRODUCER-ID", "PRODUCER-EPOCH", "LATEST-COORDINATOR-EPOCH", "LAST-SEQUENCE", "LAST-TIMESTAMP",
                    "CURRENT-TRANSACTION-START-OFFSET")


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("transactions", help="list, describe, find hanging and abort transactions",
                                 description="List and describe transactional ids and their transactions, find "
                                 "hanging transactions and abort them (as kafka-transactions.sh does).")
    sub = parser.add_subparsers(dest="transactions_command", metavar="ACTION", required=True)

    listing = sub.add_parser("list", help="list the transactional ids, their producer ids and states")
    _finish(listing, _list)

    describe = sub.add_parser("describe", help="show a transactional id's producer, state, timeout and open "
                              "transaction")
    describe.add_argument("transactional_id", metavar="ID")
    _finish(describe, _describe)

    find = sub.add_parser("find-hanging", help="find transactions open on partitions that no coordinator will end",
                          description="List, per partition, the open transactions whose producer has written "
                          "nothing for --max-transaction-timeout minutes and that no coordinator will end: its "
                          "producer id has no transactional id, or its id's transaction does not name the "
                          "partition (as kafka-transactions.sh find-hanging does). Each holds its partition's "
                          "last stable offset: end it with `replog transactions abort`.")
    find.add_argument("--broker-id", type=BROKER_ID, help="search the partitions with a replica on this broker")
    find.add_argument("--topic", type=topic_name, help="search this topic's partitions")
    find.add_argument("--partition", type=PARTITION, help="only this partition of --topic")
    find.add_argument("--max-transaction-timeout", type=whole_number(0, INT32_MAX),
                      default=MAX_TRANSACTION_TIMEOUT_MINUTES,
                      metavar="MINUTES", help="only transactions whose producer has been silent longer than this "
                      f"(the brokers' transaction.max.timeout.ms; default {MAX_TRANSACTION_TIMEOUT_MINUTES})")
    _finish(find, _find_hanging)

    abort = sub.add_parser("abort", help="abort a hanging transaction on one partition (needs ClusterAction)",
                           description="Write an ABORT marker to a partition for a transaction open there, as "
                           "its coordinator would; its records become aborted and the partition's last stable "
                           "offset moves past it. Name the transaction by its start offset (from `find-hanging` "
                           "or `replog producers`), or by its producer id, producer epoch and coordinator epoch.")
    abort.add_argument("--topic", type=topic_name, required=True)
    abort.add_argument("--partition", type=PARTITION, required=True)
    abort.add_argument("--start-offset", type=OFFSET, help="the offset where the transaction began on the partition")
    abort.add_argument("--producer-id", type=PRODUCER_ID)
    abort.add_argument("--producer-epoch", type=PRODUCER_EPOCH, help="the producer's epoch on the partition")
    abort.add_argument("--coordinator-epoch", type=whole_number(-1, INT32_MAX),
                       help="the coordinator epoch of the producer's latest marker on the partition (-1 or 0 when "
                       "it has none)")
    _finish(abort, _abort)

    producers = commands.add_parser("producers", help="show the active producers of a partition",
                                    description="Show the producers a partition's leader keeps state for: "
                                    "ids, epochs, last sequence and timestamp, and the start of an open "
                                    "transaction (as kafka-transactions.sh describe-producers does).")
    producers.add_argument("--topic", type=topic_name, required=True)
    producers.add_argument("--partition", type=PARTITION, required=True)
    _finish(producers, _producers)


def _finish(parser: argparse.ArgumentParser, handler: Any) -> None:
    """What every command here takes last: --json, the cluster's address, and its handler."""
    parser.add_argument("--json", action="store_true", help="print the stable JSON shape")
    add_cluster_arguments(parser)
    parser.set_defaults(handler=handler)


# -- list -----------------------------------------------------------------------------------------


def _list(args: argparse.Namespace) -> int:
    with command_admin(args) as admin:
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
    with command_admin(args) as admin:
        try:
            [description] = admin.describe_transactions([args.transactional_id])
        except ClientError as error:
            if error.error_code is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                raise ClientError(f"transactional id {args.transactional_id!r} does not exist; see "
                                  "`replog transactions list`", error.error_code) from None
            raise
    report = describe_report(description, now_ms=_now_ms())
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


# -- find-hanging ---------------------------------------------------------------------------------


def _find_hanging(args: argparse.Namespace) -> int:
    if args.partition is not None and args.topic is None:
        raise ClientError("--partition needs --topic")
    if args.topic is None and args.broker_id is None:
        raise ClientError("find-hanging needs --topic or --broker-id to say where to search")
    with command_admin(args) as admin:
        tps = _partitions_to_search(admin, args.topic, args.partition, args.broker_id)
        found = find_hanging(admin, tps, now_ms=_now_ms(), max_transaction_timeout_ms=args.max_transaction_timeout
                             * 60_000)
    report = hanging_report(found, now_ms=_now_ms())
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(columns(HANGING_HEADER, [(
            t["topic"], t["partition"], t["producer_id"], t["producer_epoch"], t["coordinator_epoch"],
            t["start_offset"], None if t["last_timestamp_ms"] is None else _iso(t["last_timestamp_ms"]),
            None if t["duration_ms"] is None else t["duration_ms"] // 60_000, t["transactional_id"],
        ) for t in report["hanging_transactions"]]), end="")
    return 0


def _partitions_to_search(admin: Admin, topic: str | None, partition: int | None,
                          broker_id: int | None) -> list[TopicPartition]:
    if topic is not None and partition is not None:
        return [TopicPartition(topic, partition)]
    if broker_id is not None:
        brokers = sorted(admin.cluster().brokers)
        if broker_id not in brokers:
            raise ClientError(f"broker {broker_id} is not in the cluster (its brokers: "
                              f"{', '.join(map(str, brokers)) or 'none'})")
    return [TopicPartition(description.name, info.partition)
            for description in admin.describe_topics(None if topic is None else [topic])
            for info in description.partitions if broker_id is None or broker_id in info.replicas]


def find_hanging(admin: Admin, tps: list[TopicPartition], *, now_ms: int,
                 max_transaction_timeout_ms: int) -> list[HangingTransaction]:
    """The open transactions of `tps` that are candidates (core.txn.hanging) and that no coordinator will end."""
    if not tps:
        return []
    open_transactions = [
        OpenTransaction(tp, p.producer_id, p.producer_epoch, p.coordinator_epoch, p.current_transaction_start_offset,
                        p.last_timestamp_ms)
        for tp, producers in admin.describe_producers(tps).items() for p in producers
        if p.current_transaction_start_offset >= 0]
    found = candidates(open_transactions, now_ms, max_transaction_timeout_ms)
    if not found:
        return []
    producer_ids = {txn.producer_id for txn in found}
    transactional_ids = {listing.producer_id: listing.transactional_id for listing in admin.list_transactions()
                         if listing.producer_id in producer_ids}
    return hanging(found, transactional_ids, {tid: _coordinator_view(admin, tid) for tid in transactional_ids.values()})


def _coordinator_view(admin: Admin, transactional_id: str) -> CoordinatorView | None:
    try:
        [description] = admin.describe_transactions([transactional_id])
    except ClientError as error:
        if error.error_code is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
            return None
        raise
    return CoordinatorView(description.producer_id, frozenset(description.partitions))


def hanging_report(found: list[HangingTransaction], *, now_ms: int) -> dict:
    """`transactions find-hanging --json`: {"hanging_transactions": [{"topic", "partition", "producer_id",
    "producer_epoch", "coordinator_epoch", "start_offset", "last_timestamp_ms", "duration_ms",
    "transactional_id"}]}; what is unknown is null."""
    return {"hanging_transactions": [{
        "topic": h.transaction.topic_partition.topic, "partition": h.transaction.topic_partition.partition,
        "producer_id": h.transaction.producer_id, "producer_epoch": h.transaction.producer_epoch,
        "coordinator_epoch": h.transaction.coordinator_epoch if h.transaction.coordinator_epoch >= 0 else None,
        "start_offset": h.transaction.start_offset,
        "last_timestamp_ms": h.transaction.last_timestamp_ms if h.transaction.last_timestamp_ms >= 0 else None,
        "duration_ms": h.transaction.duration_ms(now_ms), "transactional_id": h.transactional_id,
    } for h in found]}


# -- abort ----------------------------------------------------------------------------------------


def _abort(args: argparse.Namespace) -> int:
    by_producer = (args.producer_id, args.producer_epoch, args.coordinator_epoch)
    if (args.start_offset is None) == all(value is None for value in by_producer):
        raise ClientError("name the transaction to abort either by --start-offset or by --producer-id, "
                          "--producer-epoch and --coordinator-epoch")
    if args.start_offset is None and None in by_producer:
        missing = [flag for flag, value in zip(("--producer-id", "--producer-epoch", "--coordinator-epoch"),
                                               by_producer) if value is None]
        raise ClientError(f"--producer-id, --producer-epoch and --coordinator-epoch go together: {', '.join(missing)} "
                          "missing")
    tp = TopicPartition(args.topic, args.partition)
    with command_admin(args) as admin:
        producers = admin.describe_producers([tp])[tp]
        if args.start_offset is not None:
            producer = _producer_starting_at(tp, producers, args.start_offset)
            spec = AbortTransactionSpec(tp, producer.producer_id, producer.producer_epoch, producer.coordinator_epoch)
        else:
            producer = _open_transaction_of(tp, producers, args.producer_id)
            spec = AbortTransactionSpec(tp, args.producer_id, args.producer_epoch, args.coordinator_epoch)
        admin.abort_transaction(spec)
    report = abort_report(spec, producer.current_transaction_start_offset)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"Aborted the transaction of producer {spec.producer_id} on {tp} that began at offset "
              f"{report['start_offset']}: ABORT marker written with producer epoch {report['marker_producer_epoch']} "
              f"and coordinator epoch {report['marker_coordinator_epoch']}.")
    return 0


def _producer_starting_at(tp: TopicPartition, producers: Sequence[ProducerDescription],
                          start_offset: int) -> ProducerDescription:
    for producer in producers:
        if producer.current_transaction_start_offset == start_offset:
            return producer
    starts = sorted(p.current_transaction_start_offset for p in producers if p.current_transaction_start_offset >= 0)
    raise ClientError(f"no transaction open on {tp} begins at offset {start_offset} "
                      + (f"(open ones begin at {', '.join(map(str, starts))})" if starts else "(none is open there)"),
                      ErrorCode.INVALID_REQUEST)


def _open_transaction_of(tp: TopicPartition, producers: Sequence[ProducerDescription],
                         producer_id: int) -> ProducerDescription:
    for producer in producers:
        if producer.producer_id == producer_id and producer.current_transaction_start_offset >= 0:
            return producer
    raise ClientError(f"producer {producer_id} has no transaction open on {tp} (see `replog producers --topic "
                      f"{tp.topic} --partition {tp.partition}`)", ErrorCode.INVALID_REQUEST)


def abort_report(spec: AbortTransactionSpec, start_offset: int) -> dict:
    """`transactions abort --json`: {"topic", "partition", "producer_id", "producer_epoch", "coordinator_epoch",
    "start_offset", "marker_producer_epoch", "marker_coordinator_epoch"}: the transaction as the partition
    described it, and the marker written."""
    return {"topic": spec.topic_partition.topic, "partition": spec.topic_partition.partition,
            "producer_id": spec.producer_id, "producer_epoch": spec.producer_epoch,
            "coordinator_epoch": spec.coordinator_epoch if spec.coordinator_epoch >= 0 else None,
            "start_offset": start_offset, "marker_producer_epoch": abort_marker_epoch(spec.producer_epoch),
            "marker_coordinator_epoch": abort_coordinator_epoch(spec.coordinator_epoch)}


# -- producers ------------------------------------------------------------------------------------


def _producers(args: argparse.Namespace) -> int:
    tp = TopicPartition(args.topic, args.partition)
    with command_admin(args) as admin:
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


def _now_ms() -> int:
    return int(time.time() * 1000)


def _iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).isoformat(timespec="milliseconds")
