"""The raw gRPC ceiling on this machine: requests carrying a payload to another process.

What a produce request costs before replog does anything: a grpc.aio client
sends `size`-byte messages to a grpc.aio server in another process, which
answers with 8 bytes, with a fixed number of requests in flight — as unary
calls, or as messages on long-lived bidirectional streams (one per request in
flight, each message answered before the next is sent), which is how replog's
clients and followers talk to leaders. Reported per message size and mode:
requests/s, MB/s, and the records/s this would carry for 100-byte and 1 KB
records. With --in-flight 1, 1/requests per second is the round trip.

    python bench/bench_grpc_echo.py [--sizes 16384,204800,1048576] [--modes unary,stream] [--seconds 3]
                                    [--runs 3] [--in-flight 4] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time

from replog.rpc.transport import choose_transport

choose_transport()  # the transport replog's processes use, before grpc is imported

import grpc  # noqa: E402

METHODS = {"unary": "/bench.Echo/Call", "stream": "/bench.Echo/Stream"}
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
OPTIONS = [("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
           ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES)]
RECORD_OVERHEAD_BYTES = 8  # a v2 record's framing for a small record, roughly


def identity(data: bytes) -> bytes:
    return data


async def serve(port: int) -> None:
    async def call(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        return len(request).to_bytes(8, "big")

    async def stream(requests, context: grpc.aio.ServicerContext):
        async for request in requests:
            yield len(request).to_bytes(8, "big")

    server = grpc.aio.server(options=OPTIONS)
    handlers = {
        "Call": grpc.unary_unary_rpc_method_handler(call, request_deserializer=identity, response_serializer=identity),
        "Stream": grpc.stream_stream_rpc_method_handler(stream, request_deserializer=identity,
                                                        response_serializer=identity),
    }
    server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler("bench.Echo", handlers)])
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    await server.wait_for_termination()


async def measure(address: str, size: int, seconds: float, in_flight: int, mode: str) -> float:
    """Requests per second with `in_flight` concurrent callers for `seconds`."""
    payload = os.urandom(size)
    async with grpc.aio.insecure_channel(address, options=OPTIONS) as channel:
        if mode == "unary":
            call = channel.unary_unary(METHODS[mode], request_serializer=identity, response_deserializer=identity)
            requesters = [call] * in_flight
        else:
            open_stream = channel.stream_stream(METHODS[mode], request_serializer=identity,
                                                response_deserializer=identity)
            requesters = [_stream_requester(open_stream()) for _ in range(in_flight)]
        for requester in requesters:
            for _ in range(5):
                await requester(payload)
        deadline = time.perf_counter() + seconds
        counts = [0] * in_flight

        async def caller(index: int) -> None:
            request = requesters[index]
            while time.perf_counter() < deadline:
                await request(payload)
                counts[index] += 1

        started = time.perf_counter()
        await asyncio.gather(*(caller(i) for i in range(in_flight)))
        return sum(counts) / (time.perf_counter() - started)


def _stream_requester(stream):
    async def request(payload: bytes) -> bytes:
        await stream.write(payload)
        return await stream.read()

    return request


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"the echo server did not listen on port {port} within {timeout_s:g} s")


def run(sizes: list[int], seconds: float, runs: int, in_flight: int, modes: list[str]) -> list[dict[str, float]]:
    port = free_port()
    server = subprocess.Popen([sys.executable, __file__, "--serve", str(port)])
    try:
        wait_for_port(port)
        results = []
        for size in sizes:
            measured = {mode: [] for mode in modes}
            for _ in range(runs):  # alternated, so that a noisy moment hits both modes
                for mode in modes:
                    measured[mode].append(asyncio.run(measure(f"127.0.0.1:{port}", size, seconds, in_flight, mode)))
            results += [_row(size, mode, rates, runs) for mode, rates in measured.items()]
        return results
    finally:
        server.terminate()
        server.wait(timeout=10)


def _row(size: int, mode: str, rates: list[float], runs: int) -> dict[str, float | str]:
    calls_per_s = statistics.median(rates)
    return {
        "mode": mode,
        "message_bytes": size,
        "calls_per_s": round(calls_per_s, 1),
        "mb_per_s": round(calls_per_s * size / 1e6, 1),
        "records_per_s_100b": round(calls_per_s * size / (100 + RECORD_OVERHEAD_BYTES)),
        "records_per_s_1kb": round(calls_per_s * size / (1024 + RECORD_OVERHEAD_BYTES)),
        "runs": runs,
        "min_calls_per_s": round(min(rates), 1),
        "max_calls_per_s": round(max(rates), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="16384,204800,1048576", help="message sizes in bytes")
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one run")
    parser.add_argument("--runs", type=int, default=3, help="runs per size; the median is reported")
    parser.add_argument("--in-flight", type=int, default=4, help="requests in flight at once")
    parser.add_argument("--modes", default="unary,stream", help="unary calls, stream messages, or both")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
        return 0
    modes = args.modes.split(",")
    if not set(modes) <= METHODS.keys():
        parser.error(f"--modes takes {', '.join(METHODS)}")
    results = run([int(s) for s in args.sizes.split(",")], args.seconds, args.runs, args.in_flight, modes)
    if args.json:
        print(json.dumps(results))
        return 0
    print(f"{'mode':>6} {'message':>10} {'requests/s':>10} {'MB/s':>7} {'100B rec/s':>11} {'1KB rec/s':>10}"
          f"   (median of {args.runs}, {args.in_flight} in flight)")
    for row in results:
        print(f"{row['mode']:>6} {row['message_bytes']:>10} {row['calls_per_s']:>10} {row['mb_per_s']:>7} "
              f"{row['records_per_s_100b']:>11} {row['records_per_s_1kb']:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
