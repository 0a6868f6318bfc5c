"""Reopening after a crash: torn tails cut, segments below the recovery point trusted, indexes rebuilt."""

import os

from replog.protocol import encode_batch, validate_batches

from .conftest import START_MS, batch, offsets_of, small_config

CONFIG = small_config(segment_bytes=600, index_interval_bytes=64)


def crash(log) -> int:
    """Drop the log without flushing, as a killed broker would; return its last recovery point."""
    recovery_point = log.recovery_point
    log.close(flush=False)
    return recovery_point


def fill(log, batches: int) -> None:
    for tag in range(batches):
        log.append_as_leader(batch(2, tag=tag), leader_epoch=0, now_ms=START_MS)


def segment_file(partition_dir, base_offset: int, suffix: str = ".log"):
    return partition_dir / f"{base_offset:020d}{suffix}"


def test_a_torn_batch_at_the_tail_is_cut_off(open_log, partition_dir):
    log = open_log(CONFIG)
    fill(log, 12)
    active = log.segments[-1]
    recovery_point = crash(log)
    path = segment_file(partition_dir, active.base_offset)
    os.truncate(path, active.size_bytes - 5)

    reopened = open_log(CONFIG, recovery_point=recovery_point)

    assert reopened.log_end_offset == active.next_offset - 2
    assert os.path.getsize(path) == reopened.segments[-1].size_bytes
    assert offsets_of(reopened.read(0, 1 << 20).records) == list(range(active.next_offset - 2))
    assert reopened.recovery_point == reopened.log_end_offset


def test_a_corrupt_byte_past_the_recovery_point_cuts_the_log_there(open_log, partition_dir):
    log = open_log(small_config(segment_bytes=10_000))
    log.append_as_leader(batch(2, tag=0), leader_epoch=0, now_ms=START_MS)
    log.flush()
    fill(log, 3)
    recovery_point = crash(log)
    path = segment_file(partition_dir, 0)
    data = bytearray(path.read_bytes())
    second_batch = len(batch(2))
    data[second_batch + 70] ^= 0xFF  # inside the second batch's records: its CRC no longer holds
    path.write_bytes(bytes(data))

    reopened = open_log(small_config(segment_bytes=10_000), recovery_point=recovery_point)

    assert recovery_point == 2
    assert reopened.log_end_offset == 2
    assert os.path.getsize(path) == second_batch


def test_segments_after_a_cut_segment_are_deleted(open_log, partition_dir):
    log = open_log(CONFIG)
    fill(log, 20)
    middle = log.segments[1]
    last = log.segments[-1]
    crash(log)
    path = segment_file(partition_dir, middle.base_offset)
    data = bytearray(path.read_bytes())
    data[100] ^= 0xFF
    path.write_bytes(bytes(data))

    reopened = open_log(CONFIG, recovery_point=middle.base_offset)

    assert reopened.segments[-1].base_offset == middle.base_offset
    assert reopened.log_end_offset < middle.next_offset
    assert not segment_file(partition_dir, last.base_offset).exists()
    assert sorted(p.name for p in partition_dir.glob("*.log"))[-1] == path.name


def test_segments_below_the_recovery_point_are_not_read_again(open_log, partition_dir, monkeypatch):
    log = open_log(CONFIG)
    fill(log, 40)
    first, end_offset = log.segments[0], log.log_end_offset
    log.close()
    # Damage a record in the first segment: a scan would find the bad CRC and cut the log.
    path = segment_file(partition_dir, 0)
    data = bytearray(path.read_bytes())
    data[first.size_bytes - 3] ^= 0xFF
    path.write_bytes(bytes(data))
    bytes_read = []
    real_pread = os.pread
    monkeypatch.setattr(os, "pread", lambda fd, n, pos: bytes_read.append(n) or real_pread(fd, n, pos))

    reopened = open_log(CONFIG, recovery_point=end_offset)

    assert reopened.log_end_offset == end_offset  # nothing cut: the damage went unseen
    assert reopened.segments[0].size_bytes == first.size_bytes
    active_bytes = reopened.segments[-1].size_bytes
    assert sum(bytes_read) < active_bytes + len(reopened.segments) * 2 * 1024
    monkeypatch.undo()
    damaged = reopened.read(0, 1 << 20, max_offset=first.next_offset).records
    assert not validate_batches(damaged, max_message_bytes=1 << 20).ok


