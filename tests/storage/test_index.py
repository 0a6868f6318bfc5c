"""The sparse offset and time indexes, and ListOffsets by timestamp."""

import math
import struct

from replog.protocol import Record, encode_batch

from .conftest import START_MS, batch, offsets_of, small_config


def test_the_offset_index_has_an_entry_every_index_interval_bytes(open_log, partition_dir):
    log = open_log(small_config(segment_bytes=1 << 20, index_interval_bytes=500))
    batch_bytes = len(batch(2))
    for tag in range(30):
        log.append_as_leader(batch(2, tag=tag), leader_epoch=0, now_ms=START_MS)
    log.close()

    raw = (partition_dir / f"{0:020d}.index").read_bytes()
    entries = list(struct.iter_unpack(">ii", raw))

    # An entry goes in at the first batch once 500 bytes have passed since the last one.
    step = math.ceil(500 / batch_bytes) * batch_bytes
    assert [position for _, position in entries] == list(range(step, 30 * batch_bytes, step))
    # Each maps the last offset of the batch at that position, relative to the segment.
    assert all(relative == 2 * (position // batch_bytes) + 1 for relative, position in entries)


def test_reads_from_every_offset_find_the_batch_holding_it(open_log):
    log = open_log(small_config(segment_bytes=2000, index_interval_bytes=100))
    for tag in range(40):
        log.append_as_leader(batch(3, tag=tag), leader_epoch=0, now_ms=START_MS)

    for offset in range(log.log_end_offset):
        first = offsets_of(log.read(offset, 1).records)
        assert first[0] == offset - offset % 3 and offset in first


def test_a_full_index_rolls_the_segment(open_log):
    log = open_log(small_config(segment_bytes=1 << 20, index_interval_bytes=0, segment_index_bytes=48))
    for tag in range(10):
        log.append_as_leader(batch(1, tag=tag), leader_epoch=0, now_ms=START_MS)
    assert len(log.segments) > 1
    assert offsets_of(log.read(0, 1 << 20).records) == list(range(10))


def test_offset_for_timestamp_finds_the_first_record_at_or_after_it(open_log):
    log = open_log(small_config(segment_bytes=600, index_interval_bytes=64))
    for second in range(20):
        records = [Record(i, START_MS + second * 1000 + i * 100, b"k", b"v" * 30) for i in range(3)]
        log.append_as_leader(encode_batch(records, base_offset=0), leader_epoch=0, now_ms=START_MS)

    assert log.offset_for_timestamp(START_MS) == (0, START_MS)
    assert log.offset_for_timestamp(START_MS + 150) == (2, START_MS + 200)
    assert log.offset_for_timestamp(START_MS + 7_050) == (22, START_MS + 7_100)
    assert log.offset_for_timestamp(START_MS + 7_201) == (24, START_MS + 8_000)
    assert log.offset_for_timestamp(START_MS + 19_200) == (59, START_MS + 19_200)
    assert log.offset_for_timestamp(START_MS + 19_201) is None


def test_offset_for_timestamp_skips_records_below_the_log_start(open_log):
    log = open_log()
    log.append_as_leader(batch(5, timestamp_ms=START_MS), leader_epoch=0, now_ms=START_MS)
    log.delete_records_before(3)
    assert log.offset_for_timestamp(0) == (3, START_MS)


def test_timestamps_survive_a_restart_without_a_scan(open_log):
    config = small_config(segment_bytes=600, index_interval_bytes=64)
    log = open_log(config)
    for second in range(20):
        log.append_as_leader(batch(3, timestamp_ms=START_MS + second * 1000), leader_epoch=0, now_ms=START_MS)
    segments, end_offset = log.segments, log.log_end_offset
    log.close()

    reopened = open_log(config, recovery_point=end_offset)

    assert reopened.segments == segments
    assert reopened.offset_for_timestamp(START_MS + 12_500) == (39, START_MS + 13_000)
