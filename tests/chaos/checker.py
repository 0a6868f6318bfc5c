"""The checker: judges the clients' histories and the replicas' logs after a chaos run.

It holds DESIGN §11's invariants against what really happened on real processes:
no acknowledged write lost, no record a consumer read lost, offsets strictly
increasing, replicas identical below the high watermark (batch for batch,
bytes included). Duplicates and unacknowledged writes that landed are counted
too: without the idempotent producer both are allowed (at least once).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from tests.replicas import StoredBatch
from tests.chaos.workload import ReaderHistory, WriterHistory

EXAMPLES_MAX = 5


@dataclass
class Report:
    """What one scenario did and what the checker found."""

    scenario: str
    seed: int
    runs: int = 0
    sent: int = 0
    acknowledged: int = 0
    acknowledged_all: int = 0  # of those, with acks=all
    lost: list[str] = field(default_factory=list)  # acknowledged, not at its offset in the final log
    lost_all: int = 0  # of those, acknowledged with acks=all
    read_then_lost: list[str] = field(default_factory=list)  # returned by a consumer, gone afterwards
    unacknowledged_present: int = 0
    unanswered: int = 0
    failed: dict[str, int] = field(default_factory=dict)  # error name -> writes that failed with it
    duplicates: int = 0
    non_increasing: list[str] = field(default_factory=list)
    divergence: list[str] = field(default_factory=list)
    truncations_detected: int = 0
    faults: list[str] = field(default_factory=list)
    elapsed_s: float = 0.0

    def summary(self) -> str:
        lines = [
            f"scenario {self.scenario} (seed {self.seed}): {self.runs} fault runs in {self.elapsed_s:.0f} s",
            f"  sent {self.sent}, acknowledged {self.acknowledged} (acks=all {self.acknowledged_all}), "
            f"unanswered {self.unanswered}, failed {sum(self.failed.values())} {self.failed or ''}",
            f"  acknowledged but lost {len(self.lost)} (acks=all {self.lost_all}), read then lost "
            f"{len(self.read_then_lost)}, unacknowledged but present {self.unacknowledged_present}, "
            f"duplicates {self.duplicates}",
            f"  non-increasing offsets {len(self.non_increasing)}, replicas differing below the HW "
            f"{len(self.divergence)}, truncations consumers detected {self.truncations_detected}",
        ]
        for title, items in (("lost", self.lost), ("read then lost", self.read_then_lost),
                             ("non-increasing", self.non_increasing), ("divergence", self.divergence)):
            lines += [f"  {title}: {item}" for item in items[:EXAMPLES_MAX]]
        lines += [f"  fault: {fault}" for fault in self.faults]
        return "\n".join(lines)


def check(
    report: Report,
    writers: Sequence[WriterHistory],
    reader: ReaderHistory | None,
    final_log: Mapping[int, list[tuple[int, bytes]]],
    replica_logs: Mapping[int, Mapping[int, list[StoredBatch]]],
    leaders: Mapping[int, int],
    high_watermarks: Mapping[int, int],
) -> Report:
    """Fill `report` from the histories, the final read and each replica's batches below the HW.

    replica_logs maps partition -> broker -> batches; leaders maps partition -> the
    leader whose copy the others are compared with.
    """
    at_offset: dict[tuple[int, int], bytes] = {}
    where: dict[bytes, list[tuple[int, int]]] = defaultdict(list)
    for partition, records in final_log.items():
        for offset, value in records:
            at_offset[(partition, offset)] = value
            where[value].append((partition, offset))
        _increasing(report, f"the final read of partition {partition}", [o for o, _ in records])
    report.duplicates = sum(len(places) - 1 for places in where.values())

    for writer in writers:
        _judge_writer(report, writer, at_offset, where)
    if reader is not None:
        _judge_reader(report, reader, at_offset)
    for partition, copies in replica_logs.items():
        _compare_replicas(report, partition, copies, leaders[partition], high_watermarks[partition])
    return report


def _judge_writer(report: Report, writer: WriterHistory, at_offset, where) -> None:
    report.sent += len(writer.sent)
    report.acknowledged += len(writer.acknowledged)
    if writer.acks == "all":
        report.acknowledged_all += len(writer.acknowledged)
    report.unanswered += len(writer.unanswered)
    for error in writer.failed.values():
        report.failed[error] = report.failed.get(error, 0) + 1
    for value, ack in writer.acknowledged.items():
        if at_offset.get((ack.partition, ack.offset)) != value:
            elsewhere = where.get(value)
            found = f"found at {elsewhere}" if elsewhere else "found nowhere"
            report.lost.append(f"{value.decode()} (acks={writer.acks}) acknowledged at partition "
                               f"{ack.partition} offset {ack.offset}; {found}")
            if writer.acks == "all":
                report.lost_all += 1
    report.unacknowledged_present += sum(1 for v, _ in writer.sent if v not in writer.acknowledged and v in where)
    by_partition: dict[int, list[int]] = defaultdict(list)
    for value, partition in writer.sent:
        ack = writer.acknowledged.get(value)
        if ack is not None:
            by_partition[partition].append(ack.offset)
    for partition, offsets in by_partition.items():
        _increasing(report, f"{writer.name}'s acknowledgements on partition {partition} in send order", offsets)


def _judge_reader(report: Report, reader: ReaderHistory, at_offset) -> None:
    report.truncations_detected += len(reader.truncations)
    for partition, records in reader.records.items():
        breaks = [0, *reader.breaks.get(partition, []), len(records)]
        for start, end in zip(breaks, breaks[1:]):
            _increasing(report, f"the live consumer's offsets on partition {partition}",
                        [o for o, _ in records[start:end]])
        if reader.truncations:
            continue  # an unclean election took records it had read; the consumer said so
        for offset, value in records:
            if at_offset.get((partition, offset)) != value:
                report.read_then_lost.append(f"{value.decode()} read at partition {partition} offset {offset}")


def _increasing(report: Report, what: str, offsets: Sequence[int]) -> None:
    for previous, current in zip(offsets, offsets[1:]):
        if current <= previous:
            report.non_increasing.append(f"{what}: {current} after {previous}")
            return


def _compare_replicas(report: Report, partition: int, copies: Mapping[int, list[StoredBatch]], leader: int,
                      high_watermark: int) -> None:
    reference = copies[leader]
    for broker, batches in sorted(copies.items()):
        if broker == leader:
            continue
        for mine, theirs in zip(batches, reference):
            if mine != theirs:
                report.divergence.append(
                    f"partition {partition}: broker {broker}'s batch at offset {mine.base_offset} (leader epoch "
                    f"{mine.leader_epoch}) differs from leader {leader}'s at offset {theirs.base_offset} "
                    f"(leader epoch {theirs.leader_epoch}) below the HW {high_watermark}")
                break
        else:
            if len(batches) != len(reference):
                report.divergence.append(
                    f"partition {partition}: broker {broker} holds {len(batches)} batches below the HW "
                    f"{high_watermark}, leader {leader} {len(reference)}")
