"""The Node client agrees with the Python one byte for byte, without a cluster: its own tests
(node --test), the batches each encodes and the other decodes, where keys land, which errors are
retriable, a transactional producer's states and reactions, and what read_committed drops."""

from __future__ import annotations

import json
import random

import pytest

from replog.client.partitioner import partition_for_key
from replog.core.errors import ErrorCode
from replog.core.txn.markers import TxnMarker
from replog.core.txn.producer import TRANSITIONS, ProducerTxnEvent, ProducerTxnState, Reaction, Request, reaction
from replog.core.txn.read_committed import read_committed
from replog.protocol.batch import Compression, Record, encode_batch, iter_batches, iter_records
from replog.protocol.control import fetched_batch, marker_batch
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


def test_node_moves_between_transaction_states_and_reads_answers_as_python_does() -> None:
    events = {ProducerTxnEvent.INIT: "init", ProducerTxnEvent.INITIALIZED: "initialized",
              ProducerTxnEvent.BEGIN: "begin", ProducerTxnEvent.COMMIT: "commit", ProducerTxnEvent.ABORT: "abort",
              ProducerTxnEvent.PREPARE: "prepare",
              ProducerTxnEvent.ENDED: "ended", ProducerTxnEvent.ABORTABLE_ERROR: "abortable",
              ProducerTxnEvent.FATAL_ERROR: "fatal"}
    reactions = {Reaction.DONE: "done", Reaction.FIND_COORDINATOR: "findCoordinator", Reaction.RETRY: "retry",
                 Reaction.ABORTABLE: "abortable", Reaction.FENCED: "fenced", Reaction.FATAL: "fatal"}
    codes = [code.name for code in ErrorCode]
    node = json.loads(run_node(script("codec.js"), "transactions", input_text=json.dumps(codes)).stdout)

    python_moves = sorted([state.name, events[event], after.name] for (state, event), after in TRANSITIONS.items())
    assert sorted(node["transitions"]) == python_moves
    assert sorted(node["states"]) == sorted(state.name for state in ProducerTxnState)
    for request in Request:
        assert node["reactions"][request.value] == {code.name: reactions[reaction(request, code)] for code in ErrorCode}


def test_node_drops_what_python_drops_under_read_committed() -> None:
    """Interleaved transactions of three producers, one aborted before, between and after the others'
    commits, a marker-only answer start, and a plain batch: Node keeps exactly the records Python keeps."""
    
    pieces, offset, aborted, first = [], 0, [], {}

    def data(producer_id: int, count: int = 2, transactional: bool = True) -> None:
        nonlocal offset
        if transactional:
            first.setdefault(producer_id, offset)
        writer = dict(producer_id=producer_id, producer_epoch=0, base_sequence=offset) if transactional else {}
        pieces.append(encode_batch([b"v%d" % (offset + i) for i in range(count)], base_offset=offset,
                                   transactional=transactional, **writer))
        offset += count

    def end(producer_id: int, commit: bool) -> None:
        nonlocal offset
        if not commit:
            aborted.append((producer_id, first[producer_id]))
        first.pop(producer_id)
        pieces.append(marker_batch(TxnMarker(producer_id, 1, 0, commit), timestamp_ms=0, base_offset=offset))
        offset += 1

    end_only = 7  # an aborted transaction whose data came before this answer: only its marker is here
    aborted.append((end_only, 0))
    pieces.append(marker_batch(TxnMarker(end_only, 1, 0, False), timestamp_ms=0, base_offset=offset))
    offset += 1
    data(end_only)  # its next transaction, committed below
    data(1), data(2), data(1), data(3), data(2)
    end(1, commit=False)
    data(2), data(3)
    end(2, commit=True)
    data(1), data(-1, transactional=False)
    end(3, commit=False)
    end(1, commit=True)
    end(end_only, commit=True)
    answer = b"".join(pieces)

    expected = [r.offset for r in read_committed([fetched_batch(b) for b in iter_batches(answer)], aborted, offset)]
    node = json.loads(run_node(script("codec.js"), "read_committed",
                               input_text=json.dumps({"batches": answer.hex(), "aborted": aborted})).stdout)
    assert node == expected
    assert len(expected) < offset - 7  # records of both aborted transactions were dropped
