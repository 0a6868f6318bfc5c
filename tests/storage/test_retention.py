"""Retention: whole closed segments go by age (retention.ms) and by total size (retention.bytes)."""

from .conftest import START_MS, batch, offsets_of, small_config

HOUR_MS = 3_600_000


def fill_hourly(log, hours: int) -> None:
    """One batch per hour of record time; a small segment.ms puts each hour in its own segment."""
    for hour in range(hours):
        log.append_as_leader(batch(2, timestamp_ms=START_MS + hour * HOUR_MS), leader_epoch=0, now_ms=START_MS)


def test_segments_older_than_retention_ms_are_deleted_but_never_the_active_one(open_log):
    log = open_log(small_config(segment_bytes=1 << 20, segment_ms=HOUR_MS - 1, retention_ms=3 * HOUR_MS))
    fill_hourly(log, 6)
    assert len(log.segments) == 6
    now_ms = START_MS + 5 * HOUR_MS

    deleted = log.apply_retention(now_ms)

    # Hours 0 and 1 are more than three hours old; hour 2 is exactly three.
    assert deleted == 2
    assert log.log_start_offset == 4 and log.segments[0].base_offset == 4
    assert log.apply_retention(now_ms + 100 * HOUR_MS) == 3  # everything old, but the active segment stays
    assert [s.base_offset for s in log.segments] == [10]
    assert offsets_of(log.read(10, 1 << 20).records) == [10, 11]


def test_retention_bytes_deletes_the_oldest_segments_while_the_rest_still_fills_it(open_log):
    log = open_log(small_config(segment_bytes=1 << 20, segment_ms=HOUR_MS - 1, retention_ms=-1))
    fill_hourly(log, 6)
    segment_bytes = log.segments[0].size_bytes

    def retain(retention_bytes: int) -> None:
        log.config = small_config(
            segment_bytes=1 << 20, segment_ms=HOUR_MS - 1, retention_ms=-1, retention_bytes=retention_bytes
        )

    # As Kafka: a segment goes only if the log is still at least retention.bytes without it.
    retain(4 * segment_bytes + 1)
    assert log.apply_retention(START_MS) == 1
    retain(3 * segment_bytes)
    assert log.apply_retention(START_MS) == 2
    assert log.size_bytes == 3 * segment_bytes and log.log_start_offset == 6


def test_retention_keeps_segments_the_high_watermark_has_not_passed(open_log):
    log = open_log(small_config(segment_bytes=1 << 20, segment_ms=HOUR_MS - 1, retention_ms=0))
    fill_hourly(log, 6)
    assert log.apply_retention(START_MS + 10 * HOUR_MS, high_watermark=5) == 2
    assert log.log_start_offset == 4


def test_compact_only_topics_keep_old_segments(open_log):
    config = small_config(segment_bytes=1 << 20, segment_ms=HOUR_MS - 1, retention_ms=0, cleanup_policy="compact")
    log = open_log(config)
    fill_hourly(log, 3)
    assert log.apply_retention(START_MS + 10 * HOUR_MS) == 0
    assert len(log.segments) == 3
