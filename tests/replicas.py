"""Partition logs read straight from the brokers' data dirs, batch by batch, to compare replicas."""

from __future__ import annotations

import os
import random
import struct
from dataclasses import dataclass

from replog.protocol.header import read_header
from replog.protocol.layout import HEADER_SIZE


@dataclass(frozen=True)
class StoredBatch:
    base_offset: int
    last_offset: int
    leader_epoch: int
    data: bytes


def segment_paths(partition_dir: str) -> list[str]:
    return [os.path.join(partition_dir, name)
            for name in sorted(n for n in os.listdir(partition_dir) if n.endswith(".log"))]


def batches(partition_dir: str, below_offset: int | None = None) -> list[StoredBatch]:
    """The whole batches of a replica's log, in order, up to the first one reaching below_offset."""
    found: list[StoredBatch] = []
    for path in segment_paths(partition_dir):
        with open(path, "rb") as handle:
            data = handle.read()
        position = 0
        while position + HEADER_SIZE <= len(data):
            try:
                header = read_header(data, position)
            except struct.error:
                return found
            if header.size <= HEADER_SIZE - 12 or position + header.size > len(data):
                return found  # a torn or unfinished tail
            if below_offset is not None and header.last_offset >= below_offset:
                return found
            found.append(StoredBatch(header.base_offset, header.last_offset, header.partition_leader_epoch,
                                     data[position:position + header.size]))
            position += header.size
    return found


def tear_last_segment(partition_dir: str, rng: random.Random) -> tuple[str, int, int]:
    """Cut the last segment at a random byte past its first batch, as a crash losing unflushed pages would.

    Returns the file, its size before and its size after.
    """
    paths = [p for p in segment_paths(partition_dir) if os.path.getsize(p) > 0]
    if not paths:
        raise AssertionError(f"{partition_dir} has no data to tear")
    path = paths[-1]
    size = os.path.getsize(path)
    with open(path, "rb") as handle:
        head = handle.read(HEADER_SIZE)
    first_end = read_header(head, 0).size if len(head) == HEADER_SIZE else 0
    low = first_end if first_end <= size else 0  # past the first batch when it is whole
    cut = rng.randrange(low, size) if size > low else size
    with open(path, "r+b") as handle:
        handle.truncate(cut)
    return path, size, cut

