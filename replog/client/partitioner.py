"""Which partition a record goes to: Kafka's murmur2 for keys, sticky partitions without (KIP-794)."""

from __future__ import annotations

import random
import struct
from collections.abc import Sequence

_MASK_32 = 0xFFFFFFFF
_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24
_WORDS = struct.Struct("<I")


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2`: MurmurHash2, 32-bit, seed 0x9747b28c, as a signed Java int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK_32
    whole = length & ~3
    for (k,) in _WORDS.iter_unpack(memoryview(data)[:whole]):
        k = (k * _M) & _MASK_32
        k ^= k >> _R
        k = (k * _M) & _MASK_32
        h = ((h * _M) & _MASK_32) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK_32
    h ^= h >> 13
    h = (h * _M) & _MASK_32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's `Utils.toPositive`: clear the sign bit (not abs(), which differs for negatives)."""
    return number & 0x7FFFFFFF


def partition_for_key(key: bytes, partition_count: int) -> int:
    """The partition Kafka's default partitioner picks for a non-null key."""
    return to_positive(murmur2(key)) % partition_count


class StickyPartitioner:
    """Records without a key stick to one partition per topic until `switch_bytes` went there (KIP-794).

    Spreading keyless records round-robin makes many small batches; sticking to
    one partition fills big batches with few requests. Moving on after a fixed
    number of bytes — rather than whenever a batch closes, as KIP-480 did —
    spreads the bytes evenly over the partitions, and at low rates keeps a run
    of small sends on one leader instead of scattering each to another.
    """

    def __init__(self, switch_bytes: int, rng: random.Random | None = None) -> None:
        self._switch_bytes = switch_bytes
        self._rng = rng or random.Random()
        self._current: dict[str, int] = {}
        self._produced: dict[str, int] = {}  # bytes sent to the current sticky partition

    def partition(self, topic: str, partition_count: int, available: Sequence[int] = ()) -> int:
        current = self._current.get(topic)
        if current is None or current >= partition_count:
            current = self._choose(partition_count, available, exclude=None)
            self._current[topic] = current
        return current

    def room_bytes(self, topic: str) -> int:
        """Bytes the sticky partition takes before the partitioner moves on."""
        return self._switch_bytes - self._produced.get(topic, 0)

    def produced(self, topic: str, partition_count: int, size_bytes: int, available: Sequence[int] = ()) -> None:
        """size_bytes went to the sticky partition; once switch_bytes have, move on to another."""
        produced = self._produced.get(topic, 0) + size_bytes
        if produced >= self._switch_bytes:
            self._current[topic] = self._choose(partition_count, available, exclude=self._current.get(topic))
            produced = 0
        self._produced[topic] = produced

    def _choose(self, partition_count: int, available: Sequence[int], exclude: int | None) -> int:
        # Prefer partitions with a live leader, as Kafka does; any partition when none has one.
        pool = list(available) if available else list(range(partition_count))
        candidates = [p for p in pool if p != exclude] or pool
        return candidates[self._rng.randrange(len(candidates))]
