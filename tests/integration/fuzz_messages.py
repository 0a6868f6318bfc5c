"""Hypothesis strategies for any protobuf request of replog's API, built from its descriptor:
random and extreme values in every field (negative and huge numbers, long repeated fields,
arbitrary text, random bytes as records), mutated valid record batches, and raw bytes that are
not the message at all (names as invalid UTF-8)."""

from __future__ import annotations

from typing import Any

from google.protobuf import message_factory
from google.protobuf.descriptor import FieldDescriptor
from hypothesis import strategies as st

from replog.protocol import encode_batch

REPEATED_MAX = 40
DEPTH_MAX = 4

_INTS = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([0, -1, 1, 2**31 - 1, -(2**31)]))
_LONGS = st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([0, -1, 2**63 - 1]))
_TEXT = st.one_of(st.text(max_size=40), st.sampled_from(["", "orders", "__consumer_offsets", "x" * 300, "../..",
                                                         "a/b", "\u0000", "*"]))


@st.composite
def mutated_batch(draw: Any) -> bytes:
    batch = bytearray(encode_batch([(None, draw(st.binary(max_size=50)))] * draw(st.integers(1, 5))))
    for _ in range(draw(st.integers(0, 4))):
        batch[draw(st.integers(0, len(batch) - 1))] = draw(st.integers(0, 255))
    return bytes(batch[: draw(st.integers(0, len(batch)))]) if draw(st.booleans()) else bytes(batch)


def _scalar(field: FieldDescriptor) -> st.SearchStrategy:
    kind = field.type
    if kind in (FieldDescriptor.TYPE_INT32, FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SFIXED32):
        return _INTS
    if kind in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_SINT64, FieldDescriptor.TYPE_SFIXED64):
        return _LONGS
    if kind in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return st.integers(0, 2**32 - 1)
    if kind in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return st.integers(0, 2**64 - 1)
    if kind == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if kind in (FieldDescriptor.TYPE_FLOAT, FieldDescriptor.TYPE_DOUBLE):
        return st.floats(allow_nan=False, width=32)
    if kind == FieldDescriptor.TYPE_STRING:
        return _TEXT
    if kind == FieldDescriptor.TYPE_BYTES:
        if field.name == "records":
            return st.one_of(st.binary(max_size=200), mutated_batch())
        return st.binary(max_size=50)
    if kind == FieldDescriptor.TYPE_ENUM:
        return st.one_of(st.sampled_from([v.number for v in field.enum_type.values]), st.integers(-5, 200))
    raise AssertionError(f"no strategy for {field.full_name}")


def message(cls: type, depth: int = 0) -> st.SearchStrategy:
    """Instances of `cls` with any subset of fields set to strange values."""
    fields = {}
    for field in cls.DESCRIPTOR.fields:
        if field.message_type is not None and field.message_type.GetOptions().map_entry:
            value = st.dictionaries(_TEXT, _TEXT, max_size=5)
        elif field.message_type is not None:
            if depth >= DEPTH_MAX:
                continue
            inner = message(message_factory.GetMessageClass(field.message_type), depth + 1)
            value = st.lists(inner, max_size=REPEATED_MAX // (depth + 1)) if _repeated(field) else inner
        else:
            value = st.lists(_scalar(field), max_size=REPEATED_MAX) if _repeated(field) else _scalar(field)
        fields[field.name] = st.none() | value

    @st.composite
    def build(draw: Any) -> Any:
        built = cls()
        for name, strategy in fields.items():
            value = draw(strategy)
            if value is None:
                continue
            target = getattr(built, name)
            if isinstance(value, dict):
                target.update(value)
            elif isinstance(value, list):
                if value and hasattr(value[0], "DESCRIPTOR"):
                    target.extend(value)
                else:
                    try:
                        target.extend(value)
                    except ValueError:
                        pass
            elif hasattr(value, "DESCRIPTOR"):
                target.CopyFrom(value)
            else:
                try:
                    setattr(built, name, value)
                except ValueError:  # an enum number the field refuses in Python; the wire takes it
                    pass
        return built

    return build()


def _repeated(field: FieldDescriptor) -> bool:
    return field.is_repeated


def wire_bytes(cls: type) -> st.SearchStrategy:
    """What goes on the wire: a serialized strange message, random bytes, or a name field holding
    invalid UTF-8 (field 1 as length-delimited bytes 0xff 0xfe)."""
    return st.one_of(message(cls).map(lambda m: m.SerializeToString()), st.binary(max_size=300),
                     st.just(b"\x0a\x02\xff\xfe"), st.just(b"\x0a\x03\xc3\x28\x00"))
