"""The compiled record decoder says exactly what the Python one says, or declines.

The consumer decodes through `replog/protocol/_records.c` when it is built. It
may only ever return what `decode_records_python` returns for the same bytes;
on anything it does not handle it returns None, and the Python decoder decides
(decodes the exotic input, or raises the error that names the problem). Valid
records as producers write them must never be declined: that is the fast path.

The produce path's walk over record lengths has a compiled form too
(`records_tile`): it must accept exactly what the Python walk accepts.
"""

import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.protocol import encode_batch, record_decoding
from replog.protocol.layout import ATTRIBUTES_OFFSET, CRC_OFFSET, RECORDS_COUNT_OFFSET, RECORDS_OFFSET
from replog.protocol.record_decoding import decode_records, decode_records_python
from replog.protocol.record_encoding import encode_records
from replog.protocol.records import Record
from replog.protocol.validation import validate_batches

FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
compiled = record_decoding._decode_compiled

BYTES_OR_NONE = st.none() | st.binary(max_size=40)
HEADERS = st.lists(st.tuples(st.text(max_size=6), BYTES_OR_NONE), max_size=3).map(tuple)
ROWS = st.lists(
    st.tuples(st.integers(0, 2**31 - 1), st.integers(-(2**40), 2**40), BYTES_OR_NONE, BYTES_OR_NONE, HEADERS),
    min_size=1, max_size=8,
)
BASE_OFFSETS = st.integers(0, 2**62)
BASE_TIMESTAMPS = st.integers(-(2**41), 2**41)


def python_outcome(data: bytes, count: int, base_offset: int, base_timestamp: int, override):
    try:
        return decode_records_python(data, count, base_offset, base_timestamp, override)
    except (ValueError, IndexError):
        return "error"


def test_the_compiled_decoder_is_built():
    assert compiled is not None, "replog/protocol/_records.c was not built: `pip install -e .` needs a C compiler"


@FUZZ
@given(rows=ROWS, base_offset=BASE_OFFSETS, base_timestamp=BASE_TIMESTAMPS, override=st.none() | BASE_TIMESTAMPS)
def test_records_as_producers_write_them_decode_the_same_and_are_never_declined(rows, base_offset, base_timestamp,
                                                                              override):
    data = encode_records(rows)
    fast = compiled(data, len(rows), base_offset, base_timestamp, override, Record, (), ())
    assert fast is not None
    assert fast == decode_records_python(data, len(rows), base_offset, base_timestamp, override)
    assert all(type(record) is Record for record in fast)


@FUZZ
@given(rows=ROWS, flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=4),
       cut=st.integers(min_value=0), count_delta=st.integers(-1, 1))
def test_damaged_records_are_decoded_the_same_or_declined(rows, flips, cut, count_delta):
    data = bytearray(encode_records(rows))
    for position, byte in flips:
        data[position % len(data)] = byte
    data = bytes(data[: len(data) - cut % 3])
    count = len(rows) + count_delta
    fast = compiled(data, count, 0, 1_700_000_000_000, None, Record, (), ())
    if fast is not None:
        assert fast == python_outcome(data, count, 0, 1_700_000_000_000, None)


@FUZZ
@given(data=st.binary(max_size=64), count=st.integers(0, 8))
def test_random_bytes_are_decoded_the_same_or_declined(data, count):
    fast = compiled(data, count, 5, 0, None, Record, (), ())
    if fast is not None:
        assert fast == python_outcome(data, count, 5, 0, None)


def test_a_consumer_shape_puts_its_fields_around_the_record():
    rows = [(0, 0, b"k", b"v", ()), (1, 3, None, b"w", (("h", None),))]
    data = encode_records(rows)
    shaped = decode_records(data, 2, 10, 100, None, tuple, ("topic", 4), (7,))
    assert shaped == [("topic", 4, 10, 100, b"k", b"v", (), 7), ("topic", 4, 11, 103, None, b"w", (("h", None),), 7)]


def test_what_the_compiled_decoder_declines_the_python_decoder_reports():
    # A 10-byte timestamp delta is legal Kafka but outside the compiled path.
    data = encode_records([(0, 2**62, None, b"v", ())])
    assert compiled(data, 1, 0, 0, None, Record, (), ()) is None
    assert decode_records(data, 1, 0, 0, None) == [Record(0, 2**62, None, b"v", ())]


# -- the produce path's walk over record lengths -------------------------------------------------

tile = record_decoding._tile_compiled


def walks_clean(data: bytes, count: int) -> bool:
    return record_decoding.walk_records(data, 0, len(data), count) is None


