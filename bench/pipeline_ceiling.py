"""The ceiling for acks=all produce: a bare pull-replication pipeline in Python, moving raw bytes.

Four processes on grpc.aio, laid out as replog's producer, leader and followers are:

- a producer sends ~1 MiB record batches to the leader on one stream, up to `--in-flight` of them
  unanswered. The batches are encoded once, before the clock starts, with replog.protocol's
  encode_batch, so the bytes on the wire are replog's; what encoding costs per record on one
  core is measured beside it and reported as `encode_records_per_s`;
- the leader keeps the batches in memory: no validation, no log, no offsets stamped;
- two followers pull them with long-polling fetches on one stream each, one fetch in flight, an
  answer carrying up to FETCH_BYTES_MAX, and drop what they get;
- the leader answers a batch once both followers' fetches asked for what comes after it (acks=all:
  a follower's next fetch position is how a leader learns that the follower has a batch).

With `--write-log`, the leader and each follower also write what they take to a file of their
own (`os.pwrite`, one call a batch or fetch answer, no fsync), as a broker's log does: the same
pipeline with the page-cache writes of a log and nothing else of one.

Every process runs on grpc's older transport and with the malloc settings of replog's processes
(`replog/rpc/transport.py`, `replog/rpc/allocator.py`), so that the ceiling is the same machine's.

Reports records/s and MB/s (MiB, as `replog bench produce` counts them) from the first timed
batch sent to the last one answered, after a warm-up of a few batches.

    python bench/pipeline_ceiling.py [--record-size 100] [--records 2000000] [--in-flight 5] [--write-log] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
from collections import deque

from replog.rpc.allocator import keep_freed_memory
from replog.rpc.transport import choose_transport

choose_transport()  # the transport replog's processes use, before grpc is imported
keep_freed_memory()  # and their malloc settings: the same pages serve message after message

import grpc  # noqa: E402
from bench_grpc_echo import OPTIONS, free_port, identity, wait_for_port  # noqa: E402

from replog.cli.bench import rates  # noqa: E402
from replog.protocol import encode_batch  # noqa: E402
from replog.storage.segment import write_all  # noqa: E402

BATCH_BYTES = 1 << 20  # the producer's default batch.size
FETCH_BYTES_MAX = 10 << 20  # Kafka's replica.fetch.response.max.bytes
FETCH_WAIT_S_MAX = 0.5  # replica.fetch.wait.max.ms
FOLLOWERS = 2
WARM_UP_BATCHES = 10
ENCODE_RUNS = 5
FETCH = struct.Struct(">Bq")  # follower index, the byte position it wants next
ACK = struct.Struct(">q")  # the log end after the acknowledged batch
SERVICE = "ceiling.Pipeline"


class MemoryLog:
    """The leader's batches in memory, and how far each follower has asked (positions in bytes)."""

    def __init__(self, followers: int, log_fd: int | None = None) -> None:
        self.batches: deque[tuple[int, bytes]] = deque()  # (start position, batch), oldest first
        self.log_fd = log_fd
        self.log_end = 0
        self.positions = [0] * followers
        self._changed = asyncio.Event()

    @property
    def replicated(self) -> int:
        """Everything below this position has reached every follower."""
        return min(self.positions)

    def append(self, batch: bytes) -> int:
        if self.log_fd is not None:
            write_all(self.log_fd, batch, self.log_end)
        self.batches.append((self.log_end, batch))
        self.log_end += len(batch)
        self._wake()
        return self.log_end

    def fetched(self, follower: int, position: int) -> None:
        self.positions[follower] = position
        while self.batches and self.batches[0][0] + len(self.batches[0][1]) <= self.replicated:
            self.batches.popleft()  # every follower has it: nothing will ask for it again
        self._wake()

    def read(self, position: int) -> bytes:
        chosen, size = [], 0
        for start, batch in self.batches:
            if start < position:
                continue
            if chosen and size + len(batch) > FETCH_BYTES_MAX:
                break
            chosen.append(batch)
            size += len(batch)
        return b"".join(chosen)

    async def until(self, condition, timeout_s: float | None = None) -> None:
        """Wait until condition() holds, or timeout_s passed."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while not condition():
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return
            try:
                await asyncio.wait_for(self._changed.wait(), left)
            except asyncio.TimeoutError:
                return

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()


def log_file(log_dir: str | None, name: str) -> int | None:
    return None if log_dir is None else os.open(os.path.join(log_dir, name), os.O_WRONLY | os.O_CREAT, 0o644)


async def lead(port: int, log_dir: str | None) -> None:
    log = MemoryLog(FOLLOWERS, log_file(log_dir, "leader.log"))

    async def produce(batches, context: grpc.aio.ServicerContext):
        acks: asyncio.Queue[int | None] = asyncio.Queue()

        async def take() -> None:
            async for batch in batches:
                acks.put_nowait(log.append(batch))
            acks.put_nowait(None)

        taking = asyncio.create_task(take())
        while (end := await acks.get()) is not None:
            await log.until(lambda: log.replicated >= end)
            yield ACK.pack(end)
        await taking

    async def fetch(requests, context: grpc.aio.ServicerContext):
        async for request in requests:
            follower, position = FETCH.unpack(request)
            log.fetched(follower, position)
            await log.until(lambda: log.log_end > position, FETCH_WAIT_S_MAX)
            yield log.read(position)

    handlers = {name: grpc.stream_stream_rpc_method_handler(handler, request_deserializer=identity,
                                                            response_serializer=identity)
                for name, handler in (("Produce", produce), ("Fetch", fetch))}
    server = grpc.aio.server(options=OPTIONS)
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(SERVICE, handlers)])
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


async def follow(address: str, follower: int, log_dir: str | None) -> None:
    fd = log_file(log_dir, f"follower-{follower}.log")
    async with grpc.aio.insecure_channel(address, options=OPTIONS) as channel:
        stream = channel.stream_stream(f"/{SERVICE}/Fetch", request_serializer=identity,
                                       response_deserializer=identity)()
        position = 0
        while True:
            await stream.write(FETCH.pack(follower, position))
            answer = await stream.read()
            if fd is not None:
                write_all(fd, answer, position)
            position += len(answer)


async def produce(address: str, batch: bytes, batches: int, in_flight: int) -> float:
    """Send `batches` copies of batch, `in_flight` unanswered at most; seconds from first send to last answer."""
    async with grpc.aio.insecure_channel(address, options=OPTIONS) as channel:
        stream = channel.stream_stream(f"/{SERVICE}/Produce", request_serializer=identity,
                                       response_deserializer=identity)()
        window = asyncio.Semaphore(in_flight)

        async def send(count: int) -> None:
            for _ in range(count):
                await window.acquire()
                await stream.write(batch)

        async def answered(count: int) -> None:
            for _ in range(count):
                await stream.read()
                window.release()

        await asyncio.gather(send(WARM_UP_BATCHES), answered(WARM_UP_BATCHES))
        started = time.perf_counter()
        await asyncio.gather(send(batches), answered(batches))
        elapsed = time.perf_counter() - started
        await stream.done_writing()
        return elapsed


def records_per_batch(record_size: int) -> int:
    value = os.urandom(record_size)
    sample = 1000
    per_record = (len(encode_batch([(None, value)] * sample)) - len(encode_batch([(None, value)]))) / (sample - 1)
    return max(1, int(BATCH_BYTES / per_record))


def producer_main(address: str, record_size: int, records: int, in_flight: int) -> dict[str, float]:
    value = os.urandom(record_size)
    rows = [(None, value)] * records_per_batch(record_size)
    encode_s = []
    for _ in range(ENCODE_RUNS):
        started = time.perf_counter()
        batch = encode_batch(rows)
        encode_s.append(time.perf_counter() - started)
    batches = -(-records // len(rows))
    elapsed = asyncio.run(produce(address, batch, batches, in_flight))
    return {**rates(batches * len(rows), record_size, elapsed), "records_per_batch": len(rows),
            "batch_bytes": len(batch), "encode_records_per_s": round(len(rows) / min(encode_s), 1)}


def run(record_size: int, records: int, in_flight: int = 5, write_log: bool = False) -> dict[str, float]:
    """One measurement: start the leader and followers, run the producer, stop them all."""
    with tempfile.TemporaryDirectory(prefix="replog-ceiling-") as log_dir:
        return _run(record_size, records, in_flight, ["--log-dir", log_dir] if write_log else [])


def _run(record_size: int, records: int, in_flight: int, log_args: list[str]) -> dict[str, float]:
    port = free_port()
    here = [sys.executable, os.path.abspath(__file__)]
    processes = [subprocess.Popen([*here, "--lead", str(port), *log_args])]
    try:
        wait_for_port(port)
        processes += [subprocess.Popen([*here, "--follow", f"127.0.0.1:{port}", str(i), *log_args])
                      for i in range(FOLLOWERS)]
        out = subprocess.run([*here, "--produce", f"127.0.0.1:{port}", "--record-size", str(record_size),
                              "--records", str(records), "--in-flight", str(in_flight), "--json"],
                             capture_output=True, text=True, timeout=600, check=True).stdout
        return json.loads(out)
    finally:
        for process in reversed(processes):  # the followers first, so that none sees its leader go
            process.terminate()
        for process in processes:
            process.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record-size", type=int, default=100, metavar="B")
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--in-flight", type=int, default=5, help="batches the producer keeps unanswered")
    parser.add_argument("--write-log", action="store_true",
                        help="the leader and followers also write what they take to files, as a log does")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--log-dir", help=argparse.SUPPRESS)
    parser.add_argument("--lead", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--follow", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--produce", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.record_size < 0 or args.records < 1 or args.in_flight < 1:
        parser.error("--records and --in-flight must be at least 1, --record-size at least 0")
    if args.lead:
        asyncio.run(lead(args.lead, args.log_dir))
        return 0
    if args.follow:
        asyncio.run(follow(args.follow[0], int(args.follow[1]), args.log_dir))
        return 0
    if args.produce:
        result = producer_main(args.produce, args.record_size, args.records, args.in_flight)
    else:
        result = run(args.record_size, args.records, args.in_flight, args.write_log)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"{result['records_per_s']:,.0f} records/s  {result['mb_per_s']:.1f} MB/s  "
              f"({result['records_per_batch']:,} records of {args.record_size} B a batch; "
              f"encoding alone {result['encode_records_per_s']:,.0f} records/s on one core)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
