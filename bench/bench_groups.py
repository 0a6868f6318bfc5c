"""Consumer groups on a local cluster: offset commits next to their ceiling.

Starts `replog dev up` (3 brokers) in a temporary directory and runs, alternating, for `--runs`
rounds:

- **commits**: `--committers` clients, each in a loop for `--seconds`, sending OffsetCommit of one
  partition to the group's coordinator over gRPC (a commit is answered once its record is
  replicated, acks=all, to the __consumer_offsets partition of its group);
- **ceiling**: the same number of clients sending a Produce of one small record with acks=all to a
  topic of the same replication (3), the write a commit costs at least.

Reports commits/s and the p50/p99 latency of each, medians (min–max) over the rounds.

    python bench/bench_groups.py [--runs 3] [--seconds 10] [--committers 8] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

import grpc

from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.api.coordinator.v1 import coordinator_pb2 as cp
from replog.api.coordinator.v1 import coordinator_pb2_grpc as cg
from replog.cli.percentiles import percentiles_ms
from replog.client import Admin, NewTopic, TopicPartition
from replog.core.errors import ErrorCode
from replog.protocol import encode_batch

REPLOG = [sys.executable, "-m", "replog.cli.main"]
TOPIC = "bench-groups"
CEILING_TOPIC = "bench-groups-ceiling"


def replog(data_dir: str, *args: str) -> str:
    result = subprocess.run([*REPLOG, *args, "--data-dir", data_dir], capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise SystemExit(f"replog {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


async def coordinator_of(broker: str, group: str) -> str:
    async with grpc.aio.insecure_channel(broker) as channel:
        stub = cg.CoordinatorServiceStub(channel)
        for _ in range(600):
            answer = await stub.FindCoordinator(cp.FindCoordinatorRequest(keys=[group],
                                                                          key_type=cp.COORDINATOR_TYPE_GROUP))
            found = answer.coordinators[0]
            if found.error_code == ErrorCode.NONE:
                return f"{found.coordinator.host}:{found.coordinator.port}"
            await asyncio.sleep(0.1)
    raise SystemExit(f"no coordinator for {group}")


async def timed_loop(call, seconds: float) -> list[int]:
    latencies = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        started = time.perf_counter_ns()
        await call()
        latencies.append(time.perf_counter_ns() - started)
    return latencies


async def commits(broker: str, committers: int, seconds: float) -> dict[str, Any]:
    group = f"bench-{uuid.uuid4().hex[:8]}"
    address = await coordinator_of(broker, group)
    async with grpc.aio.insecure_channel(address) as channel:
        stub = cg.CoordinatorServiceStub(channel)
        offset = [0]

        async def one() -> None:
            offset[0] += 1
            answer = await stub.OffsetCommit(cp.OffsetCommitRequest(group_id=group, member_epoch=-1, topics=[
                cp.OffsetCommitTopic(topic=TOPIC, partitions=[cp.OffsetCommitPartition(
                    partition=offset[0] % 6, committed_offset=offset[0], committed_leader_epoch=-1)])]))
            error = answer.topics[0].partitions[0].error_code
            if error != ErrorCode.NONE:
                raise SystemExit(f"a commit failed: {ErrorCode.of(error).name}")

        return summarize(await asyncio.gather(*(timed_loop(one, seconds) for _ in range(committers))), seconds)


async def produces(leader: str, committers: int, seconds: float) -> dict[str, Any]:
    records = encode_batch([(b"bench-group-member", b"x" * 24)])
    async with grpc.aio.insecure_channel(leader) as channel:
        stub = broker_pb2_grpc.BrokerServiceStub(channel)
        request = broker_pb2.ProduceRequest(acks=-1, timeout_ms=10_000)
        request.topics.add(topic=CEILING_TOPIC).partitions.add(partition=0, records=records)

        async def one() -> None:
            answer = await stub.Produce(request)
            error = answer.topics[0].partitions[0].error_code
            if error != ErrorCode.NONE:
                raise SystemExit(f"a produce failed: {ErrorCode.of(error).name}")

        return summarize(await asyncio.gather(*(timed_loop(one, seconds) for _ in range(committers))), seconds)


def summarize(per_client: list[list[int]], seconds: float) -> dict[str, Any]:
    latencies = [value for client in per_client for value in client]
    return {"per_s": round(len(latencies) / seconds, 1), **percentiles_ms(latencies)}


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2),
            "max": round(max(values), 2)}


def run(runs: int, seconds: float, committers: int) -> dict[str, Any]:
    results: dict[str, list[dict[str, Any]]] = {"offset commits": [], "ceiling: produce acks=all, 1 record": []}
    with tempfile.TemporaryDirectory(prefix="replog-bench-groups-") as scratch:
        data_dir = f"{scratch}/cluster"
        replog(data_dir, "dev", "up", "--brokers", "3", "--controllers", "1")
        try:
            status = json.loads(replog(data_dir, "dev", "status", "--json"))
            broker = status["brokers"][0]["address"]
            with Admin(status["metadata"][0]["address"]) as admin:
                admin.create_topics([NewTopic(TOPIC, 6, 3), NewTopic(CEILING_TOPIC, 1, 3)])
                leader_id = admin.cluster().leader_of(TopicPartition(CEILING_TOPIC, 0))
                leader = next(b["address"] for b in status["brokers"] if b["id"] == leader_id)
            for _ in range(runs):
                results["offset commits"].append(asyncio.run(commits(broker, committers, seconds)))
                results["ceiling: produce acks=all, 1 record"].append(asyncio.run(produces(leader, committers,
                                                                                         seconds)))
        finally:
            replog(data_dir, "dev", "down")
    return {name: {key: spread([r[key] for r in rows]) for key in ("per_s", "p50_ms", "p99_ms")}
            for name, rows in results.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--committers", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    table = run(args.runs, args.seconds, args.committers)
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"median (min–max) of {args.runs} runs, {args.committers} clients each")
    for name, row in table.items():
        print(f"{name:<38} " + "  ".join(f"{key} {v['median']} ({v['min']}–{v['max']})" for key, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
