"""Keys land where Kafka's Java client puts them; keyless records stick to one partition per batch."""

import random

import pytest

from replog.client.partitioner import StickyPartitioner, murmur2, partition_for_key, to_positive

# Kafka's UtilsTest.testMurmur2.
KAFKA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("key", "expected"), KAFKA_VECTORS)
def test_murmur2_matches_kafkas_test_vectors(key, expected):
    assert murmur2(key) == expected


def test_murmur2_takes_any_bytes_like_key():
    assert murmur2(bytearray(b"foobar")) == murmur2(memoryview(b"foobar")) == -790332482


def test_to_positive_clears_the_sign_bit_rather_than_negating():
    assert to_positive(-790332482) == 1357151166
    assert to_positive(-(2**31)) == 0
    assert to_positive(5) == 5


def test_a_key_goes_to_to_positive_murmur2_modulo_the_partition_count():
    assert partition_for_key(b"foobar", 10) == 1357151166 % 10 == 6
    assert partition_for_key(b"21", 7) == to_positive(-973932308) % 7
    assert all(0 <= partition_for_key(bytes([i]), 3) < 3 for i in range(256))


def test_keyless_records_stick_to_one_partition_until_switch_bytes_went_there():
    partitioner = StickyPartitioner(1000, random.Random(1))
    first = partitioner.partition("t", 6)
    for _ in range(9):
        partitioner.produced("t", 6, 100)
        assert partitioner.partition("t", 6) == first
    assert partitioner.room_bytes("t") == 100
    partitioner.produced("t", 6, 100)
    moved = partitioner.partition("t", 6)
    assert moved != first
    assert partitioner.room_bytes("t") == 1000


def test_the_bytes_spread_evenly_over_the_partitions():
    partitioner = StickyPartitioner(1000, random.Random(7))
    sent = [0] * 4
    for _ in range(40_000):
        chosen = partitioner.partition("t", 4)
        sent[chosen] += 100
        partitioner.produced("t", 4, 100)
    assert max(sent) - min(sent) <= 0.1 * sum(sent) / 4, sent


def test_each_topic_has_its_own_sticky_partition():
    partitioner = StickyPartitioner(100, random.Random(2))
    a = partitioner.partition("a", 100)
    partitioner.partition("b", 100)
    partitioner.produced("b", 100, 500)
    assert partitioner.partition("a", 100) == a


def test_sticky_partitions_prefer_partitions_with_a_live_leader():
    partitioner = StickyPartitioner(100, random.Random(4))
    chosen = set()
    for _ in range(50):
        chosen.add(partitioner.partition("t", 10, [3, 7]))
        partitioner.produced("t", 10, 100, [3, 7])
    assert chosen == {3, 7}


def test_with_one_available_partition_the_sticky_partition_stays_there():
    partitioner = StickyPartitioner(100, random.Random(5))
    assert partitioner.partition("t", 4, [2]) == 2
    partitioner.produced("t", 4, 100, [2])
    assert partitioner.partition("t", 4, [2]) == 2


def test_a_single_partition_topic_always_gets_partition_zero():
    partitioner = StickyPartitioner(100, random.Random(6))
    assert partitioner.partition("t", 1) == 0
    partitioner.produced("t", 1, 100)
    assert partitioner.partition("t", 1) == 0