def test_after_a_clean_close_the_active_segment_is_not_scanned_but_after_a_crash_it_is(open_log, partition_dir):
    config = small_config(segment_bytes=1 << 20, index_interval_bytes=256)
    log = open_log(config)
    fill(log, 100)
    end_offset, size_bytes = log.log_end_offset, log.size_bytes
    log.close()
    path = segment_file(partition_dir, 0)
    data = bytearray(path.read_bytes())
    data[size_bytes // 2] ^= 0xFF  # a byte a scan would catch, in the middle of the only segment
    path.write_bytes(bytes(data))

    clean = open_log(config, recovery_point=end_offset)
    assert clean.log_end_offset == end_offset  # trusted: not scanned
    clean.flush()
    clean.close(flush=False)  # now a crash: the marker of the clean close is gone

    crashed = open_log(config, recovery_point=end_offset)
    assert crashed.log_end_offset < end_offset  # scanned, cut at the damaged batch


def test_the_whole_log_is_checked_from_recovery_point_zero(open_log, partition_dir):
    log = open_log(CONFIG)
    fill(log, 40)
    first = log.segments[0]
    log.close()
    path = segment_file(partition_dir, 0)
    data = bytearray(path.read_bytes())
    data[first.size_bytes - 3] ^= 0xFF
    path.write_bytes(bytes(data))

    reopened = open_log(CONFIG, recovery_point=0)

    assert reopened.log_end_offset < first.next_offset
    assert len(reopened.segments) == 1


def test_missing_or_damaged_indexes_are_rebuilt(open_log, partition_dir):
    log = open_log(small_config(segment_bytes=2000, index_interval_bytes=64))
    fill(log, 60)
    expected = {offset: log.read(offset, 200).records for offset in range(0, log.log_end_offset, 7)}
    segments, end_offset = log.segments, log.log_end_offset
    log.close()
    bases = [s.base_offset for s in segments]
    segment_file(partition_dir, bases[0], ".index").unlink()
    segment_file(partition_dir, bases[1], ".index").write_bytes(b"\x00\x00\x00\x05garbage")
    segment_file(partition_dir, bases[2], ".timeindex").unlink()
    segment_file(partition_dir, bases[3], ".index").write_bytes(b"\x00\x00\x00\x01\x7f\x00\x00\x00")

    reopened = open_log(small_config(segment_bytes=2000, index_interval_bytes=64), recovery_point=end_offset)

    assert {offset: reopened.read(offset, 200).records for offset in expected} == expected
    assert segment_file(partition_dir, bases[0], ".index").stat().st_size > 0
    assert reopened.segments == segments


def test_leftovers_of_interrupted_work_are_removed(open_log, partition_dir):
    log = open_log(CONFIG)
    fill(log, 3)
    log.close()
    leftovers = [
        segment_file(partition_dir, 0, ".log.cleaned"),
        segment_file(partition_dir, 0, ".index.cleaned"),
        segment_file(partition_dir, 500, ".index"),
        partition_dir / "leader-epoch-checkpoint.tmp",
    ]
    for path in leftovers:
        path.write_bytes(b"junk")

    reopened = open_log(CONFIG, recovery_point=6)

    assert not any(path.exists() for path in leftovers)
    assert reopened.log_end_offset == 6


def test_a_batch_whose_offsets_go_backwards_ends_the_recovered_log(open_log, partition_dir):
    log = open_log(CONFIG)
    log.append_as_follower(encode_batch([(b"k", b"v")] * 3, base_offset=0))
    crash(log)
    with open(segment_file(partition_dir, 0), "ab") as file:
        file.write(encode_batch([(b"k", b"v")], base_offset=1))

    reopened = open_log(CONFIG, recovery_point=0)

    assert reopened.log_end_offset == 3
    assert reopened.segments[-1].size_bytes == len(encode_batch([(b"k", b"v")] * 3))


def test_an_empty_directory_opens_as_an_empty_log_at_the_checkpointed_start(open_log):
    log = open_log(CONFIG, log_start_offset=42, recovery_point=42)
    assert (log.log_start_offset, log.log_end_offset, log.size_bytes) == (42, 42, 0)
