"""Fetch sessions (KIP-227), both halves, in logical time: the tables, the follower's requests, and a
leader that hears every follower's position in a session however little the follower names."""


import pytest

from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.fetch_session import (
    ACTIONS,
    EPOCH_MAX,
    FOLLOWER_TRANSITIONS,
    SESSION_NONE,
    FetchSessionCache,
    FollowerEvent,
    FollowerSession,
    FollowerState,
    PartitionFetch,
    RequestKind,
)
from replog.core.invariant import InvariantViolation
from replog.core.log import MemoryLog
from replog.core.partition_driver import PartitionDriver
from replog.core.replica import PartitionReplica
from replog.core.topic_partition import TopicPartition

from .harness import RecordingSink, partition_state, produce

T0, T1, T2 = (TopicPartition("t", p) for p in range(3))
FOLLOWER = 2


def counter(start: int = 100):
    ids = iter(range(start, start + 1_000_000))
    return lambda: next(ids)


def positions(start, named) -> dict[TopicPartition, int]:
    return {key: request.fetch_offset for key, request in start.requests(named, FOLLOWER, 1, 0).items()}


def at(offset: int) -> PartitionFetch:
    return PartitionFetch(fetch_offset=offset, current_leader_epoch=1, last_fetched_epoch=-1, max_bytes=1 << 20)


# -- the leader's half -----------------------------------------------------------------------


def test_every_kind_of_request_has_one_action():
    assert set(ACTIONS) == set(RequestKind)


@pytest.mark.parametrize(("request_ids", "kind"), [
    ((FOLLOWER, 0, 0), RequestKind.OPEN),
    ((-1, 0, 0), RequestKind.SESSIONLESS),
    ((FOLLOWER, 0, -1), RequestKind.SESSIONLESS),
    ((FOLLOWER, 100, -1), RequestKind.CLOSE),
    ((FOLLOWER, 101, 1), RequestKind.UNKNOWN_SESSION),
    ((3, 100, 1), RequestKind.UNKNOWN_SESSION),
    ((FOLLOWER, 100, 5), RequestKind.WRONG_EPOCH),
    ((FOLLOWER, 100, 1), RequestKind.INCREMENTAL),
])
def test_requests_are_classified_by_session_id_epoch_and_fetcher(request_ids, kind):
    cache = FetchSessionCache(counter())
    assert cache.start(FOLLOWER, 0, 0, {T0: at(0)}, (), 0).session_id == 100
    assert cache.classify(*request_ids) is kind


def test_an_incremental_request_moves_named_partitions_forgets_others_and_advances_the_epoch():
    cache = FetchSessionCache(counter())
    opened = cache.start(FOLLOWER, 0, 0, {T0: at(0), T1: at(0), T2: at(0)}, (), 0)
    assert opened.full and positions(opened, {}) == {T0: 0, T1: 0, T2: 0}
    step = cache.start(FOLLOWER, opened.session_id, 1, {T1: at(7)}, [T2], 10)
    assert not step.full
    assert positions(step, {T1: at(7)}) == {T0: 0, T1: 7}, "every session partition is read, named or not"
    assert cache.classify(FOLLOWER, opened.session_id, 1) is RequestKind.WRONG_EPOCH
    assert cache.classify(FOLLOWER, opened.session_id, 2) is RequestKind.INCREMENTAL


def test_refusals_name_kafkas_errors_and_a_restarted_follower_replaces_its_session():
    cache = FetchSessionCache(counter())
    opened = cache.start(FOLLOWER, 0, 0, {T0: at(0)}, (), 0)
    assert cache.start(FOLLOWER, opened.session_id, 9, {}, (), 1).error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert cache.start(FOLLOWER, 7, 1, {}, (), 1).error == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    again = cache.start(FOLLOWER, 0, 0, {T0: at(0)}, (), 2)
    assert again.session_id != opened.session_id and len(cache) == 1
    assert cache.start(FOLLOWER, again.session_id, -1, {}, (), 3).session is None and len(cache) == 0


def test_the_cache_is_bounded_and_evicts_the_least_recently_used_session():
    cache = FetchSessionCache(counter(), sessions_max=3)
    sessions = [cache.start(replica, 0, 0, {}, (), now_ms=replica).session_id for replica in (1, 2, 3)]
    cache.start(1, sessions[0], 1, {}, (), now_ms=10)  # broker 1's session is used again
    cache.start(4, 0, 0, {}, (), now_ms=11)
    assert len(cache) == 3
    assert [s.replica_id for s in cache.evicted] == [2]
    assert cache.classify(1, sessions[0], 2) is RequestKind.INCREMENTAL


