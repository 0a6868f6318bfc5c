"""Kafka's variable-length integers: unsigned LEB128 and zig-zag varint / varlong.

Record fields in batch v2 are zig-zag varints (protobuf's encoding): small
magnitudes of either sign take one byte. The encoder looks most lengths and
offset deltas up in a table of ready-made byte strings, because a function call
per field is what dominates pure-Python encoding.
"""

# Zig-zag varints for 0 .. TABLE_SIZE-1: covers offset deltas of 16 K records
# and record lengths of 16 KB, the common case, in about 1 MB of bytes objects.
TABLE_SIZE = 1 << 14

VARINT_BYTES_MAX = 5  # a 32-bit value needs at most 5 groups of 7 bits
VARLONG_BYTES_MAX = 10  # a 64-bit value needs at most 10


class VarintError(ValueError):
    """The bytes do not hold a well-formed varint (too long or cut short)."""


def encode_uvarint(value: int) -> bytes:
    if value < 0:
        raise ValueError(f"an unsigned varint cannot hold {value}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def zigzag(value: int) -> int:
    return (value << 1) if value >= 0 else ((-value << 1) - 1)


def unzigzag(raw: int) -> int:
    return (raw >> 1) ^ -(raw & 1)


def encode_varint(value: int) -> bytes:
    """Zig-zag varint or varlong: the bytes are the same, only the range differs."""
    if 0 <= value < TABLE_SIZE:
        return ZIGZAG[value]
    return encode_uvarint(zigzag(value))


def read_uvarint(buf, pos: int, bytes_max: int = VARLONG_BYTES_MAX) -> tuple[int, int]:
    """Return (value, position after it); raise VarintError on malformed input."""
    result = 0
    shift = 0
    end = min(len(buf), pos + bytes_max)
    while pos < end:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
    raise VarintError("varint is cut short or longer than its type allows")


def read_varint(buf, pos: int, bytes_max: int = VARLONG_BYTES_MAX) -> tuple[int, int]:
    raw, pos = read_uvarint(buf, pos, bytes_max)
    return unzigzag(raw), pos


# Built without a call per entry: every process that imports the protocol builds it, and encode_uvarint's
# loop took 45 ms of each start. The zig-zag value of n >= 0 is 2n; below 2**14 it fits in two bytes.
ZIGZAG: list[bytes] = [
    bytes((z,)) if z < 0x80
    else bytes(((z & 0x7F) | 0x80, z >> 7)) if z < 0x4000
    else bytes(((z & 0x7F) | 0x80, ((z >> 7) & 0x7F) | 0x80, z >> 14))
    for z in range(0, 2 * TABLE_SIZE, 2)
]

# Zig-zag values of one- and two-byte varints, indexed by their 7 or 14 payload
# bits: b0 for one byte (b0 < 0x80), (b0 & 0x7F) | (b1 << 7) for two bytes.
# The decoder's fast paths; lengths up to 8 KB and deltas up to 8 K fit in two.
UNZIGZAG: list[int] = [unzigzag(raw) for raw in range(1 << 14)]

NULL_LENGTH = encode_varint(-1)
