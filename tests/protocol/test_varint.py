"""Zig-zag varints as Kafka (and protobuf) write them."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.protocol.varint import (
    TABLE_SIZE,
    VarintError,
    encode_uvarint,
    encode_varint,
    read_uvarint,
    read_varint,
)

from .spec_reader import write_varint

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (-1, "01"),
        (1, "02"),
        (63, "7e"),
        (-64, "7f"),
        (64, "8001"),
        (300, "d804"),
        (2**31 - 1, "feffffff0f"),
        (-(2**31), "ffffffff0f"),
        (-(2**63), "ffffffffffffffffff01"),
    ],
)
def test_known_encodings(value, encoded):
    assert encode_varint(value).hex() == encoded
    assert read_varint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)


@given(INT64)
def test_varlong_round_trip_matches_the_spec_writer(value):
    encoded = encode_varint(value)
    assert encoded == write_varint(value)
    assert read_varint(b"\xaa" + encoded + b"\xbb", 1) == (value, 1 + len(encoded))


def test_table_agrees_with_the_arithmetic():
    for value in range(TABLE_SIZE):  # every entry, each of the three lengths and their edges among them
        assert encode_varint(value) == encode_uvarint(2 * value)
    assert encode_varint(TABLE_SIZE) == encode_uvarint(2 * TABLE_SIZE)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff", b"\xff" * 11])
def test_cut_short_or_overlong_varints_are_rejected(data):
    with pytest.raises(VarintError):
        read_uvarint(data, 0)


def test_a_varint_longer_than_its_type_is_rejected():
    six_bytes = b"\x80\x80\x80\x80\x80\x01"
    assert read_uvarint(six_bytes, 0)[0] == 1 << 35
    with pytest.raises(VarintError):
        read_uvarint(six_bytes, 0, bytes_max=5)
