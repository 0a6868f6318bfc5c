"""Checkpoint files in Kafka's text format, replaced atomically.

    0                 version
    2                 number of entries
    orders 0 1200     one entry per line, fields separated by one space
    orders 1 877

A checkpoint is written to a temporary file, fsynced, renamed over the old one
and the directory fsynced, so a crash leaves either the old or the new file
whole, never a mix (Kafka's CheckpointFile does the same).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from replog.storage.files import TEMP_SUFFIX, fsync_directory

VERSION = 0


class CorruptCheckpointError(Exception):
    """A checkpoint file exists but cannot be read; the message names the file and the line."""


def write_checkpoint(path: Path, lines: Sequence[str]) -> None:
    text = "".join(f"{line}\n" for line in (str(VERSION), str(len(lines)), *lines))
    temp = path.with_name(path.name + TEMP_SUFFIX)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        data = text.encode("utf-8")
        written = 0
        while written < len(data):
            written += os.write(fd, data[written:])
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temp, path)
    fsync_directory(path.parent)


def read_checkpoint(path: Path, entry_fields: int) -> list[list[str]]:
    """The entries of a checkpoint, each split into `entry_fields` fields; [] if there is no file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.splitlines()

    def corrupt(what: str) -> CorruptCheckpointError:
        return CorruptCheckpointError(f"checkpoint file {path} is corrupt: {what}")

    if len(lines) < 2:
        raise corrupt("it lacks the version and entry count lines")
    if lines[0].strip() != str(VERSION):
        raise corrupt(f"version {lines[0]!r} is not {VERSION}")
    if not lines[1].strip().isdigit():
        raise corrupt(f"entry count {lines[1]!r} is not a number")
    count = int(lines[1])
    entries = [line.split() for line in lines[2:] if line.strip()]
    if len(entries) != count:
        raise corrupt(f"it declares {count} entries but holds {len(entries)}")
    for number, fields in enumerate(entries, start=3):
        if len(fields) != entry_fields or not all(_is_int(f) for f in fields[entry_fields - 2 :]):
            raise corrupt(f"line {number} {' '.join(fields)!r} is not {entry_fields} fields ending in numbers")
    return entries


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


class OffsetCheckpointFile:
    """`topic partition offset` entries: replication-offset-checkpoint (HW),
    recovery-point-offset-checkpoint and log-start-offset-checkpoint."""

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def write(self, offsets: Mapping[tuple[str, int], int]) -> None:
        lines = [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())]
        for topic, _partition in offsets:
            if not topic or any(c.isspace() for c in topic):
                raise ValueError(f"topic name {topic!r} cannot be written to a checkpoint")
        write_checkpoint(self.path, lines)

    def read(self) -> dict[tuple[str, int], int]:
        return {(topic, int(partition)): int(offset) for topic, partition, offset in read_checkpoint(self.path, 3)}


class LeaderEpochCheckpointFile:
    """`epoch startOffset` entries of one partition's leader-epoch-checkpoint.

    Storage keeps the list as it is given; the rules over it (strictly
    increasing epochs and offsets, truncation) belong to replog.core.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def write(self, entries: Iterable[tuple[int, int]]) -> None:
        write_checkpoint(self.path, [f"{epoch} {start_offset}" for epoch, start_offset in entries])

    def read(self) -> list[tuple[int, int]]:
        return [(int(epoch), int(start)) for epoch, start in read_checkpoint(self.path, 2)]
