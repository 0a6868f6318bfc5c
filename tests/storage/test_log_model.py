"""The partition log against a plain in-memory model, driven by Hypothesis.

Random appends of random sizes, rolls by size and time, truncations,
DeleteRecords, retention, compaction, flushes, clean restarts and crashes that
tear the active segment at a random byte past the recovery point. After every
step the log must read back exactly what the model holds.

The model is a list of batches (base offset, last offset, records). Where an
operation works on whole segments (retention, compaction, truncation to an
empty segment), the model takes the segment boundaries from `log.segments`
before the step and applies Kafka's rule to them itself.
"""

import dataclasses
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from replog.core.errors import ErrorCode
from replog.protocol import Record, encode_batch, iter_batches
from replog.storage import LogConfig, PartitionLog

from .conftest import START_MS

KEYS = [b"a", b"b", b"c", b"d", b"e"]


@pytest.fixture(autouse=True)
def fsync_is_free(monkeypatch):
    """The crashes here kill the process, not the machine: the page cache survives them, so
    fsync changes nothing these checks can see, and skipping it keeps thousands of steps fast."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


@dataclasses.dataclass
class ModelBatch:
    base_offset: int
    records: list[Record]

    @property
    def last_offset(self) -> int:
        return self.records[-1].offset


class PartitionLogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="replog-log-model-"))
        self.directory = self.root / "model-0"
        self.log: PartitionLog | None = None

    @initialize(
        segment_bytes=st.integers(250, 1500),
        index_interval_bytes=st.sampled_from([0, 64, 300]),
        flush_messages=st.sampled_from([1, 7, 2**63 - 1]),
        retention_bytes=st.sampled_from([-1, 900, 3000]),
    )
    def start(self, segment_bytes, index_interval_bytes, flush_messages, retention_bytes):
        self.config = LogConfig(
            segment_bytes=segment_bytes,
            index_interval_bytes=index_interval_bytes,
            segment_index_bytes=120,
            segment_ms=5_000,
            flush_messages=flush_messages,
            retention_ms=20_000,
            retention_bytes=retention_bytes,
            cleanup_policy="compact,delete",
            delete_retention_ms=4_000,
        )
        self.now_ms = START_MS
        self.log = PartitionLog.open(self.directory, self.config, now_ms=self.now_ms)
        self.batches: list[ModelBatch] = []
        self.log_start_offset = 0
        self.log_end_offset = 0

    def teardown(self) -> None:
        if self.log is not None:
            self.log.close(flush=False)
        shutil.rmtree(self.root, ignore_errors=True)

    # -- steps ------------------------------------------------------------------

    @rule(
        shapes=st.lists(
            st.tuples(st.integers(1, 4), st.integers(0, 150), st.integers(0, len(KEYS) - 1), st.booleans()),
            min_size=1,
            max_size=3,
        ),
        epoch=st.integers(0, 3),
        elapsed_ms=st.integers(0, 3_000),
    )
    def append(self, shapes, epoch, elapsed_ms):
        self.now_ms += elapsed_ms
        encoded, model = [], []
        offset = self.log_end_offset
        for count, value_bytes, first_key, tombstone in shapes:
            records = [
                Record(
                    offset + i,
                    self.now_ms,
                    KEYS[(first_key + i) % len(KEYS)],
                    None if tombstone and i == count - 1 else bytes([i]) * value_bytes,
                )
                for i in range(count)
            ]
            encoded.append(encode_batch(records, base_offset=offset))
            model.append(ModelBatch(offset, records))
            offset += count

        info = self.log.append_as_leader(b"".join(encoded), epoch, self.now_ms)

        assert info.error is ErrorCode.NONE, info.reason
        assert (info.first_offset, info.last_offset) == (self.log_end_offset, offset - 1)
        self.batches += model
        self.log_end_offset = offset

    @rule(
        gap=st.sampled_from([0, 0, 0, 3]),
        counts=st.lists(st.integers(1, 4), min_size=1, max_size=3),
        epoch=st.integers(0, 3),
        overlap=st.booleans(),
    )
    def append_as_follower(self, gap, counts, epoch, overlap):
        """Batches from a leader keep their offsets; a gap (a compacted leader) is fine, an overlap is not."""
        if overlap and self.log_end_offset > 0:
            stale = encode_batch([(KEYS[0], b"stale")], base_offset=self.log_end_offset - 1)
            assert self.log.append_as_follower(stale).error is ErrorCode.OFFSET_OUT_OF_RANGE
            return
        offset = self.log_end_offset + gap
        encoded, model = [], []
        for count in counts:
            records = [Record(offset + i, self.now_ms, KEYS[i % len(KEYS)], b"f" * i) for i in range(count)]
            encoded.append(encode_batch(records, base_offset=offset, partition_leader_epoch=epoch))
            model.append(ModelBatch(offset, records))
            offset += count

        info = self.log.append_as_follower(b"".join(encoded))

        assert info.error is ErrorCode.NONE, info.reason
        assert info.epoch_starts == ((epoch, self.log_end_offset + gap),)
        self.batches += model
        self.log_end_offset = offset

    @rule(data=st.data())
    def truncate(self, data):
        offset = data.draw(st.integers(max(self.log_start_offset - 2, 0), self.log_end_offset + 1))
        segments = self.log.segments
        truncated = self.log.truncate_to(offset)
        assert truncated == (offset < self.log_end_offset)
        if not truncated:
            return
        if offset < self.log_start_offset:
            self.batches, self.log_start_offset, self.log_end_offset = [], offset, offset
            return
        self.batches = [b for b in self.batches if b.last_offset < offset]
        floor_base = max(s.base_offset for s in segments if s.base_offset <= offset)
        self.log_end_offset = max([floor_base] + [b.last_offset + 1 for b in self.batches])
        if self.log_end_offset < self.log_start_offset:  # the batch holding the log start went
            self.batches, self.log_end_offset = [], self.log_start_offset

    @rule(data=st.data())
    def delete_records(self, data):
        offset = data.draw(st.integers(self.log_start_offset, self.log_end_offset))
        before = self.log.segments
        assert self.log.delete_records_before(offset) is ErrorCode.NONE
        self.log_start_offset = offset
        expected_deleted = 0
        while expected_deleted + 1 < len(before) and before[expected_deleted + 1].base_offset <= offset:
            expected_deleted += 1
        self.expect_segments_deleted(before, expected_deleted)

    @rule(elapsed_ms=st.integers(0, 15_000))
    def retention(self, elapsed_ms):
        self.now_ms += elapsed_ms
        before = self.log.segments
        expected = self.segments_past_retention(before)
        assert self.log.apply_retention(self.now_ms) == expected
        self.expect_segments_deleted(before, expected)
        if expected:
            self.log_start_offset = max(self.log_start_offset, before[expected].base_offset)

    def segments_past_retention(self, before) -> int:
        expected = 0
        while expected + 1 < len(before) and self.now_ms - self.largest_timestamp_ms(before[expected]) > 20_000:
            expected += 1
        if self.config.retention_bytes >= 0:
            excess = sum(s.size_bytes for s in before[expected:]) - self.config.retention_bytes
            while expected + 1 < len(before) and excess >= before[expected].size_bytes:
                excess -= before[expected].size_bytes
                expected += 1
        return expected

    def largest_timestamp_ms(self, segment) -> int:
        """Kafka's rule: the largest record timestamp, or the file's modification time without one."""
        if segment.max_timestamp_ms >= 0:
            return segment.max_timestamp_ms
        return (self.directory / f"{segment.base_offset:020d}.log").stat().st_mtime_ns // 1_000_000

    def expect_segments_deleted(self, before, count):
        after = self.log.segments
        assert after == before[count:]
        self.batches = [b for b in self.batches if b.base_offset >= after[0].base_offset]

    @rule(data=st.data(), elapsed_ms=st.integers(0, 6_000))
    def compact(self, data, elapsed_ms):
        self.now_ms += elapsed_ms
        up_to_offset = data.draw(st.integers(self.log_start_offset, self.log_end_offset))
        segments = self.log.segments
        cleanable = [s for s, successor in zip(segments, segments[1:]) if successor.base_offset <= up_to_offset]
        self.log.compact(self.now_ms, up_to_offset=up_to_offset)
        if not cleanable:
            return
        end = segments[len(cleanable)].base_offset
        latest = {r.key: r.offset for b in self.batches if b.base_offset < end for r in b.records}
        horizon_ms = self.now_ms - self.config.delete_retention_ms
        kept_batches = []
        for b in self.batches:
            if b.base_offset < end:
                kept = [
                    r
                    for r in b.records
                    if latest[r.key] == r.offset and (r.value is not None or r.timestamp >= horizon_ms)
                ]
                if kept:
                    kept_batches.append(ModelBatch(b.base_offset, kept))
            else:
                kept_batches.append(b)
        self.batches = kept_batches

    @rule()
    def flush(self):
        self.log.flush()
        assert self.log.recovery_point == self.log_end_offset

    @rule()
    def restart(self):
        recovery_point = self.log.recovery_point
        self.log.close()
        self.reopen(recovery_point)

    @rule(data=st.data())
    def crash(self, data):
        """Kill the broker: whatever was not flushed may lose any tail of its bytes."""
        recovery_point = self.log.recovery_point
        active = self.log.segments[-1]
        self.log.close(flush=False)
        path = self.directory / f"{active.base_offset:020d}.log"
        stored = path.read_bytes()
        stored_batches = list(iter_batches(stored))
        durable_bytes = max([0] + [b.end for b in stored_batches if b.next_offset <= recovery_point])
        cut = data.draw(st.integers(durable_bytes, len(stored)))
        path.write_bytes(stored[:cut])
        survivors = [b for b in stored_batches if b.end <= cut]
        self.log_end_offset = survivors[-1].next_offset if survivors else active.base_offset
        self.batches = [b for b in self.batches if b.last_offset < self.log_end_offset]
        self.reopen(recovery_point)

    def reopen(self, recovery_point):
        self.log = PartitionLog.open(
            self.directory,
            self.config,
            recovery_point=recovery_point,
            log_start_offset=self.log_start_offset,
            now_ms=self.now_ms,
        )
        self.log_start_offset = min(self.log_start_offset, self.log_end_offset)

    @rule(data=st.data(), max_bytes=st.integers(1, 2_000))
    def read_some(self, data, max_bytes):
        """A bounded read returns whole batches from the one holding the offset, below max_offset."""
        fetch_offset = data.draw(st.integers(self.log_start_offset, self.log_end_offset))
        max_offset = data.draw(st.none() | st.integers(fetch_offset, self.log_end_offset))
        result = self.log.read(fetch_offset, max_bytes, max_offset=max_offset)
        assert result.error is ErrorCode.NONE
        got = [(b.base_offset, [r.offset for r in b.records]) for b in iter_batches(result.records)]
        expected = [
            (b.base_offset, [r.offset for r in b.records])
            for b in self.batches
            if b.last_offset >= fetch_offset and (max_offset is None or b.base_offset < max_offset)
        ]
        assert got == expected[: len(got)]
        assert len(result.records) <= max_bytes or len(got) == 1
        assert got or not expected  # at least one batch, however small max_bytes is
        if len(got) < len(expected):
            next_size = len(self.log.read(expected[len(got)][0], 1).records)
            assert len(result.records) + next_size > max_bytes

    # -- what must always hold --------------------------------------------------

    @invariant()
    def reads_back_what_the_model_holds(self):
        if self.log is None:
            return
        assert (self.log.log_start_offset, self.log.log_end_offset) == (self.log_start_offset, self.log_end_offset)
        assert self.log.recovery_point <= self.log_end_offset
        result = self.log.read(self.log_start_offset, 1 << 30)
        assert result.error is ErrorCode.NONE
        got = [r for b in iter_batches(result.records) for r in b.records if r.offset >= self.log_start_offset]
        expected = [r for b in self.batches for r in b.records if r.offset >= self.log_start_offset]
        assert got == expected
        assert self.log.size_bytes == sum(s.size_bytes for s in self.log.segments)


PartitionLogMachine.TestCase.settings = settings(
    max_examples=200,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_partition_log_matches_the_model = PartitionLogMachine.TestCase
