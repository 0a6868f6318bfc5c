"""Appending as leader and follower, reading back, rolling segments."""

from replog.core.errors import ErrorCode
from replog.protocol import encode_batch, iter_batches, validate_batches

from .conftest import START_MS, batch, offsets_of, records_of, small_config


def test_leader_append_assigns_offsets_from_the_log_end_and_stamps_its_epoch(open_log):
    log = open_log()
    first = log.append_as_leader(batch(3, tag=1), leader_epoch=5, now_ms=START_MS)
    second = log.append_as_leader(batch(2, tag=2) + batch(1, tag=3), leader_epoch=6, now_ms=START_MS)

    assert (first.error, first.first_offset, first.last_offset, first.records_count) == (ErrorCode.NONE, 0, 2, 3)
    assert (second.first_offset, second.last_offset, second.epoch_starts) == (3, 5, ((6, 3),))
    assert log.log_end_offset == 6
    stored = log.read(0, 1 << 20).records
    assert validate_batches(stored, max_message_bytes=1 << 20).ok  # CRCs still hold after stamping
    assert [(b.base_offset, b.partition_leader_epoch) for b in iter_batches(stored)] == [(0, 5), (3, 6), (5, 6)]
    assert [r.value[:2] for r in records_of(stored)] == [b"1:"] * 3 + [b"2:"] * 2 + [b"3:"]


def test_leader_stamps_a_bytearray_in_place(open_log):
    log = open_log()
    log.append_as_leader(batch(4), leader_epoch=0, now_ms=START_MS)
    buf = bytearray(batch(1))

    log.append_as_leader(buf, leader_epoch=9, now_ms=START_MS)

    assert next(iter_batches(buf)).base_offset == 4
    assert next(iter_batches(buf)).partition_leader_epoch == 9


def test_leader_refuses_bad_batches_and_appends_nothing(open_log):
    log = open_log(small_config(max_message_bytes=200))
    good = bytearray(batch(1))
    corrupt = bytes(good[:-1]) + bytes([good[-1] ^ 0xFF])

    answers = [
        log.append_as_leader(corrupt, leader_epoch=0, now_ms=START_MS),
        log.append_as_leader(batch(1, value_bytes=300), leader_epoch=0, now_ms=START_MS),
        log.append_as_leader(b"", leader_epoch=0, now_ms=START_MS),
        log.append_as_leader(bytes(good[:30]), leader_epoch=0, now_ms=START_MS),
    ]

    assert [a.error for a in answers] == [
        ErrorCode.CORRUPT_MESSAGE,
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.CORRUPT_MESSAGE,
    ]
    assert all(a.reason and a.first_offset == -1 for a in answers)
    assert log.log_end_offset == 0 and log.size_bytes == 0


def test_follower_keeps_the_leaders_offsets_and_reports_epoch_changes(open_log):
    log = open_log()
    fetched = encode_batch([(b"a", b"1")] * 2, base_offset=0, partition_leader_epoch=1) + encode_batch(
        [(b"b", b"2")], base_offset=2, partition_leader_epoch=3
    )

    info = log.append_as_follower(fetched)

    assert (info.error, info.first_offset, info.last_offset) == (ErrorCode.NONE, 0, 2)
    assert info.epoch_starts == ((1, 0), (3, 2))
    assert log.read(0, 1 << 20).records == fetched  # byte for byte


def test_follower_refuses_batches_below_its_log_end_but_accepts_a_compaction_gap(open_log):
    log = open_log()
    log.append_as_follower(encode_batch([(b"a", b"1")] * 3, base_offset=0))

    overlap = log.append_as_follower(encode_batch([(b"a", b"1")], base_offset=2))
    gap = log.append_as_follower(encode_batch([(b"a", b"1")], base_offset=7))
    unordered = log.append_as_follower(
        encode_batch([(b"a", b"1")] * 2, base_offset=10) + encode_batch([(b"a", b"1")], base_offset=11)
    )

    assert overlap.error is ErrorCode.OFFSET_OUT_OF_RANGE
    assert gap.error is ErrorCode.NONE and log.log_end_offset == 8
    assert unordered.error is ErrorCode.OFFSET_OUT_OF_RANGE
    assert offsets_of(log.read(0, 1 << 20).records) == [0, 1, 2, 7]


