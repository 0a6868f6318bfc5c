"""Consumer groups on a local cluster: offset commits next to their ceiling, rebalances, and a
group's consumption next to one consumer's.

Starts `replog dev up` (3 brokers) in a temporary directory and measures, each `--runs` times:

- **commits**: `--committers` clients, each in a loop for `--seconds`, sending OffsetCommit of one
  partition to the group's coordinator over gRPC (a commit is answered once its record is
  replicated, acks=all, to the __consumer_offsets partition of its group); alternating with
- **ceiling**: the same number of clients sending a Produce of one small record with acks=all to a
  topic of the same replication (3), the write a commit costs at least.
- **rebalance**: a group of 3 members (each a process, tests/integration/group_member.py) reading
  60 partitions while 3,000 records/s arrive; a 4th member joins, then is SIGKILLed. The time from
  the new group epoch to the group's being stable again, as its coordinator logs them (for the kill:
  from the session's expiry, so detection is excluded); and the longest gap between two polls that
  returned records, for the members that keep partitions, during the rebalance next to the same
  length of time before it.
- **consumption**: `--records` records of 100 B in 12 partitions, read by one consumer alone
  (assigned every partition) and by a group of 3 members (processes, auto-commit): records/s from
  the first record read to the last, and records per CPU-second of the consuming processes.

Reports medians (min–max) over the runs.

    python bench/bench_groups.py [--runs 3] [--seconds 10] [--committers 8] [--records 1000000]
                                 [--only commits,rebalance,consumption] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import grpc

from replog.api.broker.v1 import broker_pb2, broker_pb2_grpc
from replog.api.coordinator.v1 import coordinator_pb2 as cp
from replog.api.coordinator.v1 import coordinator_pb2_grpc as cg
from replog.cli.percentiles import percentiles_ms
from replog.client import Admin, NewTopic, Producer, TopicPartition
from replog.core.errors import ErrorCode
from replog.protocol import encode_batch

REPLOG = [sys.executable, "-m", "replog.cli.main"]
ROOT = Path(__file__).resolve().parents[1]
TOPIC = "bench-groups"
CEILING_TOPIC = "bench-groups-ceiling"
REBALANCE_TOPIC = "bench-groups-rebalance"
REBALANCE_PARTITIONS = 60
CONSUME_TOPIC = "bench-groups-consume"
CONSUME_PARTITIONS = 12


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


def wait_for(condition, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if found := condition():
            return found
        time.sleep(0.05)
    raise SystemExit(f"timed out after {timeout_s} s waiting for {what}")


# -- rebalance ---------------------------------------------------------------------------------------


class Steady:
    """Records produced at a steady rate from a thread until stopped."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, rate: int) -> None:
        self._args = (bootstrap, topic, partitions, rate)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        bootstrap, topic, partitions, rate = self._args
        with Producer(bootstrap, acks="all") as producer:
            sent, began = 0, time.monotonic()
            while not self._stop.is_set():
                for _ in range(rate // 20):
                    producer.send(topic, b"x" * 100, partition=sent % partitions)
                    sent += 1
                self._stop.wait(max(began + sent / rate - time.monotonic(), 0))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


class Journals:
    """Group members as processes, each journalling what it holds and reads (tests/integration/group_member.py)."""

    def __init__(self, directory: str, bootstrap: str, group: str) -> None:
        self.directory, self.bootstrap, self.group = Path(directory), bootstrap, group
        self.processes: dict[str, subprocess.Popen] = {}

    def start(self, name: str) -> None:
        self.processes[name] = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.group_member", self.bootstrap, self.group, REBALANCE_TOPIC,
             str(self.directory / f"{name}.jsonl")], cwd=ROOT, stderr=subprocess.DEVNULL)

    def events(self, name: str) -> list[dict]:
        found, path = [], self.directory / f"{name}.jsonl"
        for line in (path.read_text() if path.exists() else "").splitlines():
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:
                pass
        return found

    def held(self, name: str) -> set[int]:
        held: set[int] = set()
        for event in self.events(name):
            if event["event"] == "assigned":
                held |= set(event["partitions"])
            elif event["event"] in ("revoked", "lost"):
                held -= set(event["partitions"])
        return held

    def spread_over(self, names: list[str]) -> bool:
        each = REBALANCE_PARTITIONS // len(names)
        held = [self.held(n) for n in names]
        return all(len(h) == each for h in held) and len(set().union(*held)) == REBALANCE_PARTITIONS

    def longest_gap_s(self, name: str, since: float, until: float) -> float:
        times = [e["t"] for e in self.events(name) if e["event"] == "records" and since <= e["t"] <= until]
        return max((b - a for a, b in zip(times, times[1:])), default=until - since)

    def stop_all(self) -> None:
        for process in self.processes.values():
            process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            process.wait(60)


LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) ")


def rebalance_seconds(log_lines: list[str], group: str) -> float:
    """From the first new group epoch in these log lines to the last time the group was stable."""
    def at(line: str) -> float:
        return datetime.strptime(LOG_TIME.match(line).group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
    bumps = [at(line) for line in log_lines if f"group {group}: epoch " in line]
    stable = [at(line) for line in log_lines if f"group {group}: stable at epoch " in line]
    if not bumps or not stable:
        raise SystemExit(f"the coordinator logged no rebalance of {group}")
    return stable[-1] - bumps[0]


def rebalances(data_dir: str, status: dict, runs: int) -> dict[str, list[float]]:
    bootstrap = status["metadata"][0]["address"]
    group = f"bench-rebalance-{uuid.uuid4().hex[:6]}"
    found: dict[str, list[float]] = {"join: to stable (s)": [], "kill: to stable after expiry (s)": [],
                                     "join: longest gap, keeping members (s)": [],
                                     "kill: longest gap, keeping members (s)": [],
                                     "quiet: longest gap, same members (s)": []}
    steady = Steady(bootstrap, REBALANCE_TOPIC, REBALANCE_PARTITIONS, 3_000)
    with tempfile.TemporaryDirectory(prefix="replog-bench-members-") as scratch:
        members = Journals(scratch, bootstrap, group)
        try:
            for name in ("a", "b", "c"):
                members.start(name)
            keeping = ["a", "b", "c"]
            wait_for(lambda: members.spread_over(keeping), 120, "3 members to share 60 partitions")
            coordinator_id = int(asyncio.run(coordinator_broker(status, group)))
            log_path = Path(data_dir) / "logs" / f"broker-{coordinator_id}.log"
            for run in range(runs):
                quiet_from = time.monotonic()
                time.sleep(3)  # a stretch of steady reading, the baseline for the gaps
                quiet_until = time.monotonic()
                found["quiet: longest gap, same members (s)"].append(
                    max(members.longest_gap_s(n, quiet_from, quiet_until) for n in keeping))
                for event in ("join", "kill"):
                    seen = len(log_path.read_text().splitlines())
                    began = time.monotonic()
                    newcomer = f"d{run}"
                    if event == "join":
                        members.start(newcomer)
                        wait_for(lambda: members.spread_over([*keeping, newcomer]), 60, "4 members to share")
                    else:
                        members.processes.pop(newcomer).send_signal(signal.SIGKILL)
                        wait_for(lambda: members.spread_over(keeping), 60, "3 members to share again")
                    wait_for(lambda: any(f"group {group}: stable" in line
                                         for line in log_path.read_text().splitlines()[seen:]), 30, "stable")
                    ended = time.monotonic()
                    lines = log_path.read_text().splitlines()[seen:]
                    found[f"{event}: to stable (s)" if event == "join" else "kill: to stable after expiry (s)"].append(
                        rebalance_seconds(lines, group))
                    found[f"{event}: longest gap, keeping members (s)"].append(
                        max(members.longest_gap_s(n, began, ended) for n in keeping))
        finally:
            steady.stop()
            members.stop_all()
    return found


async def coordinator_broker(status: dict, group: str) -> str:
    address = await coordinator_of(status["brokers"][0]["address"], group)
    return next(str(b["id"]) for b in status["brokers"] if b["address"] == address)


# -- consumption -------------------------------------------------------------------------------------


def produce_records(bootstrap: str, count: int) -> None:
    with Producer(bootstrap, acks=1, linger_ms=20) as producer:
        for i in range(count):
            producer.send(CONSUME_TOPIC, b"x" * 100, partition=i % CONSUME_PARTITIONS)
        producer.flush(300)


def read_all(bootstrap: str, records: int, readers: list[list[str]]) -> dict[str, float]:
    """Start the readers (group_reader.py arguments after the report path); once they have read
    `records` between them, stop them: records/s first to last, records per CPU-second."""
    with tempfile.TemporaryDirectory(prefix="replog-bench-readers-") as scratch:
        reports = [f"{scratch}/{i}.json" for i in range(len(readers))]
        processes = [subprocess.Popen([sys.executable, str(ROOT / "bench" / "group_reader.py"), bootstrap,
                                       CONSUME_TOPIC, report, *extra], cwd=ROOT)
                     for report, extra in zip(reports, readers)]

        def progress() -> list[dict] | None:
            try:
                found = [json.loads(Path(r).read_text()) for r in reports]
            except (OSError, json.JSONDecodeError):
                return None
            return found if sum(p["count"] for p in found) >= records else None
        try:
            found = wait_for(progress, 300, f"{records} records read")
        finally:
            for process in processes:
                process.send_signal(signal.SIGTERM)
            for process in processes:
                process.wait(60)
    found = [p for p in found if p["count"]]  # a member that joined after the others had read everything
    began = min(p["first_t"] for p in found)
    ended = max(p["last_t"] for p in found)
    cpu = sum(p["cpu_last_s"] - p["cpu_first_s"] for p in found)
    return {"per_s": round(records / (ended - began)), "per_cpu_s": round(records / cpu)}


def consumption(status: dict, runs: int, records: int) -> dict[str, list[float]]:
    bootstrap = status["metadata"][0]["address"]
    produce_records(bootstrap, records)
    found: dict[str, list[float]] = {"one consumer (records/s)": [], "group of 3 (records/s)": [],
                                     "one consumer (records/CPU-s)": [], "group of 3 (records/CPU-s)": [],
                                     "group / one, per CPU-s": []}
    for _ in range(runs):
        alone = read_all(bootstrap, records, [["--assign", str(CONSUME_PARTITIONS)]])
        group = f"bench-consume-{uuid.uuid4().hex[:6]}"
        together = read_all(bootstrap, records, [["--group", group]] * 3)
        found["one consumer (records/s)"].append(alone["per_s"])
        found["group of 3 (records/s)"].append(together["per_s"])
        found["one consumer (records/CPU-s)"].append(alone["per_cpu_s"])
        found["group of 3 (records/CPU-s)"].append(together["per_cpu_s"])
        found["group / one, per CPU-s"].append(together["per_cpu_s"] / alone["per_cpu_s"])
    return found


# -- the run -----------------------------------------------------------------------------------------


def run(runs: int, seconds: float, committers: int, records: int, only: set[str]) -> dict[str, Any]:
    results: dict[str, list[dict[str, Any]]] = {"offset commits": [], "ceiling: produce acks=all, 1 record": []}
    table: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="replog-bench-groups-") as scratch:
        data_dir = f"{scratch}/cluster"
        replog(data_dir, "dev", "up", "--brokers", "3", "--controllers", "1")
        try:
            status = json.loads(replog(data_dir, "dev", "status", "--json"))
            broker = status["brokers"][0]["address"]
            with Admin(status["metadata"][0]["address"]) as admin:
                admin.create_topics([NewTopic(TOPIC, 6, 3), NewTopic(CEILING_TOPIC, 1, 3),
                                     NewTopic(REBALANCE_TOPIC, REBALANCE_PARTITIONS, 3),
                                     NewTopic(CONSUME_TOPIC, CONSUME_PARTITIONS, 3)])
                leader_id = admin.cluster().leader_of(TopicPartition(CEILING_TOPIC, 0))
                leader = next(b["address"] for b in status["brokers"] if b["id"] == leader_id)
            if "commits" in only:
                for _ in range(runs):
                    results["offset commits"].append(asyncio.run(commits(broker, committers, seconds)))
                    results["ceiling: produce acks=all, 1 record"].append(
                        asyncio.run(produces(leader, committers, seconds)))
                table["commits"] = {name: {key: spread([r[key] for r in rows]) for key in ("per_s", "p50_ms", "p99_ms")}
                                    for name, rows in results.items()}
            if "rebalance" in only:
                table["rebalance"] = {name: spread(values) for name, values in rebalances(data_dir, status,
                                                                                            runs).items()}
            if "consumption" in only:
                table["consumption"] = {name: spread(values) for name, values in consumption(status, runs,
                                                                                               records).items()}
        finally:
            replog(data_dir, "dev", "down")
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--committers", type=int, default=8)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--only", default="commits,rebalance,consumption",
                        help="which measures, comma-separated (default: all)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    only = set(args.only.split(","))
    if unknown := only - {"commits", "rebalance", "consumption"}:
        parser.error(f"--only: unknown measure(s) {', '.join(sorted(unknown))}; choose from commits, rebalance, "
                     "consumption")
    table = run(args.runs, args.seconds, args.committers, args.records, only)
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    print(f"median (min–max) of {args.runs} runs")
    for section, rows in table.items():
        print(f"-- {section}")
        for name, row in rows.items():
            if "median" in row:
                print(f"{name:<44} {row['median']} ({row['min']}–{row['max']})")
            else:
                print(f"{name:<44} " + "  ".join(f"{key} {v['median']} ({v['min']}–{v['max']})"
                                                 for key, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
