"""The leader epoch cache answers OffsetsForLeaderEpoch the way Kafka's does."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.core.epoch_cache import (
    UNDEFINED_EPOCH_END_OFFSET,
    EpochEndOffset,
    EpochEntry,
    LeaderEpochCache,
)
from replog.core.invariant import InvariantViolation


def cache_of(*entries: tuple[int, int]) -> LeaderEpochCache:
    return LeaderEpochCache(EpochEntry(e, s) for e, s in entries)


# A log written by leaders of epochs 1, 3 and 4: offsets 0-9 by epoch 1,
# 10-14 by epoch 3, 15-19 by epoch 4 (log end offset 20).
KAFKA_EXAMPLE = ((1, 0), (3, 10), (4, 15))


@pytest.mark.parametrize(
    ("requested", "answer"),
    [
        (4, (4, 20)),  # the latest epoch ends at the log end offset
        (3, (3, 15)),  # an older epoch ends where the next one starts
        (2, (1, 10)),  # an epoch this log never saw: the largest one below it
        (1, (1, 10)),
        (0, (0, 0)),  # below the first entry: nothing before offset 0 may be kept
        (5, (-1, -1)),  # above the latest: no leader of this log wrote it
        (-1, (-1, -1)),
    ],
)
def test_end_offset_for_answers_like_offsets_for_leader_epoch(requested, answer):
    cache = cache_of(*KAFKA_EXAMPLE)
    assert cache.end_offset_for(requested, log_end_offset=20) == EpochEndOffset(*answer)


def test_empty_cache_knows_no_epoch():
    assert LeaderEpochCache().end_offset_for(0, log_end_offset=0) == UNDEFINED_EPOCH_END_OFFSET
    assert LeaderEpochCache().latest_epoch == -1


def test_below_first_entry_after_retention_answers_the_log_start():
    cache = cache_of(*KAFKA_EXAMPLE)
    cache.truncate_from_start(12)
    assert cache.entries == (EpochEntry(3, 12), EpochEntry(4, 15))
    assert cache.end_offset_for(1, log_end_offset=20) == EpochEndOffset(1, 12)


def test_assign_ignores_later_batches_of_the_latest_epoch():
    cache = cache_of((1, 0))
    assert cache.assign(1, 7) is False
    assert cache.entries == (EpochEntry(1, 0),)


def test_assign_replaces_an_epoch_that_wrote_nothing():
    # Leader at epoch 5 from offset 10, then epoch 6 from the same offset.
    cache = cache_of((1, 0), (5, 10))
    assert cache.assign(6, 10) is True
    assert cache.entries == (EpochEntry(1, 0), EpochEntry(6, 10))


@pytest.mark.parametrize(("epoch", "offset"), [(0, 20), (3, 9), (4, 14)])
def test_assign_refuses_history_going_backwards(epoch, offset):
    cache = cache_of(*KAFKA_EXAMPLE)
    with pytest.raises(InvariantViolation):
        cache.assign(epoch, offset)


@pytest.mark.parametrize("entries", [((1, 0), (1, 5)), ((1, 5), (2, 5)), ((2, 0), (1, 5))])
def test_entries_must_strictly_increase(entries):
    with pytest.raises(InvariantViolation):
        cache_of(*entries)


def test_truncate_from_end_drops_epochs_starting_at_or_after_the_offset():
    cache = cache_of(*KAFKA_EXAMPLE)
    assert cache.truncate_from_end(15) is True
    assert cache.entries == (EpochEntry(1, 0), EpochEntry(3, 10))
    assert cache.truncate_from_end(12) is False
    assert cache.end_offset_for(3, log_end_offset=12) == EpochEndOffset(3, 12)


def test_truncate_from_start_keeps_the_covering_epoch():
    cache = cache_of(*KAFKA_EXAMPLE)
    assert cache.truncate_from_start(10) is True
    assert cache.entries == (EpochEntry(3, 10), EpochEntry(4, 15))
    assert cache.truncate_from_start(10) is False
    assert cache.truncate_from_start(3) is False


# ---- properties against a brute-force model: one epoch per offset ----------


@st.composite
def epoch_logs(draw):
    """A log as the epoch of each offset, plus maybe a newer epoch with no records yet."""
    runs = draw(st.lists(st.tuples(st.integers(1, 3), st.integers(1, 4)), max_size=6))
    epochs_by_offset: list[int] = []
    epoch = draw(st.integers(0, 2))
    for gap, length in runs:
        epoch += gap
        epochs_by_offset += [epoch] * length
    empty_epoch = draw(st.none() | st.integers(1, 3).map(lambda gap: epoch + gap))
    return epochs_by_offset, empty_epoch


def build(epochs_by_offset: list[int], empty_epoch: int | None) -> LeaderEpochCache:
    cache = LeaderEpochCache()
    for offset, epoch in enumerate(epochs_by_offset):
        cache.assign(epoch, offset)
    if empty_epoch is not None:
        cache.assign(empty_epoch, len(epochs_by_offset))
    return cache


def brute_force_end_offset(epochs_by_offset, empty_epoch, requested):
    log_end_offset = len(epochs_by_offset)
    starts = {}
    for offset, epoch in enumerate(epochs_by_offset):
        starts.setdefault(epoch, offset)
    if empty_epoch is not None:
        starts[empty_epoch] = log_end_offset
    if requested < 0 or not starts:
        return UNDEFINED_EPOCH_END_OFFSET
    latest = max(starts)
    if requested == latest:
        return EpochEndOffset(requested, log_end_offset)
    if requested > latest:
        return UNDEFINED_EPOCH_END_OFFSET
    next_start = min(start for epoch, start in starts.items() if epoch > requested)
    below = [epoch for epoch in starts if epoch <= requested]
    return EpochEndOffset(max(below) if below else requested, next_start)


@given(epoch_logs(), st.integers(-1, 30))
def test_end_offset_for_matches_a_scan_of_the_log(log, requested):
    epochs_by_offset, empty_epoch = log
    cache = build(epochs_by_offset, empty_epoch)
    expected = brute_force_end_offset(epochs_by_offset, empty_epoch, requested)
    assert cache.end_offset_for(requested, len(epochs_by_offset)) == expected


@given(epoch_logs(), st.data())
def test_truncating_the_cache_equals_rebuilding_it_from_the_truncated_log(log, data):
    epochs_by_offset, empty_epoch = log
    cut = data.draw(st.integers(0, len(epochs_by_offset)))
    cache = build(epochs_by_offset, empty_epoch)
    cache.truncate_from_end(cut)
    assert cache.entries == build(epochs_by_offset[:cut], None).entries


@given(epoch_logs(), st.data())
def test_truncating_from_start_keeps_answers_for_the_remaining_log(log, data):
    epochs_by_offset, empty_epoch = log
    start = data.draw(st.integers(0, len(epochs_by_offset)))
    cache = build(epochs_by_offset, empty_epoch)
    cache.truncate_from_start(start)
    remaining = set(epochs_by_offset[start:]) | ({empty_epoch} if empty_epoch is not None else set())
    for epoch in remaining:
        full = brute_force_end_offset(epochs_by_offset, empty_epoch, epoch)
        assert cache.end_offset_for(epoch, len(epochs_by_offset)) == full


@given(epoch_logs())
def test_entries_round_trip_through_a_checkpoint(log):
    cache = build(*log)
    assert LeaderEpochCache(cache.entries).entries == cache.entries


def test_answers_unpack_as_epoch_and_end_offset():
    epoch, end_offset = cache_of(*KAFKA_EXAMPLE).end_offset_for(3, log_end_offset=20)
    assert (epoch, end_offset) == (3, 15)
