"""Followers find where their log diverges from the leader's by leader epochs (KIP-101/279)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from replog.core.epoch_cache import EpochEndOffset, EpochEntry, LeaderEpochCache
from replog.core.truncation import diverging_epoch, truncation_offset


def cache_for(epochs_by_offset: list[int], current_epoch: int | None = None) -> LeaderEpochCache:
    cache = LeaderEpochCache()
    for offset, epoch in enumerate(epochs_by_offset):
        cache.assign(epoch, offset)
    if current_epoch is not None:
        cache.assign(current_epoch, len(epochs_by_offset))
    return cache


def converge(follower: list[int], leader: list[int], leader_epoch: int) -> tuple[list[int], int]:
    """Run the follower's fetch loop against the leader's answers; return its log and the rounds taken."""
    leader_cache = cache_for(leader, leader_epoch)
    follower_cache = cache_for(follower)
    rounds = 0
    while True:
        answer = diverging_epoch(leader_cache, len(leader), follower_cache.latest_epoch, len(follower))
        if answer is None:
            return follower, rounds
        assert not answer.undefined
        offset = truncation_offset(follower_cache, len(follower), answer)
        assert offset < len(follower) or follower_cache.truncate_from_end(offset), "no progress"
        follower = follower[:offset]
        follower_cache.truncate_from_end(offset)
        rounds += 1


def test_kip_279_follower_truncates_in_two_rounds_through_an_epoch_it_never_saw():
    # The follower took offsets 10-14 from a leader of epoch 2 that lost its
    # leadership; the current leader (epoch 3) never saw epoch 2, and its own
    # epoch 1 ended at 12.
    follower = [0] * 10 + [2] * 5
    leader = [0] * 10 + [1] * 2 + [3] * 8
    leader_cache = cache_for(leader, 4)
    first = diverging_epoch(leader_cache, 20, last_fetched_epoch=2, fetch_offset=15)
    assert first == EpochEndOffset(1, 12)
    assert truncation_offset(cache_for(follower), 15, first) == 10  # our epoch 0 ends at 10
    assert diverging_epoch(leader_cache, 20, last_fetched_epoch=0, fetch_offset=10) is None
    assert converge(follower, leader, 4) == ([0] * 10, 1)


def test_follower_keeps_what_the_leader_has_of_the_same_epoch():
    follower = [1] * 8
    leader = [1] * 5 + [2] * 3
    assert converge(follower, leader, 3) == ([1] * 5, 1)


def test_follower_that_is_a_prefix_of_the_leader_truncates_nothing():
    leader = [1] * 5 + [2] * 3
    assert diverging_epoch(cache_for(leader, 3), 8, last_fetched_epoch=1, fetch_offset=5) is None
    assert diverging_epoch(cache_for(leader, 3), 8, last_fetched_epoch=2, fetch_offset=7) is None


def test_no_epoch_means_no_check():
    assert diverging_epoch(cache_for([1, 1]), 2, last_fetched_epoch=-1, fetch_offset=0) is None


def test_an_epoch_the_leader_never_had_is_undefined():
    assert diverging_epoch(cache_for([1, 1]), 2, last_fetched_epoch=5, fetch_offset=2).undefined


def test_leader_answer_for_an_epoch_we_lack_is_capped_by_our_log_end():
    cache = LeaderEpochCache([EpochEntry(1, 0)])
    assert truncation_offset(cache, 4, EpochEndOffset(0, 9)) == 0  # below our first epoch
    assert truncation_offset(LeaderEpochCache(), 4, EpochEndOffset(3, 9)) == 4


@st.composite
def divergent_logs(draw):
    """Two logs with a common prefix, each continuing it as only a real history allows:
    more records of the prefix's last epoch (one leader wrote them, so they agree
    where both have them), then epochs of leaders the other log never followed."""
    prefix: list[int] = []
    epoch = 0
    for _ in range(draw(st.integers(0, 4))):
        epoch += draw(st.integers(1, 2))
        prefix += [epoch] * draw(st.integers(1, 4))
    later_epochs = draw(st.lists(st.integers(epoch + 1, epoch + 12), unique=True, max_size=6))
    split = draw(st.integers(0, len(later_epochs)))
    own, theirs = sorted(later_epochs[:split]), sorted(later_epochs[split:])

    def continuation(epochs: list[int], extra_of_last: int) -> list[int]:
        log = [epoch] * extra_of_last if prefix else []
        for later in epochs:
            log += [later] * draw(st.integers(1, 4))
        return log

    extra_follower, extra_leader = draw(st.integers(0, 3)), draw(st.integers(0, 3))
    follower = prefix + continuation(own, extra_follower)
    leader = prefix + continuation(theirs, extra_leader)
    common = len(prefix) + (min(extra_follower, extra_leader) if prefix else 0)
    leader_epoch = max([epoch, *later_epochs]) + 1
    return follower, leader, common, leader_epoch


@settings(max_examples=500)
@given(divergent_logs())
def test_truncation_stops_exactly_where_the_logs_stop_agreeing(logs):
    follower, leader, common, leader_epoch = logs
    result, rounds = converge(follower, leader, leader_epoch)
    assert result == leader[: len(result)], "kept records the leader does not have"
    assert len(result) == common, "dropped records the leader has"
    assert rounds <= len(set(follower)) + 1
