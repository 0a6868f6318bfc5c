"""Checkpoint files: Kafka's text format, replaced atomically."""

import os

import pytest

from replog.storage import CorruptCheckpointError, LeaderEpochCheckpointFile, OffsetCheckpointFile


def test_offset_checkpoint_round_trip_in_kafkas_format(tmp_path):
    checkpoint = OffsetCheckpointFile(tmp_path / "replication-offset-checkpoint")
    offsets = {("orders", 0): 1200, ("orders", 1): 877, ("audit-log", 12): 0}

    checkpoint.write(offsets)

    assert checkpoint.read() == offsets
    assert checkpoint.path.read_text() == "0\n3\naudit-log 12 0\norders 0 1200\norders 1 877\n"


def test_leader_epoch_checkpoint_round_trip_in_kafkas_format(tmp_path):
    checkpoint = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")

    checkpoint.write([(0, 0), (3, 150), (7, 9001)])

    assert checkpoint.read() == [(0, 0), (3, 150), (7, 9001)]
    assert checkpoint.path.read_text() == "0\n3\n0 0\n3 150\n7 9001\n"


def test_a_missing_checkpoint_reads_as_empty(tmp_path):
    assert OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint").read() == {}
    assert LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint").read() == []


def test_an_empty_checkpoint_round_trips(tmp_path):
    checkpoint = LeaderEpochCheckpointFile(tmp_path / "leader-epoch-checkpoint")
    checkpoint.write([])
    assert checkpoint.read() == [] and checkpoint.path.read_text() == "0\n0\n"


def test_a_crash_while_writing_leaves_the_old_checkpoint_whole(tmp_path, monkeypatch):
    checkpoint = OffsetCheckpointFile(tmp_path / "replication-offset-checkpoint")
    checkpoint.write({("orders", 0): 10})

    def crash_before_rename(source, target):
        raise OSError("killed before the rename")

    monkeypatch.setattr(os, "replace", crash_before_rename)
    with pytest.raises(OSError):
        checkpoint.write({("orders", 0): 20})
    monkeypatch.undo()

    assert checkpoint.read() == {("orders", 0): 10}
    # The next write replaces the half-done temporary file.
    checkpoint.write({("orders", 0): 30})
    assert checkpoint.read() == {("orders", 0): 30}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1\n0\n",
        "0\nx\n",
        "0\n2\norders 0 5\n",
        "0\n1\norders 0\n",
        "0\n1\norders zero 5\n",
    ],
)
def test_a_damaged_checkpoint_is_reported_with_the_file_name(tmp_path, text):
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CorruptCheckpointError, match="replication-offset-checkpoint"):
        OffsetCheckpointFile(path).read()


def test_topic_names_with_spaces_cannot_be_checkpointed(tmp_path):
    with pytest.raises(ValueError):
        OffsetCheckpointFile(tmp_path / "x").write({("bad name", 0): 1})