@FUZZ
@given(rows=ROWS, flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=3),
       cut=st.integers(0, 3), count_delta=st.integers(-1, 1))
def test_the_compiled_walk_accepts_exactly_what_the_python_walk_accepts(rows, flips, cut, count_delta):
    data = bytearray(encode_records(rows))
    for position, byte in flips:
        data[position % len(data)] = byte
    data = bytes(data[: len(data) - cut])
    count = len(rows) + count_delta
    assert tile(data, count, record_decoding.RECORD_BODY_MIN) == walks_clean(data, count)
    if not flips and not cut and not count_delta:
        assert tile(data, count, record_decoding.RECORD_BODY_MIN)


@FUZZ
@given(data=st.binary(max_size=64), count=st.integers(0, 8))
def test_the_compiled_walk_judges_random_bytes_as_the_python_walk_does(data, count):
    assert tile(data, count, record_decoding.RECORD_BODY_MIN) == walks_clean(data, count)


def test_a_batch_whose_records_do_not_fill_it_is_refused_with_the_python_walks_reason():
    batch = bytearray(encode_batch([(None, b"x" * 10)] * 3))
    assert validate_batches(batch, max_message_bytes=1 << 20).ok
    # Two records claimed (compaction may leave fewer than the offsets span), three there,
    # under a CRC that matches: only the walk finds the third.
    batch[RECORDS_COUNT_OFFSET:RECORDS_OFFSET] = (2).to_bytes(4, "big")
    batch[CRC_OFFSET:ATTRIBUTES_OFFSET] = crc32c.crc32c(bytes(batch[ATTRIBUTES_OFFSET:])).to_bytes(4, "big")
    result = validate_batches(batch, max_message_bytes=1 << 20)
    assert not result.ok and "bytes after its 2 records" in result.reason, result.reason


# -- the leader's walk for the records a topic refuses -------------------------------------------

refused = record_decoding._refused_compiled


def refused_by_decoding(data: bytes, count: int, base_timestamp: int, keys_required: bool, earliest: int):
    """What the walk must answer, found by decoding: the first refused record's index, -1, or "error"."""
    records = python_outcome(data, count, 0, base_timestamp, None)
    if records == "error":
        return "error"
    return next((i for i, r in enumerate(records)
                 if (keys_required and r.key is None) or 0 <= r.timestamp < earliest), -1)


@FUZZ
@given(rows=ROWS, base_timestamp=BASE_TIMESTAMPS, keys_required=st.booleans(), earliest=BASE_TIMESTAMPS)
def test_the_refusal_walk_finds_what_decoding_finds_in_records_as_producers_write_them(rows, base_timestamp,
                                                                                   keys_required, earliest):
    data = encode_records(rows)
    assert refused(data, len(rows), base_timestamp, keys_required, earliest) == \
        refused_by_decoding(data, len(rows), base_timestamp, keys_required, earliest)


@FUZZ
@given(rows=ROWS, flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1, max_size=4),
       cut=st.integers(min_value=0), count_delta=st.integers(-1, 1), keys_required=st.booleans())
def test_the_refusal_walk_answers_damaged_records_as_decoding_does_or_declines(rows, flips, cut, count_delta,
                                                                             keys_required):
    data = bytearray(encode_records(rows))
    for position, byte in flips:
        data[position % len(data)] = byte
    data = bytes(data[: len(data) - cut % 3])
    count = len(rows) + count_delta
    walked = refused(data, count, 1_700_000_000_000, keys_required, 1_600_000_000_000)
    if walked is not None:  # an answer is only ever given for a section the decoder decodes
        assert walked == refused_by_decoding(data, count, 1_700_000_000_000, keys_required, 1_600_000_000_000)


@FUZZ
@given(data=st.binary(max_size=64), count=st.integers(0, 8), keys_required=st.booleans())
def test_the_refusal_walk_answers_random_bytes_as_decoding_does_or_declines(data, count, keys_required):
    walked = refused(data, count, 0, keys_required, 10)
    if walked is not None:
        assert walked == refused_by_decoding(data, count, 0, keys_required, 10)


def test_a_header_key_that_is_not_utf8_is_left_to_the_decoder_which_refuses_it():
    data = bytearray(encode_records([(0, 0, b"k", b"v", (("h", b"x"),))]))
    data[data.index(b"h")] = 0xFF
    assert refused(bytes(data), 1, 0, True, 0) is None
    assert refused_by_decoding(bytes(data), 1, 0, True, 0) == "error"
