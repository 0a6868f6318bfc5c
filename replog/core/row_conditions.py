"""What a query's conditions on a topic's rows say about the ranges to read: pure rules, no I/O.

A query over records as rows (`topic`, `partition`, `offset`, `timestamp`, ...) may put conditions
on them that a reader can meet by reading less, as Spark hands a data source the filters it can
push down. Each condition is a `Condition(column, op, value)`, all of them ANDed:

    condition                                  what the reader does              the query still checks it
    topic = t, topic in (...)                  reads those topics' partitions    no
    partition = p, partition in (...)          reads those partitions            no
    offset = o, >, >=, <, <=                   cuts every range to those offsets no: offsets are unique
                                                                                 in a partition
    offset in (...)                            cuts to [smallest, largest]       yes
    timestamp >, >= t                          starts every range at the first   yes: a later record may
                                               offset whose timestamp is at      carry an earlier time
                                               least t (ListOffsets by time;     (timestamps need not
                                               every record before it is         grow)
                                               earlier)
    anything else                              nothing                           yes

A condition whose value is of the wrong kind (a string for an offset, say) is left to the query.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .topic_partition import TopicPartition

OPS = ("=", "in", ">", ">=", "<", "<=")


@dataclass(frozen=True, slots=True)
class Condition:
    column: str
    op: str  # one of OPS
    value: object  # a tuple for "in"; a timestamp in ms since the Unix epoch


@dataclass(frozen=True, slots=True)
class Narrowing:
    """What the conditions leave to read: None where they say nothing."""

    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    offset_from: int = 0  # inclusive
    offset_until: int | None = None  # exclusive
    timestamp_from_ms: int | None = None  # read from the first offset at or after this time

    def __str__(self) -> str:
        parts = []
        if self.topics is not None:
            parts.append(f"topics {sorted(self.topics)}")
        if self.partitions is not None:
            parts.append(f"partitions {sorted(self.partitions)}")
        if self.offset_from or self.offset_until is not None:
            parts.append(f"offsets [{self.offset_from}, {'end' if self.offset_until is None else self.offset_until})")
        if self.timestamp_from_ms is not None:
            parts.append(f"from time {self.timestamp_from_ms} ms")
        return ", ".join(parts) or "everything"

    def keeps(self, tp: TopicPartition) -> bool:
        return ((self.topics is None or tp.topic in self.topics)
                and (self.partitions is None or tp.partition in self.partitions))

    def cut(self, starts: Mapping[TopicPartition, int], ends: Mapping[TopicPartition, int],
            time_starts: Mapping[TopicPartition, int] | None = None) -> tuple[dict[TopicPartition, int],
                                                                               dict[TopicPartition, int]]:
        """Each kept partition's [start, end) cut by the offset bounds and (`time_starts`, the offsets
        of `timestamp_from_ms`) the time bound; a range cut to nothing starts at its end."""
        new_starts: dict[TopicPartition, int] = {}
        new_ends: dict[TopicPartition, int] = {}
        for tp, end in ends.items():
            if tp not in starts or not self.keeps(tp):
                continue
            start = max(starts[tp], self.offset_from, (time_starts or {}).get(tp, 0))
            if self.offset_until is not None:
                end = min(end, self.offset_until)
            new_starts[tp], new_ends[tp] = min(start, end), end
        return new_starts, new_ends


def _ints(values: Iterable[object]) -> frozenset[int] | None:
    values = tuple(values)
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return None
    return frozenset(values)  # type: ignore[arg-type]


def _values(condition: Condition) -> tuple[object, ...]:
    return tuple(condition.value) if condition.op == "in" else (condition.value,)  # type: ignore[arg-type]


def narrowing(conditions: Sequence[Condition]) -> tuple[Narrowing, list[int]]:
    """The narrowing the conditions make, and the positions of those the query must still check."""
    topics: frozenset[str] | None = None
    partitions: frozenset[int] | None = None
    offset_from, offset_until = 0, None
    timestamp_from: int | None = None
    left: list[int] = []
    for index, condition in enumerate(conditions):
        column, op = condition.column, condition.op
        if column == "topic" and op in ("=", "in") and all(isinstance(v, str) for v in _values(condition)):
            named = frozenset(_values(condition))  # type: ignore[arg-type]
            topics = named if topics is None else topics & named
            continue
        if column == "partition" and op in ("=", "in") and (named_ints := _ints(_values(condition))) is not None:
            partitions = named_ints if partitions is None else partitions & named_ints
            continue
        if column == "offset" and (values := _ints(_values(condition))) is not None and values:
            low, high = min(values), max(values)
            if op in ("=", "in"):
                offset_from = max(offset_from, low)
                offset_until = high + 1 if offset_until is None else min(offset_until, high + 1)
                if op == "in":
                    left.append(index)
                continue
            if op in (">", ">="):
                offset_from = max(offset_from, low + 1 if op == ">" else low)
                continue
            if op in ("<", "<="):
                bound = low if op == "<" else low + 1
                offset_until = bound if offset_until is None else min(offset_until, bound)
                continue
        if column == "timestamp" and op in (">", ">=") and (values := _ints(_values(condition))) is not None:
            # "> t" starts at t as ">= t" does: records at t itself are left for the query to drop.
            timestamp_from = max(values) if timestamp_from is None else max(timestamp_from, max(values))
        left.append(index)
    return Narrowing(topics, partitions, offset_from, offset_until, timestamp_from), left
