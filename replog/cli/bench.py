"""`replog bench produce|consume|e2e|failover`: throughput, latency and failover time on a topic of its own.

e2e latency is timed from each record's *scheduled* send time at the fixed
--rate, not from when send() got to it: a producer that falls behind adds its
delay to the figures instead of hiding it (no coordinated omission).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import os
import struct
import time
from typing import Any

from replog.cli.bench_failover import bench_failover
from replog.cli.bootstrap import add_cluster_arguments, bootstrap_address
from replog.cli.numbers import INT32_MAX, out_of_range
from replog.cli.percentiles import percentiles_ms
from replog.client import Admin, ClientError, Consumer, NewTopic, Producer, TopicPartition
from replog.client.accumulator import record_size_bytes
from replog.client.configs import ProducerConfig
from replog.rpc.heap import freeze_heap

MiB = 1 << 20
CHUNK_RECORDS = 10_000  # records per send_many call when no --rate paces them
E2E_SEND_TICK_S = 0.001
E2E_START_DELAY_NS = 50_000_000  # the schedule starts this long after the warm-up, in the producer's future
E2E_IDLE_S = 30.0  # no record for this long: the run has failed
E2E_PRODUCER_EXIT_S = 10.0
SCHEDULE = struct.Struct(">q")  # the scheduled send time in a record's first 8 bytes (perf_counter ns)
DEFAULTS = {"produce": (1_000_000, None), "consume": (1_000_000, None), "e2e": (100_000, 10_000.0),
            "failover": (0, None)}


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("bench", help="measure throughput and latency",
                                 description="Measure produce or consume throughput, end-to-end latency, "
                                 "or (on a local cluster) how long a broker's partitions have no leader "
                                 "after it is killed, on a new topic.")
    parser.add_argument("kind", choices=["produce", "consume", "e2e", "failover"])
    parser.add_argument("--record-size", type=int, default=100, metavar="B", help="value size in bytes (default 100)")
    parser.add_argument("--records", type=int, metavar="N",
                        help="records to send (default 1,000,000; e2e: 100,000)")
    parser.add_argument("--acks", choices=["0", "1", "all", "-1"], default="all", help="(default all)")
    parser.add_argument("--partitions", type=int, default=3, help="partitions of the new topic (default 3)")
    parser.add_argument("--replication-factor", type=int,
                        help="replicas per partition (default: 3, or fewer when fewer brokers are alive)")
    parser.add_argument("--rate", type=float, metavar="R",
                        help="records per second, on a fixed schedule (default: as fast as possible; "
                        "e2e: 10,000)")
    parser.add_argument("--signal", choices=["KILL", "TERM"], default="KILL",
                        help="failover: how the broker is stopped (TERM: a controlled shutdown; default KILL)")
    parser.add_argument("--enable-idempotence", choices=["true", "false"],
                        help="the producer's enable.idempotence (default: true with acks=all, as Kafka)")
    parser.add_argument("--max-in-flight", type=int, default=5, metavar="N",
                        help="the producer's max.in.flight.requests.per.connection (default 5)")
    parser.add_argument("--transaction-records", type=int, metavar="N",
                        help="produce: send in transactions of N records each (a transactional producer: "
                        "begin, send N, commit), to compare with the same load without transactions")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_cluster_arguments(parser)
    parser.set_defaults(handler=_bench)


def check_args(args: argparse.Namespace) -> None:
    default_records, default_rate = DEFAULTS[args.kind]
    args.records = default_records if args.records is None else args.records
    args.rate = default_rate if args.rate is None else args.rate
    if (args.records < 1 and args.kind != "failover") or args.partitions < 1 or args.record_size < 0:
        raise ClientError("--records and --partitions must be at least 1, --record-size at least 0")
    if args.kind == "e2e" and args.record_size < SCHEDULE.size:
        raise ClientError(f"e2e needs --record-size of at least {SCHEDULE.size} (the send time travels in it)")
    if args.rate is not None and not 0 < args.rate < math.inf:
        raise ClientError(f"--rate must be a positive number of records per second, not {args.rate}")
    if args.replication_factor is not None and args.replication_factor < 1:
        raise ClientError("--replication-factor must be at least 1")
    for option, value in (("--partitions", args.partitions), ("--replication-factor", args.replication_factor)):
        if value is not None and value > INT32_MAX:
            raise ClientError(f"{option}: {out_of_range(value, 1, INT32_MAX)}")
    # Refused here rather than at the first send, after the topic was made.
    size, limit = record_size_bytes(None, range(args.record_size)), ProducerConfig.max_request_size  # a length
    if size > limit:
        raise ClientError(f"--record-size {args.record_size} makes records of {size} bytes, more than the producer's "
                          f"max_request_size ({limit} bytes)")
    if args.max_in_flight < 1:
        raise ClientError("--max-in-flight must be at least 1")
    if args.enable_idempotence == "true" and (args.acks not in ("all", "-1") or args.max_in_flight > 5):
        raise ClientError("--enable-idempotence true needs --acks all and --max-in-flight of at most 5")
    if args.transaction_records is not None:
        if args.kind != "produce" or args.transaction_records < 1:
            raise ClientError("--transaction-records N (N at least 1) is for `bench produce`")
        if args.acks not in ("all", "-1") or args.enable_idempotence == "false" or args.max_in_flight > 5:
            raise ClientError("--transaction-records needs an idempotent producer: --acks all, idempotence on, "
                              "--max-in-flight of at most 5")


def _bench(args: argparse.Namespace) -> int:
    check_args(args)
    bootstrap = bootstrap_address(args)
    topic = create_topic(bootstrap, args)
    if args.kind == "produce":
        result = bench_produce(bootstrap, topic, args)
    elif args.kind == "consume":
        result = bench_consume(bootstrap, topic, args)
    elif args.kind == "failover":
        result = bench_failover(bootstrap, topic, args)
    else:
        result = bench_e2e(bootstrap, topic, args)
    result.update(kind=args.kind, topic=topic, records=args.records, record_size=args.record_size,
                  acks=args.acks, partitions=args.partitions, replication_factor=args.replication_factor,
                  enable_idempotence=args.enable_idempotence or "default", max_in_flight=args.max_in_flight)
    print(json.dumps(result) if args.json else summary(result))
    return 0


def create_topic(bootstrap: str, args: argparse.Namespace) -> str:
    topic = f"bench-{args.kind}-{int(time.time())}-{os.getpid()}"
    with Admin(bootstrap) as admin:
        if args.replication_factor is None:
            args.replication_factor = max(1, min(3, len(admin.cluster().brokers)))
        admin.create_topics([NewTopic(topic, args.partitions, args.replication_factor)])
    return topic


def rates(records: int, record_size: int, elapsed_s: float) -> dict[str, float]:
    elapsed_s = max(elapsed_s, 1e-9)
    return {"records_per_s": round(records / elapsed_s, 1),
            "mb_per_s": round(records * record_size / elapsed_s / MiB, 2),
            "elapsed_s": round(elapsed_s, 3)}


def paced_counts(total: int, rate: float | None, started_s: float, now_s: float, sent: int) -> int:
    """How many more records are due at now_s: all of them without a rate, else those scheduled by then."""
    if rate is None:
        return min(CHUNK_RECORDS, total - sent)
    due = min(total, int((now_s - started_s) * rate) + 1)
    return max(0, due - sent)


def producer_options(args: argparse.Namespace) -> dict[str, Any]:
    """The producer settings the bench was given."""
    idempotence = None if args.enable_idempotence is None else args.enable_idempotence == "true"
    return {"acks": args.acks, "enable_idempotence": idempotence,
            "max_in_flight_requests_per_connection": args.max_in_flight}


def bench_produce(bootstrap: str, topic: str, args: argparse.Namespace) -> dict[str, Any]:
    value = os.urandom(args.record_size)
    in_transactions = args.transaction_records is not None
    options = producer_options(args) | ({"transactional_id": f"{topic}-producer"} if in_transactions else {})
    with Producer(bootstrap, **options) as producer:
        producer.partitions_for(topic)
        if in_transactions:
            producer.init_transactions()
        started = time.perf_counter()
        results = []
        sent = 0
        while sent < args.records:
            count = paced_counts(args.records, args.rate, started, time.perf_counter(), sent)
            if count == 0:
                time.sleep(min(E2E_SEND_TICK_S, 1 / args.rate))
                continue
            if in_transactions:
                count = min(count, args.transaction_records)
                producer.begin_transaction()
            results.append(producer.send_many(topic, [value] * count))
            if in_transactions:
                producer.commit_transaction()
            sent += count
        producer.flush()
        elapsed = time.perf_counter() - started
    _raise_first_failure(results)
    result = rates(args.records, args.record_size, elapsed)
    if in_transactions:
        result |= {"transaction_records": args.transaction_records,
                   "transactions_per_s": round(-(-args.records // args.transaction_records) / elapsed, 1)}
    return result


def bench_consume(bootstrap: str, topic: str, args: argparse.Namespace) -> dict[str, Any]:
    value = os.urandom(args.record_size)
    with Producer(bootstrap, acks=args.acks) as producer:
        results = [producer.send_many(topic, [value] * min(CHUNK_RECORDS, args.records - start))
                   for start in range(0, args.records, CHUNK_RECORDS)]
        producer.flush()
    _raise_first_failure(results)
    with Consumer(bootstrap, auto_offset_reset="earliest", max_poll_records=CHUNK_RECORDS) as consumer:
        consumer.assign([TopicPartition(topic, p) for p in range(args.partitions)])
        started = time.perf_counter()
        received = 0
        while received < args.records:
            batch = consumer.poll(10_000)
            if not batch:
                raise ClientError(f"only {received} of {args.records} records came back within 10 s")
            received += len(batch)
        elapsed = time.perf_counter() - started
    return rates(received, args.record_size, elapsed)


def bench_e2e(bootstrap: str, topic: str, args: argparse.Namespace) -> dict[str, Any]:
    """The consumer here, the producer in a process of its own, as separate applications would run.

    Both first exchange one record per partition (connections open, the
    consumer's fetches parked at each leader) and keep what they built so far
    out of later garbage collections, as the brokers do (`freeze_heap`), then
    the producer sends on a schedule that starts a moment later; only the
    scheduled records count.
    """
    latencies: list[int] = []
    context = multiprocessing.get_context("spawn")
    to_producer, to_consumer = context.Pipe()
    producer = context.Process(target=_e2e_producer, name="bench-e2e-producer",
                               args=(bootstrap, topic, producer_options(args), args.partitions, args.records,
                                     args.rate, args.record_size, to_consumer), daemon=True)
    with Consumer(bootstrap, auto_offset_reset="latest", fetch_max_wait_ms=100) as consumer:
        tps = [TopicPartition(topic, p) for p in range(args.partitions)]
        consumer.assign(tps)
        for tp in tps:
            consumer.position(tp)
        producer.start()
        try:
            _expect(to_producer, "warmed", producer)
            _consume_until(consumer, args.partitions, lambda records: len(records))
            freeze_heap()  # the figures are replog's, not this process's garbage collections
            started_ns = time.perf_counter_ns() + E2E_START_DELAY_NS
            to_producer.send(("start", started_ns))

            def measure(records: list) -> int:
                now_ns = time.perf_counter_ns()
                latencies.extend(now_ns - SCHEDULE.unpack_from(r.value)[0] for r in records)
                return len(records)

            _consume_until(consumer, args.records, measure)
            elapsed_s = (time.perf_counter_ns() - started_ns) / 1e9
            _expect(to_producer, "done", producer)
        finally:
            producer.join(E2E_PRODUCER_EXIT_S)
            if producer.is_alive():
                producer.kill()
    return {**rates(len(latencies), args.record_size, elapsed_s), **percentiles_ms(latencies)}


def _consume_until(consumer: Consumer, count: int, take) -> None:
    """Poll until take(records) has counted `count` records; give up when none arrive for E2E_IDLE_S."""
    received = 0
    idle_since = time.monotonic()
    while received < count:
        records = consumer.poll(200)
        if records:
            idle_since = time.monotonic()
            received += take(records)
        elif time.monotonic() - idle_since > E2E_IDLE_S:
            raise ClientError(f"only {received} of {count} records arrived; none for {E2E_IDLE_S} s")


def _expect(connection, word: str, producer) -> None:
    """Wait for the producer process to say `word`; raise what it reports instead."""
    deadline = time.monotonic() + E2E_IDLE_S
    while not connection.poll(0.1):
        if not producer.is_alive() or time.monotonic() > deadline:
            raise ClientError(f"the producer process stopped answering (exit code {producer.exitcode})")
    message = connection.recv()
    if message[0] == "failed":
        raise ClientError(f"the producer failed: {message[1]}")
    if message[0] != word:
        raise ClientError(f"the producer said {message[0]!r} where {word!r} was due")


def _e2e_producer(bootstrap: str, topic: str, options: dict[str, Any], partitions: int, records: int, rate: float,
                  record_size: int, connection) -> None:
    """The producer process: one warm-up record per partition, then the schedule."""
    try:
        padding = os.urandom(record_size - SCHEDULE.size)
        with Producer(bootstrap, linger_ms=0, **options) as producer:
            warm_up = [producer.send_many(topic, [SCHEDULE.pack(0) + padding], partition=p) for p in range(partitions)]
            producer.flush()
            _raise_first_failure(warm_up)
            freeze_heap()
            connection.send(("warmed",))
            _, started_ns = connection.recv()
            while time.perf_counter_ns() < started_ns:
                time.sleep(E2E_SEND_TICK_S)
            _send_on_schedule(producer, topic, records, rate, started_ns, padding)
        connection.send(("done",))
    except Exception as error:  # reported to the measuring process, which raises it
        connection.send(("failed", str(error) or repr(error)))


def _send_on_schedule(producer: Producer, topic: str, records: int, rate: float, started_ns: int,
                      padding: bytes) -> None:
    interval_ns = 1e9 / rate
    sent = 0
    results = []
    while sent < records:
        count = paced_counts(records, rate, started_ns / 1e9, time.perf_counter_ns() / 1e9, sent)
        if count:
            values = [SCHEDULE.pack(int(started_ns + (sent + i) * interval_ns)) + padding for i in range(count)]
            results.append(producer.send_many(topic, values))
            sent += count
        else:
            time.sleep(E2E_SEND_TICK_S)
    producer.flush()
    _raise_first_failure(results)


def _raise_first_failure(results: list) -> None:
    for result in results:
        error = result.exception()
        if error is not None:
            raise error


def summary(result: dict[str, Any]) -> str:
    if result["kind"] == "failover":
        line = (f"failover: SIG{result['signal']} to broker {result['broker']}, which led "
                f"{result['leaderships_moved']} of {result['partitions']} partitions: all had a new leader "
                f"after {result['unavailable_s']} s")
        if result["propagation_partitions"]:
            line += (f"; from the controller's write to a WatchMetadata client: p50 {result['propagation_p50_ms']} ms, "
                     f"p99 {result['propagation_p99_ms']} ms, max {result['propagation_max_ms']} ms "
                     f"over {result['propagation_partitions']} partitions")
        return line
    line = (f"{result['kind']}: {result['records']} records of {result['record_size']} bytes, acks={result['acks']}, "
            f"{result['partitions']} partitions, replication factor {result['replication_factor']}: "
            f"{result['records_per_s']:,.0f} records/s, {result['mb_per_s']:.2f} MiB/s")
    if "transaction_records" in result:
        line += f", in transactions of {result['transaction_records']} ({result['transactions_per_s']:,.0f}/s)"
    if "p50_ms" in result:
        line += (f"; latency p50 {result['p50_ms']} ms, p99 {result['p99_ms']} ms, "
                 f"p99.9 {result['p999_ms']} ms, max {result['max_ms']} ms")
    return line
