"""The Node client agrees with the Python one byte for byte, without a cluster: its own tests
(node --test), the batches each encodes and the other decodes, where keys land, and which errors
are retriable."""

from __future__ import annotations

import json
import random

import pytest

from replog.client.partitioner import partition_for_key
from replog.core.errors import ErrorCode
from replog.protocol.batch import Compression, Record, encode_batch, iter_records
from tests.clients.node import CLIENT_DIR, run_node, script

pytestmark = pytest.mark.timeout(120)


def test_the_node_clients_own_tests_pass() -> None:
    files = sorted(str(path.relative_to(CLIENT_DIR)) for path in (CLIENT_DIR / "test").glob("*.test.js"))
    result = run_node("--test", *files, timeout_s=90, cwd=CLIENT_DIR)
    assert "# fail 0" in result.stdout, result.stdout


def sample_records(rng: random.Random) -> list[Record]:
    records = []
    for offset in range(200):
        key = None if offset % 7 == 0 else rng.randbytes(rng.randrange(0, 40))
        value = None if offset % 11 == 0 else rng.randbytes(rng.choice([0, 5, 100, 1000, 20000]))
        headers = tuple((f"h{n}-é", None if n == 1 else rng.randbytes(n * 3)) for n in range(offset % 3))
        records.append(Record(offset, 1_700_000_000_000 + rng.randrange(-5000, 5000), key, value, headers))
    return records


def as_json(records: list[Record]) -> list[dict]:
    def hexed(data):
        return None if data is None else data.hex()

    return [{"offset": r.offset, "timestamp": r.timestamp, "key": hexed(r.key), "value": hexed(r.value),
             "headers": [[k, hexed(v)] for k, v in r.headers]} for r in records]


def test_node_encodes_the_same_bytes_as_python_and_python_reads_them() -> None:
    records = sample_records(random.Random(18))
    node_hex = run_node(script("codec.js"), "encode", input_text=json.dumps(as_json(records))).stdout
    python_bytes = encode_batch(records, base_timestamp_ms=records[0].timestamp)
    assert node_hex == python_bytes.hex()
    assert list(iter_records(bytes.fromhex(node_hex))) == records


def test_node_decodes_what_python_encodes_uncompressed_and_gzipped() -> None:
    records = sample_records(random.Random(19))
    batches = encode_batch(records[:120]) + encode_batch(records[120:], base_offset=120, compression=Compression.GZIP)
    decoded = json.loads(run_node(script("codec.js"), "decode", input_text=batches.hex()).stdout)
    assert decoded == as_json(records)


def test_every_key_lands_on_the_partition_the_python_producer_chooses() -> None:
    rng = random.Random(20)
    keys = [rng.randbytes(rng.randrange(0, 64)) for _ in range(2000)] + [f"key-{i}".encode() for i in range(2000)]
    for partitions in (1, 6, 12, 50):
        placed = json.loads(run_node(script("codec.js"), "place", str(partitions),
                                     input_text=json.dumps([k.hex() for k in keys])).stdout)
        assert placed == [partition_for_key(k, partitions) for k in keys]


def test_node_retries_the_errors_python_retries() -> None:
    node = json.loads(run_node(script("codec.js"), "retriable").stdout)
    assert node == sorted(code.name for code in ErrorCode if code.retriable)