def test_follower_refuses_a_corrupt_batch(open_log):
    log = open_log()
    good = bytearray(encode_batch([(b"a", b"1")], base_offset=0))
    good[-1] ^= 0x01
    assert log.append_as_follower(bytes(good)).error is ErrorCode.CORRUPT_MESSAGE
    assert log.log_end_offset == 0


def test_segments_roll_by_size_and_reads_cross_their_boundaries(open_log):
    log = open_log(small_config(segment_bytes=600))
    for tag in range(20):
        log.append_as_leader(batch(2, tag=tag), leader_epoch=0, now_ms=START_MS)

    segments = log.segments
    assert len(segments) > 3
    assert all(s.size_bytes <= 600 for s in segments)
    assert [s.base_offset for s in segments[1:]] == [s.next_offset for s in segments[:-1]]
    everything = log.read(0, 1 << 20).records
    assert offsets_of(everything) == list(range(40))
    middle = log.read(segments[1].base_offset - 1, 1 << 20).records
    assert offsets_of(middle)[0] == segments[1].base_offset - 2  # the whole batch holding the offset


def test_an_append_larger_than_a_segment_spreads_over_segments_at_batch_boundaries(open_log):
    log = open_log(small_config(segment_bytes=400))
    many = b"".join(batch(1, tag=t) for t in range(10))

    info = log.append_as_leader(many, leader_epoch=0, now_ms=START_MS)

    assert (info.first_offset, info.last_offset) == (0, 9)
    assert len(log.segments) >= 3
    assert offsets_of(log.read(0, 1 << 20).records) == list(range(10))


def test_one_batch_larger_than_a_segment_gets_a_segment_of_its_own(open_log):
    log = open_log(small_config(segment_bytes=300, max_message_bytes=10_000))
    log.append_as_leader(batch(1), leader_epoch=0, now_ms=START_MS)
    log.append_as_leader(batch(1, value_bytes=1000), leader_epoch=0, now_ms=START_MS)
    log.append_as_leader(batch(1), leader_epoch=0, now_ms=START_MS)
    assert [s.base_offset for s in log.segments] == [0, 1, 2]


def test_segments_roll_by_segment_ms_counted_from_the_first_batch_timestamp(open_log):
    log = open_log(small_config(segment_bytes=1 << 20, segment_ms=1000))
    log.append_as_leader(batch(1, timestamp_ms=START_MS), leader_epoch=0, now_ms=START_MS)
    log.append_as_leader(batch(1, timestamp_ms=START_MS + 1000), leader_epoch=0, now_ms=START_MS)
    log.append_as_leader(batch(1, timestamp_ms=START_MS + 1001), leader_epoch=0, now_ms=START_MS)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_read_stops_before_batches_at_or_past_max_offset(open_log):
    log = open_log(small_config(segment_bytes=500))
    for tag in range(10):
        log.append_as_leader(batch(3, tag=tag), leader_epoch=0, now_ms=START_MS)

    below_hw = log.read(4, 1 << 20, max_offset=12).records
    at_hw = log.read(12, 1 << 20, max_offset=12)

    assert offsets_of(below_hw) == list(range(3, 12))
    assert (at_hw.error, at_hw.records) == (ErrorCode.NONE, b"")


def test_read_returns_whole_batches_within_max_bytes_but_always_one(open_log):
    log = open_log(small_config(segment_bytes=1 << 20))
    for tag in range(5):
        log.append_as_leader(batch(2, tag=tag), leader_epoch=0, now_ms=START_MS)
    one_batch_bytes = len(batch(2))

    two = log.read(0, 2 * one_batch_bytes + 10).records
    tiny = log.read(0, 10).records
    none = log.read(0, 10, min_one_batch=False).records

    assert offsets_of(two) == [0, 1, 2, 3]
    assert offsets_of(tiny) == [0, 1]
    assert none == b""


def test_reads_outside_the_log_are_out_of_range_not_exceptions(open_log):
    log = open_log()
    log.append_as_leader(batch(5), leader_epoch=0, now_ms=START_MS)
    log.delete_records_before(2)

    below = log.read(1, 1000)
    above = log.read(6, 1000)
    at_end = log.read(5, 1000)

    assert below.error is above.error is ErrorCode.OFFSET_OUT_OF_RANGE
    assert (below.log_start_offset, below.log_end_offset) == (2, 5)
    assert (at_end.error, at_end.records) == (ErrorCode.NONE, b"")
