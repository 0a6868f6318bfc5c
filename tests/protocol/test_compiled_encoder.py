"""The compiled record encoder writes exactly the bytes the Python one writes, or declines.

The producer encodes its batches through `replog/protocol/_records.c` when it is
built: rows of (key, value) or (key, value, ()) with keys and values of bytes or
None, or bare values (`send_many`'s records without key). Anything else (headers,
a bytearray, a str) it declines with None, and the Python encoder, the
reference, encodes it. `keyless_sizes` gives `send_many` each record's size bound
in one pass; the bound must be the client's `record_size_bytes`, which keeps a
batch under batch.size.
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.client.accumulator import record_size_bytes
from replog.protocol import decode_batch, encode_batch, record_encoding
from replog.protocol.record_encoding import _tuple_rows, encode_records, encode_tuples, keyless_sizes

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
compiled = record_encoding._encode_compiled

# Sizes around every varint length boundary a key or value meets (1, 2 and 3 bytes of length).
SIZES = st.sampled_from([0, 1, 63, 64, 65, 100, 8191, 8192, 8193]) | st.integers(0, 300)
FIELDS = st.none() | SIZES.map(lambda n: bytes([n % 251]) * n)
ROWS = st.lists(st.tuples(FIELDS, FIELDS) | st.tuples(FIELDS, FIELDS, st.just(())) | FIELDS, min_size=1, max_size=70)


def test_the_compiled_encoder_is_built():
    assert compiled is not None, "replog/protocol/_records.c was not built: `pip install -e .` needs a C compiler"


@FUZZ
@given(rows=ROWS)
def test_rows_encode_to_the_python_encoders_bytes(rows):
    encoded = compiled(rows)
    assert encoded is not None, "a plain row was declined"
    assert encoded == encode_records(_tuple_rows(rows))
    assert encoded == encode_records(_tuple_rows([(None, row) if row is None or row.__class__ is bytes else row
                                                  for row in rows]))  # a bare value: a record without key


def test_more_records_than_one_byte_of_offset_delta_holds():
    rows = [(None, b"v")] * 20_000  # offset deltas up to 19,999: three bytes of varint
    assert compiled(rows) == encode_records(_tuple_rows(rows))


def test_rows_outside_the_fast_path_are_declined_and_encoded_in_python():
    with_headers = [(None, b"v"), (b"k", b"v", (("trace", b"1"),))]
    assert compiled(with_headers) is None
    for odd in ([(None, bytearray(b"v"))], [("key", b"v")], [(None, b"v", None)], [[None, b"v"]], [(b"k",)],
                [bytearray(b"v")], ["v"]):
        assert compiled(odd) is None, odd
    batch = decode_batch(encode_batch(with_headers, base_timestamp_ms=7))
    assert [(r.key, r.value, r.headers) for r in batch.records] == [(None, b"v", ()), (b"k", b"v", (("trace", b"1"),))]
    assert encode_tuples(with_headers) == encode_records(_tuple_rows(with_headers))



def test_rows_with_their_own_timestamps_keep_them_and_the_batch_says_the_latest():
    rows = [(None, b"a"), (b"k", b"b", (), 1_000), (None, b"c", (("h", b"1"),), 5_000)]
    assert compiled(rows) is None
    batch = decode_batch(encode_batch(rows, base_timestamp_ms=3_000, max_timestamp_ms=5_000))
    assert [(r.timestamp, r.key, r.value) for r in batch.records] == [(3_000, None, b"a"), (1_000, b"k", b"b"),
                                                                       (5_000, None, b"c")]
    assert batch.max_timestamp == 5_000 and batch.base_timestamp == 3_000

@FUZZ
@given(values=st.lists(FIELDS, max_size=50))
def test_keyless_sizes_are_the_producers(values):
    assert keyless_sizes(values) == [record_size_bytes(None, value) for value in values]


def test_keyless_sizes_decline_what_must_be_converted_or_refused():
    assert keyless_sizes([b"a", bytearray(b"b")]) is None
    assert keyless_sizes([b"a", "text"]) is None
    assert keyless_sizes([b"a", None]) == [10, 9]
