"""One member of a consumer group as a process of its own, for the scenario tests.

It subscribes to one topic and writes what happens to it as JSON lines, each stamped with
time.monotonic() (one clock for every process on the machine): the partitions it is assigned,
revoked and lost, the offsets each poll returned, every commit that succeeded, and its clean exit.
It commits what it read after every poll and, as a careful application does, before it gives
partitions up. SIGTERM closes it cleanly (leaving the group); SIGKILL is the crash.

    python -m tests.integration.group_member BOOTSTRAP GROUP TOPIC LOG [--instance-id ID]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from typing import IO

from replog.client import ClientError, CommitFailedError, Consumer, TopicPartition


class Journal:
    def __init__(self, handle: IO[str]) -> None:
        self._handle = handle

    def write(self, event: str, **fields: object) -> None:
        self._handle.write(json.dumps({"t": time.monotonic(), "event": event, **fields}) + "\n")


class Member:
    def __init__(self, consumer: Consumer, topic: str, journal: Journal) -> None:
        self.consumer = consumer
        self.topic = topic
        self.journal = journal
        self.read_up_to: dict[int, int] = {}  # partition -> the offset after the last record read

    def assigned(self, partitions: frozenset[TopicPartition]) -> None:
        self.journal.write("assigned", partitions=sorted(tp.partition for tp in partitions))

    def revoked(self, partitions: frozenset[TopicPartition]) -> None:
        self.commit({tp.partition for tp in partitions})
        for tp in partitions:
            self.read_up_to.pop(tp.partition, None)
        self.journal.write("revoked", partitions=sorted(tp.partition for tp in partitions))

    def lost(self, partitions: frozenset[TopicPartition]) -> None:
        for tp in partitions:
            self.read_up_to.pop(tp.partition, None)
        self.journal.write("lost", partitions=sorted(tp.partition for tp in partitions))

    def commit(self, partitions: set[int]) -> None:
        offsets = {p: o for p, o in self.read_up_to.items() if p in partitions}
        if not offsets:
            return
        try:
            self.consumer.commit({TopicPartition(self.topic, p): o for p, o in offsets.items()})
        except CommitFailedError as error:
            self.journal.write("commit_failed", reason=str(error))
            return
        self.journal.write("committed", offsets=offsets)

    def poll_once(self) -> None:
        records = self.consumer.poll(100)
        if not records:
            return
        read = [[r.partition, r.offset] for r in records]
        self.journal.write("records", read=read)
        for partition, offset in read:
            self.read_up_to[partition] = max(self.read_up_to.get(partition, 0), offset + 1)
        self.commit(set(self.read_up_to))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap")
    parser.add_argument("group")
    parser.add_argument("topic")
    parser.add_argument("log")
    parser.add_argument("--instance-id")
    args = parser.parse_args()

    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    with open(args.log, "a", buffering=1, encoding="utf-8") as handle:
        journal = Journal(handle)
        journal.write("started", pid=os.getpid())
        consumer = Consumer(args.bootstrap, group_id=args.group, group_instance_id=args.instance_id,
                            auto_offset_reset="earliest", enable_auto_commit=False)
        member = Member(consumer, args.topic, journal)
        consumer.subscribe([args.topic], on_partitions_assigned=member.assigned,
                           on_partitions_revoked=member.revoked, on_partitions_lost=member.lost)
        while not stopping:
            try:
                member.poll_once()
            except ClientError as error:
                journal.write("error", reason=str(error))
        consumer.close()
        journal.write("closed")


if __name__ == "__main__":
    main()
