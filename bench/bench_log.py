"""Partition log throughput: appends, reads and recovery, beside the raw disk in the same run.

    python bench/bench_log.py [--json] [--dir DIR] [--runs 5] [--total-mb 256] [--recovery-mb 1024]

Appends run in page-cache mode (no fsync per batch, Kafka's default), as
`PartitionLog.append_as_leader` with 100 B and 1 KiB records in 16 KiB and
1 MiB batches. The ceiling is plain `os.write` of 1 MiB buffers to a file in
the same directory, the same number of bytes, measured right before each
append case; `x raw` is each case over the raw figure measured with it.
Reads fetch the 1 KiB / 1 MiB log back with 1 MiB fetches. Recovery writes a
log of --recovery-mb (1 KiB records in 16 KiB and 1 MiB batches), flushes it, drops it as a crash would
and reopens it with recovery point 0, so every batch is checked (warm page
cache: the log was just written). Each figure is the median of --runs runs;
every file is deleted after its measurement, so dirty pages do not pile up
between measurements.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from replog.protocol import encode_batch  # noqa: E402
from replog.storage import LogConfig, PartitionLog  # noqa: E402

MB = 1_000_000
MIB = 1 << 20
NOW_MS = 1_700_000_000_000
RECORD_OVERHEAD_BYTES = 8  # varint fields of a keyless record with a small value
APPEND_CASES = [(100, 16 * 1024), (100, MIB), (1024, 16 * 1024), (1024, MIB)]
RECOVERY_BATCH_BYTES = [16 * 1024, MIB]


def build_batch(record_bytes: int, batch_bytes: int) -> tuple[bytes, int]:
    """One batch of at most `batch_bytes` holding records of `record_bytes`; (bytes, record count)."""
    value = os.urandom(record_bytes)
    count = max(1, (batch_bytes - 61) // (record_bytes + RECORD_OVERHEAD_BYTES))
    while True:
        batch = encode_batch([(None, value)] * count, base_timestamp_ms=NOW_MS)
        if len(batch) <= batch_bytes or count == 1:
            return batch, count
        count = max(1, count * batch_bytes // len(batch) - 1)


def measure_raw(directory: Path, total_bytes: int) -> float:
    """MB/s of plain 1 MiB os.write calls to a new file, no fsync."""
    path = directory / "raw-write"
    buffer = os.urandom(MIB)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    started = time.perf_counter()
    for _ in range(total_bytes // MIB):
        os.write(fd, buffer)
    elapsed = time.perf_counter() - started
    os.close(fd)
    path.unlink()
    return (total_bytes // MIB) * MIB / elapsed / MB


def measure_append(directory: Path, total_bytes: int, record_bytes: int, batch_bytes: int) -> dict:
    batch, records_per_batch = build_batch(record_bytes, batch_bytes)
    appends = max(1, total_bytes // len(batch))
    log_dir = directory / "bench-0"
    log = PartitionLog.open(log_dir, LogConfig(), now_ms=NOW_MS)
    started = time.perf_counter()
    for _ in range(appends):
        info = log.append_as_leader(batch, 0, NOW_MS)
    elapsed = time.perf_counter() - started
    if info.error.name != "NONE":
        raise SystemExit(f"append failed: {info.reason}")
    result = {
        "mb_per_s": appends * len(batch) / elapsed / MB,
        "records_per_s": appends * records_per_batch / elapsed,
    }
    if (record_bytes, batch_bytes) == (1024, MIB):
        result["read_mb_per_s"] = measure_read(log)
    log.close(flush=False)
    shutil.rmtree(log_dir)
    return result


def measure_read(log: PartitionLog) -> float:
    """MB/s of reading the whole log back with 1 MiB fetches."""
    offset, total = 0, 0
    started = time.perf_counter()
    while offset < log.log_end_offset:
        records = log.read(offset, MIB).records
        total += len(records)
        offset = _next_offset(records)
    return total / (time.perf_counter() - started) / MB


def _next_offset(records: bytes) -> int:
    """The offset after the last whole batch of a read, from the batch headers alone."""
    position, next_offset = 0, 0
    while position < len(records):
        base_offset = int.from_bytes(records[position : position + 8], "big")
        batch_length = int.from_bytes(records[position + 8 : position + 12], "big")
        last_offset_delta = int.from_bytes(records[position + 23 : position + 27], "big")
        next_offset = base_offset + last_offset_delta + 1
        position += 12 + batch_length
    return next_offset


def measure_recovery(directory: Path, log_bytes: int, batch_bytes: int) -> dict:
    """Seconds to reopen a log of `log_bytes` with recovery point 0, and the same per GB."""
    batch, _ = build_batch(1024, batch_bytes)
    log_dir = directory / "recovery-0"
    log = PartitionLog.open(log_dir, LogConfig(), now_ms=NOW_MS)
    for _ in range(max(1, log_bytes // len(batch))):
        log.append_as_leader(batch, 0, NOW_MS)
    size_bytes = log.size_bytes
    # Flushed, then dropped as by a crash: no clean-shutdown marker, so the open scans everything.
    log.flush()
    log.close(flush=False)
    started = time.perf_counter()
    reopened = PartitionLog.open(log_dir, LogConfig(), recovery_point=0, now_ms=NOW_MS)
    elapsed = time.perf_counter() - started
    if reopened.size_bytes != size_bytes:
        raise SystemExit("recovery cut a sound log")
    reopened.close(flush=False)
    shutil.rmtree(log_dir)
    return {"seconds": elapsed, "seconds_per_gb": elapsed * 1e9 / size_bytes, "log_bytes": size_bytes}


def run_once(directory: Path, total_bytes: int) -> dict:
    """One run: each append case right after a raw write of the same size, so both see the same disk."""
    figures: dict[str, list[float]] = {}
    for record_bytes, batch_bytes in APPEND_CASES:
        raw = measure_raw(directory, total_bytes)
        result = measure_append(directory, total_bytes, record_bytes, batch_bytes)
        suffix = f"{record_bytes}b_{batch_bytes // 1024}kib"
        result["vs_raw"] = result["mb_per_s"] / raw
        figures.setdefault("raw_write_mb_per_s", []).append(raw)
        for name, value in result.items():
            figures.setdefault(f"{name}_{suffix}", []).append(value)
    return {name: statistics.median(values) for name, values in figures.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--dir", default=tempfile.gettempdir(), help="where to write (the disk under test)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--total-mb", type=int, default=256, help="bytes appended per case and run")
    parser.add_argument("--recovery-mb", type=int, default=1024, help="size of the log recovery reads")
    args = parser.parse_args()

    directory = Path(tempfile.mkdtemp(prefix="replog-bench-log-", dir=args.dir))
    try:
        runs = [run_once(directory, args.total_mb * MIB) for _ in range(args.runs)]
        recoveries = {
            batch_bytes: [measure_recovery(directory, args.recovery_mb * MIB, batch_bytes) for _ in range(args.runs)]
            for batch_bytes in RECOVERY_BATCH_BYTES
        }
    finally:
        shutil.rmtree(directory, ignore_errors=True)

    report = {name: statistics.median(run[name] for run in runs) for name in runs[0]}
    for batch_bytes, results in recoveries.items():
        suffix = f"{batch_bytes // 1024}kib"
        report[f"recovery_seconds_per_gb_{suffix}"] = statistics.median(r["seconds_per_gb"] for r in results)
        report[f"recovery_log_bytes_{suffix}"] = results[0]["log_bytes"]
    report["runs"] = args.runs
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        print_table(report)


def print_table(report: dict) -> None:
    print(f"raw os.write, 1 MiB buffers:         {report['raw_write_mb_per_s']:8.0f} MB/s")
    for record_bytes, batch_bytes in APPEND_CASES:
        suffix = f"{record_bytes}b_{batch_bytes // 1024}kib"
        print(
            f"append {record_bytes:>4} B records, {batch_bytes // 1024:>4} KiB batches: "
            f"{report['mb_per_s_' + suffix]:8.0f} MB/s {report['records_per_s_' + suffix]:12,.0f} records/s"
            f"  {report['vs_raw_' + suffix]:5.2f} x raw"
        )
    print(f"read, 1 MiB fetches:                 {report['read_mb_per_s_1024b_1024kib']:8.0f} MB/s")
    for batch_bytes in RECOVERY_BATCH_BYTES:
        suffix = f"{batch_bytes // 1024}kib"
        print(
            f"recovery from offset 0, {batch_bytes // 1024:>4} KiB batches: "
            f"{report['recovery_seconds_per_gb_' + suffix]:5.2f} s/GB "
            f"({report['recovery_log_bytes_' + suffix] / 1e9:.2f} GB log)"
        )


if __name__ == "__main__":
    main()
