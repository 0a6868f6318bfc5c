"""Record batch codec throughput: encode, decode and validate, per codec and batch size.

    python bench/bench_codec.py [--json] [--runs 5]

Each configuration encodes one batch of `batch_bytes` worth of values of
`value_bytes` each (null keys), then times encode_batch, decode_batch and
validate_batches over it. Every figure is the median of `--runs` runs; each run
repeats the operation until it has handled at least `--records` records.
MB/s counts value bytes, 10^6 bytes to the MB. Values are words from a small
vocabulary, so they compress roughly as log lines do.
"""

import argparse
import json
import random
import statistics
import string
import sys
import time

from replog.protocol import Compression, decode_batch, encode_batch, validate_batches

VALUE_SIZES = (100, 1000)
BATCH_SIZES = (16 * 1024, 1024 * 1024)


def make_values(value_bytes: int, count: int) -> list[tuple[None, bytes]]:
    """Values of words drawn from a 500-word vocabulary: they compress like log lines."""
    rng = random.Random(value_bytes)
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9))) for _ in range(500)]
    values = []
    for _ in range(count):
        text = " ".join(rng.choices(words, k=value_bytes // 3))
        values.append((None, text[:value_bytes].encode()))
    return values


def seconds_per_call(operation, records_per_call: int, records_min: int, runs: int) -> float:
    calls = max(1, -(-records_min // records_per_call))
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        for _ in range(calls):
            operation()
        samples.append((time.perf_counter() - started) / calls)
    return statistics.median(samples)


def measure(value_bytes: int, batch_bytes: int, codec: Compression, records_min: int, runs: int) -> dict:
    count = max(1, batch_bytes // value_bytes)
    items = make_values(value_bytes, count)
    encoded = encode_batch(items, compression=codec)
    payload_mb = count * value_bytes / 1e6
    row = {
        "value_bytes": value_bytes,
        "batch_bytes": batch_bytes,
        "compression": codec.name.lower(),
        "records_per_batch": count,
        "encoded_bytes": len(encoded),
    }
    operations = {
        "encode": lambda: encode_batch(items, compression=codec),
        "decode": lambda: decode_batch(encoded),
        "validate": lambda: validate_batches(encoded, max_message_bytes=len(encoded)),
    }
    for name, operation in operations.items():
        seconds = seconds_per_call(operation, count, records_min, runs)
        row[f"{name}_records_per_s"] = round(count / seconds)
        row[f"{name}_mb_per_s"] = round(payload_mb / seconds, 1)
    return row


def print_table(rows: list[dict]) -> None:
    print(f"{'value':>6} {'batch':>7} {'codec':>7} {'ratio':>6} "
          f"{'encode rec/s':>13} {'MB/s':>6} {'decode rec/s':>13} {'MB/s':>6} {'validate rec/s':>15}")
    for r in rows:
        ratio = r["records_per_batch"] * r["value_bytes"] / r["encoded_bytes"]
        print(f"{r['value_bytes']:>6} {r['batch_bytes'] // 1024:>6}K {r['compression']:>7} {ratio:>6.1f} "
              f"{r['encode_records_per_s']:>13,} {r['encode_mb_per_s']:>6.1f} "
              f"{r['decode_records_per_s']:>13,} {r['decode_mb_per_s']:>6.1f} {r['validate_records_per_s']:>15,}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--runs", type=int, default=5, help="runs per figure; the median is reported")
    parser.add_argument("--records", type=int, default=100_000, help="records handled per run, at least")
    args = parser.parse_args(argv)
    rows = [
        measure(value_bytes, batch_bytes, codec, args.records, args.runs)
        for value_bytes in VALUE_SIZES
        for batch_bytes in BATCH_SIZES
        for codec in Compression
    ]
    if args.json:
        json.dump({"python": sys.version.split()[0], "runs": args.runs, "results": rows}, sys.stdout, indent=1)
        print()
    else:
        print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
