"""A checker over the histories of transactional writers and their readers, after Jepsen's Kafka workload.

Writers report each transaction: the values it sent (with the partition and offset each
was acknowledged at, when known), the values it consumed, and how it ended. Readers
report, per session (a session ends at a reassignment or restart), the records they
polled in order. The checker names each anomaly and lists its cases:

- `lost-write`: a value of a committed transaction (or a plain acknowledged write) that no
  reader saw, although readers read past its offset in that partition;
- `aborted-read`: a read_committed reader saw a value of an aborted transaction;
- `duplicate`: a value at more than one offset;
- `inconsistent-offsets`: two different values read at one offset;
- `poll-skip`: one session read offsets a and then b of a partition, and a committed value
  lies strictly between them;
- `nonmonotonic-poll`: one session read offset b after a with b <= a;
- `G1c`: a cycle of committed transactions through write-write (log order in a partition)
  and write-read (one read what the other wrote) dependencies.

Every name is always present in the result, so a caller can assert each is empty.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

ANOMALIES = ("lost-write", "aborted-read", "duplicate", "inconsistent-offsets", "poll-skip", "nonmonotonic-poll",
             "G1c")

COMMITTED, ABORTED, UNKNOWN = "committed", "aborted", "unknown"
Partition = tuple[str, int]


@dataclass(frozen=True)
class Write:
    partition: Partition
    value: bytes
    offset: int | None = None  # as acknowledged, when the writer learned it


@dataclass(frozen=True)
class Read:
    partition: Partition
    offset: int
    value: bytes


@dataclass
class Txn:
    """One transaction of a writer (or one plain write, as a transaction of one value)."""

    name: str
    outcome: str  # COMMITTED, ABORTED or UNKNOWN (the writer died before it learned)
    writes: list[Write] = field(default_factory=list)
    reads: list[Read] = field(default_factory=list)


@dataclass
class Session:
    """What one reader polled, in order, between two (re)assignments."""

    name: str
    reads: list[Read] = field(default_factory=list)
    read_committed: bool = True


def check(txns: Iterable[Txn], sessions: Iterable[Session]) -> dict[str, list[str]]:
    """Every anomaly by name, each with the cases found (an empty list when none)."""
    txns, sessions = list(txns), list(sessions)
    found: dict[str, list[str]] = {name: [] for name in ANOMALIES}
    writer_of = {write.value: txn for txn in txns for write in txn.writes}
    log = _observed_log(txns, sessions, found)
    _duplicates(log, found)
    _aborted_reads(sessions, writer_of, found)
    _lost_writes(txns, list(_all_reads(txns, sessions)), found)
    _polls(sessions, log, writer_of, found)
    _g1c(txns, log, writer_of, found)
    return found


def _all_reads(txns: list[Txn], sessions: list[Session]) -> Iterator[Read]:
    for txn in txns:
        yield from txn.reads
    for session in sessions:
        yield from session.reads


def _observed_log(txns: list[Txn], sessions: list[Session], found: dict[str, list[str]]) -> dict[Partition,
                                                                                                    dict[int, bytes]]:
    """Offset to value per partition, as readers saw it (and as writers were acknowledged)."""
    log: dict[Partition, dict[int, bytes]] = defaultdict(dict)
    seen = [(write.partition, write.offset, write.value) for txn in txns if txn.outcome == COMMITTED
            for write in txn.writes if write.offset is not None]
    seen += [(read.partition, read.offset, read.value) for read in _all_reads(txns, sessions)]
    for partition, offset, value in seen:
        known = log[partition].setdefault(offset, value)
        if known != value:
            found["inconsistent-offsets"].append(f"{_name(partition)}@{offset}: {known!r} and {value!r}")
    return log


def _duplicates(log: dict[Partition, dict[int, bytes]], found: dict[str, list[str]]) -> None:
    offsets_of: dict[bytes, list[str]] = defaultdict(list)
    for partition, values in log.items():
        for offset, value in values.items():
            offsets_of[value].append(f"{_name(partition)}@{offset}")
    found["duplicate"] += [f"{value!r} at {', '.join(sorted(places))}"
                           for value, places in offsets_of.items() if len(places) > 1]


def _aborted_reads(sessions: list[Session], writer_of: dict[bytes, Txn], found: dict[str, list[str]]) -> None:
    for session in sessions:
        if session.read_committed:
            found["aborted-read"] += [f"{session.name} read {read.value!r} of aborted {writer_of[read.value].name}"
                                      for read in session.reads
                                      if read.value in writer_of and writer_of[read.value].outcome == ABORTED]


def _lost_writes(txns: list[Txn], reads: list[Read], found: dict[str, list[str]]) -> None:
    read_values = {read.value for read in reads}
    read_up_to: dict[Partition, int] = {}
    for read in reads:
        read_up_to[read.partition] = max(read.offset, read_up_to.get(read.partition, -1))
    for txn in txns:
        if txn.outcome != COMMITTED:
            continue
        for write in txn.writes:
            past = write.offset is None or read_up_to.get(write.partition, -1) >= write.offset
            if write.value not in read_values and past and write.partition in read_up_to:
                found["lost-write"].append(f"{write.value!r} of {txn.name} in {_name(write.partition)}")


def _polls(sessions: list[Session], log: dict[Partition, dict[int, bytes]], writer_of: dict[bytes, Txn],
           found: dict[str, list[str]]) -> None:
    committed_offsets = {partition: sorted(offset for offset, value in values.items()
                                           if value not in writer_of or writer_of[value].outcome == COMMITTED)
                         for partition, values in log.items()}

    def committed_between(partition: Partition, low: int, high: int) -> list[int]:
        offsets = committed_offsets[partition]
        return offsets[bisect.bisect_right(offsets, low):bisect.bisect_left(offsets, high)]

    for session in sessions:
        last: dict[Partition, int] = {}
        for read in session.reads:
            before = last.get(read.partition)
            last[read.partition] = read.offset
            if before is None:
                continue
            if read.offset <= before:
                found["nonmonotonic-poll"].append(f"{session.name}: {_name(read.partition)} {before} then "
                                                  f"{read.offset}")
            elif skipped := committed_between(read.partition, before, read.offset):
                found["poll-skip"].append(f"{session.name}: {_name(read.partition)} {before} then {read.offset}, "
                                          f"skipping {skipped[:10]}")


def _g1c(txns: list[Txn], log: dict[Partition, dict[int, bytes]], writer_of: dict[bytes, Txn],
         found: dict[str, list[str]]) -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    for values in log.values():
        writers = [writer_of[values[offset]] for offset in sorted(values) if values[offset] in writer_of]
        for earlier, later in zip(writers, writers[1:]):
            if earlier is not later and earlier.outcome == later.outcome == COMMITTED:
                edges[earlier.name].add(later.name)  # write-write: log order
    for txn in txns:
        for read in txn.reads:
            writer = writer_of.get(read.value)
            if writer is not None and writer is not txn and writer.outcome == txn.outcome == COMMITTED:
                edges[writer.name].add(txn.name)  # write-read
    found["G1c"] += [" -> ".join(sorted(component)) for component in _cycles(edges)]


def _cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one node (Tarjan's, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    nodes = set(edges) | {node for targets in edges.values() for node in targets}
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(component)
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(edges.get(child, ())))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return components


def _name(partition: Partition) -> str:
    return f"{partition[0]}-{partition[1]}"
