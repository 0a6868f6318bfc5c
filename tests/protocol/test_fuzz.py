"""No input makes validation raise, and decoding raises only CorruptBatchError.

A broker runs validate_batches on bytes from any client; a consumer decodes
whatever a fetch returns. Random bytes exercise the header checks; mutations
of valid batches, with the CRC recomputed or not, reach the record parser and
the decompressors.
"""

import struct

import crc32c
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replog.core.errors import ErrorCode
from replog.protocol import Compression, CorruptBatchError, decode_batch, encode_batch, iter_records, validate_batches

FUZZ = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])

VALID_BATCHES = [
    encode_batch(
        [(b"key-%d" % i, b"value" * i, (("h", b"x"),) if i % 3 == 0 else ()) for i in range(12)],
        base_timestamp_ms=1_700_000_000_000,
        compression=codec,
    )
    for codec in Compression
]


def check_never_raises(buf: bytes) -> None:
    result = validate_batches(buf, max_message_bytes=1 << 20)
    assert isinstance(result.error, ErrorCode)
    assert (result.error is ErrorCode.NONE) == (result.reason == "")
    try:
        decode_batch(buf)
    except CorruptBatchError as exc:
        assert exc.reason
    try:
        for _ in iter_records(buf):
            pass
    except CorruptBatchError:
        pass


def fix_crc(buf: bytearray) -> None:
    if len(buf) >= 61:
        buf[17:21] = struct.pack(">I", crc32c.crc32c(bytes(buf[21:])))


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(buf):
    check_never_raises(buf)


@FUZZ
@given(
    st.binary(min_size=61, max_size=200).map(bytearray),
    st.integers(min_value=49, max_value=400),
    st.sampled_from([2, 2, 2, 0, 1, 3]),
)
def test_random_bytes_behind_a_plausible_header(buf, batch_length, magic):
    buf[8:12] = struct.pack(">i", batch_length)
    buf[16] = magic
    fix_crc(buf)
    check_never_raises(bytes(buf))


@FUZZ
@given(
    batch=st.sampled_from(VALID_BATCHES),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=1, max_value=255)), max_size=4),
    recompute_crc=st.booleans(),
)
def test_flipped_bytes(batch, flips, recompute_crc):
    buf = bytearray(batch)
    for position, mask in flips:
        buf[position % len(buf)] ^= mask
    if recompute_crc:
        fix_crc(buf)
    check_never_raises(bytes(buf))


@FUZZ
@given(batch=st.sampled_from(VALID_BATCHES), keep=st.integers(min_value=0), recompute_crc=st.booleans())
def test_truncations(batch, keep, recompute_crc):
    buf = bytearray(batch[: keep % len(batch)])
    if len(buf) >= 12:
        buf[8:12] = struct.pack(">i", len(buf) - 12)
    if recompute_crc:
        fix_crc(buf)
    check_never_raises(bytes(buf))


@FUZZ
@given(
    batch=st.sampled_from(VALID_BATCHES),
    extra=st.binary(max_size=100),
    length_delta=st.integers(min_value=-(2**31), max_value=2**31 - 1),
    recompute_crc=st.booleans(),
)
def test_extended_or_wrong_lengths(batch, extra, length_delta, recompute_crc):
    buf = bytearray(batch + extra)
    length = (len(batch) - 12 + length_delta) % (2**32) - 2**31
    buf[8:12] = struct.pack(">i", length)
    if recompute_crc:
        fix_crc(buf)
    check_never_raises(bytes(buf))


@FUZZ
@given(
    batch=st.sampled_from(VALID_BATCHES),
    field=st.sampled_from([(23, ">i"), (57, ">i"), (21, ">h"), (27, ">q")]),
    value=st.integers(min_value=-(2**31), max_value=2**31 - 1),
)
def test_header_fields_set_to_anything_under_a_valid_crc(batch, field, value):
    buf = bytearray(batch)
    position, fmt = field
    struct.pack_into(fmt, buf, position, max(-(2**15), min(2**15 - 1, value)) if fmt == ">h" else value)
    fix_crc(buf)
    check_never_raises(bytes(buf))
