"""One measured workload against replog or NATS JetStream, in a process of its own; prints one JSON object.

    python bench/peers/workloads.py replog produce --target HOST:PORT --records N --record-size B
    python bench/peers/workloads.py nats e2e --target nats://... --records N --record-size B --rate R

Kinds (the same for both systems, both clients in Python):

- produce: records as fast as they are acknowledged. replog: `replog bench produce` (the Producer,
  acks=all, its own batching). JetStream: one message per record, `publish_async` with up to
  4,000 acknowledgements outstanding, as a user after throughput would.
- batched: the same records, grouped about 1 MB to a unit. replog's producer does that by itself
  (the same workload as produce); a JetStream user packs them into 1 MB messages (each record
  prefixed with its length) and publishes those asynchronously.
- consume: the records are written first (not timed), then read from the start by one consumer.
  replog: `replog bench consume`. JetStream: a pull consumer (no acks) fetching 5,000 at a time.
- e2e: a fixed rate; each record carries its scheduled send time and is timed from then until the
  consumer in the same process has it (no coordinated omission). replog: `replog bench e2e`.
  JetStream: publish_async on schedule and an ordered push consumer.

Throughput is records/s and MB/s (10^6 bytes) of record values.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import struct
import sys
import time
from typing import Any

from replog.cli import bench as replog_bench
from replog.client import Admin, NewTopic
from replog.rpc.heap import freeze_heap

CHUNK_RECORDS = replog_bench.CHUNK_RECORDS
SCHEDULE = replog_bench.SCHEDULE
PUBLISH_IN_FLIGHT = 4000
BATCH_BYTES = 1_000_000
BATCH_IN_FLIGHT = 16
PENDING_MESSAGES_MAX = 1_000_000  # an ordered consumer's buffer: room for a whole catch-up
WAIT_S_MAX = 120.0
PARTITIONS = 3
REPLICAS = 3
MIN_INSYNC = "2"  # like a majority of three, which JetStream waits for


def rates(records: int, record_size: int, elapsed_s: float) -> dict[str, float]:
    elapsed_s = max(elapsed_s, 1e-9)
    return {"records_per_s": round(records / elapsed_s, 1),
            "mb_per_s": round(records * record_size / elapsed_s / 1e6, 2), "elapsed_s": round(elapsed_s, 3)}


# -- replog: `replog bench`'s own functions on a topic made here ----------------------------------


def replog_run(kind: str, target: str, records: int, record_size: int, rate: float | None) -> dict[str, Any]:
    topic = f"peers-{kind}-{int(time.time() * 1000)}-{os.getpid()}"
    with Admin(target) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, REPLICAS, configs={"min.insync.replicas": MIN_INSYNC})])
    args = argparse.Namespace(records=records, record_size=record_size, acks="all", rate=rate,
                              partitions=PARTITIONS, replication_factor=REPLICAS)
    if kind in ("produce", "batched"):
        result = replog_bench.bench_produce(target, topic, args)
    elif kind == "consume":
        result = replog_bench.bench_consume(target, topic, args)
    else:
        result = replog_bench.bench_e2e(target, topic, args)
    mib_per_s = result.pop("mb_per_s")
    return {**result, "mb_per_s": round(mib_per_s * (1 << 20) / 1e6, 2)}


# -- NATS JetStream ----------------------------------------------------------------------------------


async def nats_run(kind: str, target: str, records: int, record_size: int, rate: float | None) -> dict[str, Any]:
    import nats
    from nats.js.api import StorageType

    connection = await nats.connect(servers=target.split(","), max_reconnect_attempts=3)
    try:
        js = connection.jetstream(publish_async_max_pending=PUBLISH_IN_FLIGHT)
        stream = f"peers_{kind}_{int(time.time() * 1000)}_{os.getpid()}"
        await js.add_stream(name=stream, subjects=[f"{stream}.records"], num_replicas=REPLICAS,
                            storage=StorageType.FILE)
        subject = f"{stream}.records"
        try:
            if kind == "produce":
                return await _nats_produce(js, subject, records, record_size)
            if kind == "batched":
                return await _nats_batched(js, subject, records, record_size)
            if kind == "consume":
                return await _nats_consume(js, subject, records, record_size)
            return await _nats_e2e(js, subject, records, record_size, rate)
        finally:
            await js.delete_stream(stream)
    finally:
        await connection.close()


async def _publish_all(js, subject: str, payloads) -> None:
    futures = [await js.publish_async(subject, payload) for payload in payloads]
    await asyncio.wait_for(js.publish_async_completed(), WAIT_S_MAX)
    for future in futures:
        future.result()  # raises the first refused publish


async def _nats_produce(js, subject: str, records: int, record_size: int) -> dict[str, Any]:
    value = os.urandom(record_size)
    started = time.perf_counter()
    await _publish_all(js, subject, (value for _ in range(records)))
    return rates(records, record_size, time.perf_counter() - started)


async def _nats_batched(js, subject: str, records: int, record_size: int) -> dict[str, Any]:
    value = os.urandom(record_size)
    framed = struct.pack(">I", record_size) + value
    per_message = max(1, BATCH_BYTES // len(framed))
    counts = [min(per_message, records - start) for start in range(0, records, per_message)]
    started = time.perf_counter()
    # The application's own batching: frame each record, join a message's worth.
    await _publish_all(js, subject, (b"".join([framed] * count) for count in counts))
    return rates(records, record_size, time.perf_counter() - started)


async def _nats_consume(js, subject: str, records: int, record_size: int) -> dict[str, Any]:
    value = os.urandom(record_size)
    await _publish_all(js, subject, (value for _ in range(records)))
    received = 0
    all_arrived = asyncio.Event()

    async def arrived(message) -> None:
        nonlocal received
        received += 1
        if received >= records:
            all_arrived.set()

    started = time.perf_counter()
    subscription = await js.subscribe(subject, ordered_consumer=True, cb=arrived,
                                      pending_msgs_limit=PENDING_MESSAGES_MAX)
    await asyncio.wait_for(all_arrived.wait(), WAIT_S_MAX)
    elapsed = time.perf_counter() - started
    await subscription.unsubscribe()
    return rates(received, record_size, elapsed)


async def _nats_e2e(js, subject: str, records: int, record_size: int, rate: float | None) -> dict[str, Any]:
    rate = rate or 10_000.0
    padding = os.urandom(record_size - SCHEDULE.size)
    latencies: list[int] = []
    all_arrived = asyncio.Event()

    async def arrived(message) -> None:
        latencies.append(time.perf_counter_ns() - SCHEDULE.unpack_from(message.data)[0])
        if len(latencies) >= records:
            all_arrived.set()

    subscription = await js.subscribe(subject, ordered_consumer=True, cb=arrived,
                                      pending_msgs_limit=PENDING_MESSAGES_MAX)
    freeze_heap()  # as replog's e2e does: the figures are the systems', not the client's collections
    started_ns = time.perf_counter_ns()
    interval_ns = 1e9 / rate
    futures = []
    sent = 0
    while sent < records:
        count = replog_bench.paced_counts(records, rate, started_ns / 1e9, time.perf_counter_ns() / 1e9, sent)
        for index in range(sent, sent + count):
            payload = SCHEDULE.pack(int(started_ns + index * interval_ns)) + padding
            futures.append(await js.publish_async(subject, payload))
        sent += count
        if not count:
            await asyncio.sleep(replog_bench.E2E_SEND_TICK_S)
    await asyncio.wait_for(all_arrived.wait(), WAIT_S_MAX)
    elapsed_s = (time.perf_counter_ns() - started_ns) / 1e9
    await subscription.unsubscribe()
    for future in futures:
        future.result()
    return {**rates(len(latencies), record_size, elapsed_s), **replog_bench.percentiles_ms(latencies)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("system", choices=["replog", "nats"])
    parser.add_argument("kind", choices=["produce", "batched", "consume", "e2e"])
    parser.add_argument("--target", required=True, help="replog: a metadata service; nats: server URLs")
    parser.add_argument("--records", type=int, required=True)
    parser.add_argument("--record-size", type=int, required=True)
    parser.add_argument("--rate", type=float)
    args = parser.parse_args()
    if args.system == "replog":
        result = replog_run(args.kind, args.target, args.records, args.record_size, args.rate)
    else:
        result = asyncio.run(nats_run(args.kind, args.target, args.records, args.record_size, args.rate))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
