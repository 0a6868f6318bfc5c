"""Fetched record batches as the Arrow batches Spark takes: the compiled path and the long way agree."""

import pytest

pytest.importorskip("pyspark")

import pyarrow as pa  # noqa: E402
from pyspark.sql.pandas.types import to_arrow_schema  # noqa: E402
from pyspark.sql.types import (  # noqa: E402
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from replog.core.txn.markers import TxnMarker  # noqa: E402
from replog.protocol import Compression, compression, encode_batch  # noqa: E402
from replog.protocol.control import marker_batch  # noqa: E402
from replog.spark import arrow  # noqa: E402

SPARK_FIELDS = [StructField("key", BinaryType()), StructField("value", BinaryType()),
                StructField("topic", StringType()), StructField("partition", IntegerType()),
                StructField("offset", LongType()), StructField("timestamp", TimestampType()),
                StructField("timestampType", IntegerType())]
HEADERS = StructField("headers", ArrayType(StructType([StructField("key", StringType()),
                                                       StructField("value", BinaryType())])))


def test_the_arrow_schema_is_the_one_spark_checks_batches_against():
    assert to_arrow_schema(StructType(SPARK_FIELDS), timezone="UTC").equals(arrow.arrow_schema(False))
    assert to_arrow_schema(StructType(SPARK_FIELDS + [HEADERS]), timezone="UTC").equals(arrow.arrow_schema(True))


def fetched(*batches: bytes) -> memoryview:
    return memoryview(b"".join(batches))


def build(view, first=0, until=1 << 62, include_headers=False):
    builder = arrow.ColumnBuilder("orders", 2, include_headers=include_headers)
    headers = arrow.visible_batches(view, arrow.checked_headers(view), read_committed_lso=None)
    return builder.build(view, headers, first, until)


def test_records_of_several_batches_come_out_as_one_arrow_batch_in_offset_order():
    view = fetched(encode_batch([(b"k0", b"v0"), (None, b"v1")], base_offset=10, base_timestamp_ms=1_700_000_000_000),
                   encode_batch([(b"k2", None)], base_offset=12, base_timestamp_ms=1_700_000_000_005,
                                compression=Compression.GZIP))
    batch = build(view)
    assert batch.schema.equals(arrow.ARROW_SCHEMA)
    assert batch.to_pydict() == {
        "key": [b"k0", None, b"k2"], "value": [b"v0", b"v1", None], "topic": ["orders"] * 3,
        "partition": [2, 2, 2], "offset": [10, 11, 12],
        "timestamp": batch.column("timestamp").to_pylist(), "timestampType": [0, 0, 0]}
    assert [t.timestamp() for t in batch.column("timestamp").to_pylist()] == [1_700_000_000.0, 1_700_000_000.0,
                                                                               1_700_000_000.005]


def test_only_offsets_in_the_range_are_kept():
    view = fetched(encode_batch([(None, b"%d" % i) for i in range(10)], base_offset=100))
    batch = build(view, first=103, until=106)
    assert batch.column("offset").to_pylist() == [103, 104, 105]
    assert build(view, first=200, until=300) is None


def test_headers_come_along_when_asked_for_and_control_batches_never_do():
    marker = marker_batch(TxnMarker(7, 0, 0, commit=True), timestamp_ms=1, base_offset=2)
    view = fetched(encode_batch([(b"k", b"v", [("trace", b"1"), ("empty", None)]), (b"k", b"w")], base_offset=0),
                   marker)
    with_headers = build(view, include_headers=True)
    assert with_headers.column("headers").to_pylist() == [
        [{"key": "trace", "value": b"1"}, {"key": "empty", "value": None}], []]
    assert with_headers.column("offset").to_pylist() == [0, 1]
    assert build(view).column("value").to_pylist() == [b"v", b"w"]


def test_a_compressed_batch_with_headers_is_inflated_once(monkeypatch):
    view = fetched(encode_batch([(b"k", b"v", [("trace", b"1")]), (None, b"w")], base_offset=0,
                                compression=Compression.ZSTD))
    inflated = []
    inflate = compression._decompress
    monkeypatch.setattr(compression, "_decompress", lambda *args: inflated.append(1) or inflate(*args))
    batch = build(view, include_headers=True)
    assert batch.column("headers").to_pylist() == [[{"key": "trace", "value": b"1"}], []]
    assert batch.column("value").to_pylist() == [b"v", b"w"]
    assert len(inflated) == 1


def test_the_long_way_gives_the_same_batch(monkeypatch):
    view = fetched(encode_batch([(b"k%d" % i, b"v" * i) for i in range(50)], base_offset=5),
                   encode_batch([(None, None)], base_offset=55))
    assert arrow.decode_columns is not None, "the compiled decoder is built by `make setup`"
    compiled = build(view, first=7)
    monkeypatch.setattr(arrow, "decode_columns", None)
    assert build(view, first=7).equals(compiled)


def test_read_committed_drops_aborted_transactions():
    aborted_data = encode_batch([(None, b"aborted")], base_offset=0, producer_id=9, producer_epoch=0,
                                transactional=True)
    abort = marker_batch(TxnMarker(9, 0, 0, commit=False), timestamp_ms=1, base_offset=1)
    kept = encode_batch([(None, b"kept")], base_offset=2)
    view = fetched(aborted_data, abort, kept)
    headers = arrow.visible_batches(view, arrow.checked_headers(view), read_committed_lso=3, aborted=[(9, 0)])
    batch = arrow.ColumnBuilder("t", 0, include_headers=False).build(view, headers, 0, 3)
    assert batch.column("value").to_pylist() == [b"kept"]
    assert pa.types.is_binary(batch.schema.field("value").type)
