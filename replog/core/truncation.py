"""Where a follower's log diverges from its leader's, found by leader epochs (KIP-101, KIP-279, KIP-320).

Never by the high watermark alone: a follower that truncated to its own HW
could drop records the leader had already committed (the follower learns the HW
one fetch late), and then lose them for good if it were elected next.
"""

from .epoch_cache import EpochEndOffset, LeaderEpochCache


def diverging_epoch(
    cache: LeaderEpochCache, log_end_offset: int, last_fetched_epoch: int, fetch_offset: int
) -> EpochEndOffset | None:
    """The leader's check of a fetch: None when the fetcher's log is a prefix of ours
    (or when it sent no epoch to check).

    Otherwise the largest epoch both may share and where it ends in our log;
    an undefined answer means the fetcher claims an epoch we never had.
    """
    if last_fetched_epoch < 0:
        return None
    answer = cache.end_offset_for(last_fetched_epoch, log_end_offset)
    if answer.undefined or answer.epoch < last_fetched_epoch or answer.end_offset < fetch_offset:
        return answer
    return None


def truncation_offset(cache: LeaderEpochCache, log_end_offset: int, leader_answer: EpochEndOffset) -> int:
    """Where a follower truncates, given the leader's end offset for an epoch.

    If we hold that epoch too, the logs agree up to the smaller of the two ends.
    If we do not, our largest epoch below it ends where ours ends: truncate
    there, and the next fetch asks again with that earlier epoch, until the
    leader's answer names an epoch we hold.
    """
    ours = cache.end_offset_for(leader_answer.epoch, log_end_offset)
    if ours.undefined:
        return min(leader_answer.end_offset, log_end_offset)
    if ours.epoch != leader_answer.epoch:
        return min(ours.end_offset, log_end_offset)
    return min(ours.end_offset, leader_answer.end_offset, log_end_offset)