def test_a_session_id_is_never_zero_nor_one_in_use():
    ids = iter([0, 100, 100, 101])
    cache = FetchSessionCache(lambda: next(ids))
    assert cache.start(1, 0, 0, {}, (), 0).session_id == 100
    assert cache.start(2, 0, 0, {}, (), 0).session_id == 101
    stuck = FetchSessionCache(lambda: 100)
    stuck.start(1, 0, 0, {}, (), 0)
    with pytest.raises(InvariantViolation):
        stuck.start(2, 0, 0, {}, (), 0)


# -- the follower's half ---------------------------------------------------------------------


def test_the_follower_names_only_changed_partitions_and_forgets_the_ones_it_stopped_asking_for():
    session = FollowerSession()
    first = session.next_request({T0: at(5), T1: at(7)})
    assert (first.session_id, first.session_epoch, sorted(first.named), first.forgotten) == (0, 0, [T0, T1], ())
    session.answered(42)
    assert session.state is FollowerState.ACTIVE

    second = session.next_request({T0: at(6)})
    assert (second.session_id, second.session_epoch, second.named, second.forgotten) == (42, 1, (T0,), (T1,))
    third = session.next_request({T0: at(6)})
    assert (third.session_epoch, third.named, third.forgotten) == (2, (), ())

    session.failed()
    assert session.next_request({T0: at(6)}).session_id == SESSION_NONE


def test_a_leader_that_opens_no_session_is_asked_in_full_again():
    session = FollowerSession()
    session.next_request({T0: at(0)})
    session.answered(SESSION_NONE)
    assert session.state is FollowerState.NONE
    assert session.next_request({T0: at(0)}).named == (T0,)


def test_session_epochs_wrap_from_the_largest_to_one():
    session = FollowerSession()
    session.next_request({})
    session.answered(7)
    session._epoch = EPOCH_MAX
    assert session.next_request({}).session_epoch == EPOCH_MAX
    assert session.next_request({}).session_epoch == 1


def test_the_follower_table_has_no_way_out_of_a_missing_row():
    assert (FollowerState.NONE, FollowerEvent.ANSWERED) not in FOLLOWER_TRANSITIONS
    with pytest.raises(InvariantViolation):
        FollowerSession().answered(42)


# -- the leader hears every position -------------------------------------------------------


def leader_of(keys, lag_time_ms_max: int) -> tuple[dict[TopicPartition, PartitionDriver], RecordingSink]:
    sink = RecordingSink()
    drivers = {}
    for key in keys:
        replica = PartitionReplica(1, ReplicaConfig(replica_lag_time_ms_max=lag_time_ms_max))
        driver = PartitionDriver(key, replica, MemoryLog(), write_epoch_entries=lambda entries: None,
                                 wall_clock_ms=lambda: 0, sink=sink)
        driver.leader_and_isr(partition_state(leader=1, isr=(1, FOLLOWER), replicas=(1, FOLLOWER)), 0)
        drivers[key] = driver
    return drivers, sink


def fetch_in_session(cache, drivers, session_id, epoch, named, now_ms):
    start = cache.start(FOLLOWER, session_id, epoch, named, (), now_ms)
    for key, request in start.requests(named, FOLLOWER, 1, 0).items():
        drivers[key].fetch(request, now_ms)
    return start


def test_a_follower_naming_nothing_is_heard_in_every_partition_of_its_session():
    """After a long quiet spell, a record arrives: the follower's next fetch (its position unchanged,
    so it names nothing) gets it. A leader that had not heard the follower during the spell would
    take it to have been behind since the spell began, and drop it from the ISR at once."""
    lag_time_ms_max = 200
    drivers, sink = leader_of((T0, T1), lag_time_ms_max)
    cache = FetchSessionCache(counter())
    opened = fetch_in_session(cache, drivers, 0, 0, {T0: at(0), T1: at(0)}, 0)
    epoch = 1
    for now in range(50, 10 * lag_time_ms_max + 1, 50):  # incremental fetches that name nothing
        fetch_in_session(cache, drivers, opened.session_id, epoch, {}, now)
        epoch += 1
        for driver in drivers.values():
            driver.tick(now)
    drivers[T0].produce(produce("news", acks=1), now)
    fetch_in_session(cache, drivers, opened.session_id, epoch, {}, now + 50)
    drivers[T0].tick(now + 50)
    assert sink.proposals == [], "the follower was caught up a moment ago, not a quiet spell ago"

    # It stops fetching: partition 0, which it never read up to the new record, drops it.
    for later in range(now + 100, now + 100 + 3 * lag_time_ms_max, 50):
        for driver in drivers.values():
            driver.tick(later)
    assert [p.request.isr for p in sink.proposals] == [(1,)]
