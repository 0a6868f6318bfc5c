"""What a topic's configs cost the leader per produced batch, beside the checks every batch gets.

    python bench/bench_topic_rules.py [--json] [--runs 5] [--total-mb 64] [--record-size 100]

Each case runs the broker's own produce step (`replog.broker.produce._stored_form`: CRC and size
checks, the topic's record rules, recompression into the topic's compression.type; then the
LogAppendTime stamp where the topic asks for it) over producer batches of about 16 KiB, the
producer's default batch.size, holding JSON-like records that compress as real ones do. The
ceiling is the first case, a topic on its defaults (`x ceiling` divides by it): what every batch
pays anyway. "records decoded" runs a rule without the compiled walk over the records. Each
figure is the median of --runs runs over --total-mb of batches; each run goes through every case.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from replog.broker.produce import _stored_form  # noqa: E402
from replog.protocol import Compression, encode_batch, record_decoding, stamp_log_append_time  # noqa: E402
from replog.storage import LogConfig  # noqa: E402

MB = 1_000_000
BATCH_BYTES = 16 * 1024
NOW_MS = 1_700_000_000_000

# (label, the producer's codec, the topic's configs[, True: records decoded, the compiled walk off])
CASES = [
    ("defaults (ceiling)", Compression.NONE, {}),
    ("message.timestamp.type=LogAppendTime", Compression.NONE, {"message.timestamp.type": "LogAppendTime"}),
    ("cleanup.policy=compact (keys checked)", Compression.NONE, {"cleanup.policy": "compact"}),
    ("  the same, records decoded", Compression.NONE, {"cleanup.policy": "compact"}, True),
    ("message.timestamp.before.max.ms set", Compression.NONE, {"message.timestamp.before.max.ms": "86400000"}),
    ("  the same, records decoded", Compression.NONE, {"message.timestamp.before.max.ms": "86400000"}, True),
    ("compression.type=zstd, producer zstd", Compression.ZSTD, {"compression.type": "zstd"}),
    ("compression.type=zstd, producer none", Compression.NONE, {"compression.type": "zstd"}),
    ("compression.type=lz4, producer none", Compression.NONE, {"compression.type": "lz4"}),
    ("compression.type=uncompressed, producer zstd", Compression.ZSTD, {"compression.type": "uncompressed"}),
]


def record(index: int, size: int) -> bytes:
    text = json.dumps({"order": index, "customer": f"c-{index % 977}", "amount": index % 1000 / 10,
                       "currency": "EUR", "items": ["book", "pen"]})
    return text.encode().ljust(size, b" ")[:size]


def producer_batch(codec: Compression, record_size: int) -> tuple[bytes, int]:
    """About BATCH_BYTES of uncompressed records in `codec`, keyed; (bytes, record count)."""
    count = max(1, BATCH_BYTES // (record_size + 12))
    rows = [(b"k%d" % (i % 977), record(i, record_size)) for i in range(count)]
    return encode_batch(rows, base_timestamp_ms=NOW_MS, compression=codec), count


def measure(codec: Compression, configs: dict[str, str], record_size: int, total_mb: float,
            decoded: bool = False) -> float:
    """Records per second through the leader's produce step; `decoded`: without the compiled walk over
    the records, so that the rules decode them (as where the C extension is not built)."""
    config = LogConfig.from_topic_config(configs)
    batch, count = producer_batch(codec, record_size)
    rounds = max(1, int(total_mb * MB) // (count * record_size))
    walk = record_decoding._refused_compiled
    record_decoding._refused_compiled = None if decoded else walk
    try:
        started = time.perf_counter()
        for _ in range(rounds):
            stored, headers = _stored_form(batch, config, NOW_MS)
            if config.log_append_time:
                stamp_log_append_time(bytearray(stored), headers, NOW_MS)
        return rounds * count / (time.perf_counter() - started)
    finally:
        record_decoding._refused_compiled = walk


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--total-mb", type=float, default=64.0, help="record bytes per case and run")
    parser.add_argument("--record-size", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rates: list[list[float]] = [[] for _ in CASES]
    for _ in range(args.runs):  # each run goes through every case, so that a noisy minute hits them all
        for index, (_, codec, configs, *decoded) in enumerate(CASES):
            rates[index].append(measure(codec, configs, args.record_size, args.total_mb, *decoded))
    results = [{"case": case[0], "records_per_s": statistics.median(case_rates)}
               for case, case_rates in zip(CASES, rates)]
    ceiling = results[0]["records_per_s"]
    for result in results:
        result["x_ceiling"] = result["records_per_s"] / ceiling
    if args.json:
        print(json.dumps({"record_size": args.record_size, "batch_bytes": BATCH_BYTES, "cases": results}))
        return 0
    print(f"{args.record_size} B records in {BATCH_BYTES // 1024} KiB batches, median of {args.runs} runs")
    print(f"{'case':48} {'records/s':>12} {'MB/s':>8} {'x ceiling':>10}")
    for result in results:
        rate = result["records_per_s"]
        print(f"{result['case']:48} {rate:12,.0f} {rate * args.record_size / MB:8.1f} {result['x_ceiling']:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
