"""Aborted transactions as a partition indexes them, and which of them a read_committed fetch names.

When an ABORT marker completes a transaction on a partition, the leader (and
every follower) records an `AbortedTxn` in the `.txnindex` of the segment that
holds the marker (Kafka's AbortedTxn: producer id, first offset, last offset
(the marker's), and the last stable offset when it completed). A fetch from
`fetch_offset` up to `upper_bound_offset` (exclusive) names every aborted
transaction whose range overlaps it, so that the consumer can drop their
batches.
"""

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset
    last_stable_offset: int  # the partition's LSO once this transaction completed


def collect_aborted(entries: Iterable[AbortedTxn], fetch_offset: int,
                    upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
    """The entries (in index order) overlapping [fetch_offset, upper_bound_offset), and whether the search
    is complete: once an entry's LSO reaches the upper bound, no later index can hold an overlapping
    transaction (every transaction open below the bound had completed by then), as Kafka's
    TransactionIndex.collectAbortedTxns reasons."""
    found = []
    for entry in entries:
        if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound_offset:
            found.append(entry)
        if entry.last_stable_offset >= upper_bound_offset:
            return found, True
    return found, False
