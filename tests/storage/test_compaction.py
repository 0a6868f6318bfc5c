"""Compaction: the latest record per key survives, offsets stay, tombstones go after delete.retention.ms."""

from replog.core.errors import ErrorCode
from replog.protocol import iter_batches

from .conftest import START_MS, keyed_batch, records_of, small_config

DAY_MS = 86_400_000


def compacted_log(open_log, **overrides):
    values = {"segment_bytes": 300, "cleanup_policy": "compact", "delete_retention_ms": DAY_MS}
    values.update(overrides)
    return open_log(small_config(**values))


def latest_by_key(log) -> dict[bytes, tuple[int, bytes | None]]:
    return {r.key: (r.offset, r.value) for r in records_of(log.read(0, 1 << 20).records)}


def test_only_the_latest_record_of_each_key_stays_with_its_offset(open_log):
    log = compacted_log(open_log)
    for round_ in range(6):
        log.append_as_leader(keyed_batch([(b"a", b"a%d" % round_), (b"b", b"b%d" % round_)]), 0, START_MS)
        log.append_as_leader(keyed_batch([(b"c", b"c%d" % round_)]), 0, START_MS)
    expected = latest_by_key(log)
    size_before = log.size_bytes

    stats = log.compact(START_MS, up_to_offset=log.log_end_offset)

    records = records_of(log.read(0, 1 << 20).records)
    assert latest_by_key(log) == expected
    assert stats.segments_rewritten >= 1 and stats.records_removed > 0
    assert log.size_bytes < size_before
    # Only the active segment may still hold superseded records.
    active_base = log.segments[-1].base_offset
    closed = [r for r in records if r.offset < active_base]
    assert len({r.key for r in closed}) == len(closed)
    assert log.log_end_offset == 18


def test_compaction_stops_at_the_offset_it_is_given(open_log):
    log = compacted_log(open_log)
    for round_ in range(6):
        log.append_as_leader(keyed_batch([(b"a", b"%d" % round_)] * 3), 0, START_MS)
    before = log.read(0, 1 << 20).records
    second_base = log.segments[1].base_offset

    log.compact(START_MS, up_to_offset=second_base - 1)

    assert log.read(0, 1 << 20).records == before


def test_a_batch_whose_records_all_stay_is_copied_byte_for_byte(open_log):
    log = compacted_log(open_log, segment_bytes=100)  # a segment per batch
    log.append_as_leader(keyed_batch([(b"x", b"old")]), 0, START_MS)
    log.append_as_leader(keyed_batch([(b"unique", b"kept")]), 0, START_MS)
    log.append_as_leader(keyed_batch([(b"x", b"new")]), 0, START_MS)
    log.append_as_leader(keyed_batch([(b"y", b"tail")]), 0, START_MS)
    kept_batch = [b for b in iter_batches(log.read(1, 1).records)][0]
    kept_bytes = log.read(1, 1).records

    log.compact(START_MS, up_to_offset=log.log_end_offset)

    assert kept_batch.records[0].value == b"kept"
    assert log.read(1, 1).records == kept_bytes
    assert [r.value for r in records_of(log.read(0, 1 << 20).records)] == [b"kept", b"new", b"tail"]


def test_tombstones_stay_for_delete_retention_ms_then_go(open_log):
    log = compacted_log(open_log, segment_bytes=150)
    log.append_as_leader(keyed_batch([(b"k", b"v")], timestamp_ms=START_MS), 0, START_MS)
    log.append_as_leader(keyed_batch([(b"k", None)], timestamp_ms=START_MS), 0, START_MS)
    log.append_as_leader(keyed_batch([(b"other", b"v")], timestamp_ms=START_MS), 0, START_MS)
    log.append_as_leader(keyed_batch([(b"last", b"v")], timestamp_ms=START_MS), 0, START_MS)

    log.compact(START_MS + DAY_MS - 1, up_to_offset=log.log_end_offset)
    assert latest_by_key(log)[b"k"] == (1, None)  # consumers reading now still see the delete

    log.compact(START_MS + DAY_MS + 1, up_to_offset=log.log_end_offset)
    assert b"k" not in latest_by_key(log)


def test_a_compacted_log_reopens_and_reads_the_same(open_log):
    config = small_config(segment_bytes=300, cleanup_policy="compact", index_interval_bytes=0)
    log = open_log(config)
    for round_ in range(10):
        log.append_as_leader(keyed_batch([(b"k%d" % (round_ % 3), b"v%d" % round_)]), 0, START_MS)
    log.compact(START_MS, up_to_offset=log.log_end_offset)
    before = {offset: log.read(offset, 1).records for offset in range(log.log_end_offset)}
    end_offset = log.log_end_offset
    log.close()

    reopened = open_log(config, recovery_point=end_offset)

    assert {offset: reopened.read(offset, 1).records for offset in before} == before


def test_a_follower_replicating_a_compacted_leader_accepts_the_gaps(open_log, tmp_path):
    from replog.storage import PartitionLog

    leader = compacted_log(open_log)
    for round_ in range(8):
        leader.append_as_leader(keyed_batch([(b"k", b"%d" % round_)]), 0, START_MS)
    leader.compact(START_MS, up_to_offset=leader.log_end_offset)
    follower = PartitionLog.open(tmp_path / "follower-0", small_config(cleanup_policy="compact"), now_ms=START_MS)

    fetch_offset = 0
    while fetch_offset < leader.log_end_offset:
        fetched = leader.read(fetch_offset, 100).records
        assert follower.append_as_follower(fetched).error is ErrorCode.NONE
        fetch_offset = follower.log_end_offset

    assert follower.read(0, 1 << 20).records == leader.read(0, 1 << 20).records
    follower.close()


def test_delete_policy_topics_are_not_compacted(open_log):
    log = open_log(small_config(segment_bytes=150))
    for _ in range(5):
        log.append_as_leader(keyed_batch([(b"k", b"v")]), 0, START_MS)
    before = log.read(0, 1 << 20).records
    assert log.compact(START_MS, up_to_offset=log.log_end_offset).segments_rewritten == 0
    assert log.read(0, 1 << 20).records == before
