"""The exactly-once sink's naming and marker rules, without Spark or a cluster."""

import pytest

pytest.importorskip("pyspark")

from replog.client import OffsetAndMetadata  # noqa: E402
from replog.spark.exactly_once import TaskWrite, already_written, marker, transactional_id  # noqa: E402


def test_every_attempt_of_a_task_shares_one_transactional_id_and_other_tasks_do_not():
    first, retry = TaskWrite("q1", 3, 7), TaskWrite("q1", 3, 8)
    assert first.transactional_id == retry.transactional_id == transactional_id("q1", 3) == "spark-q1-3"
    assert len({TaskWrite("q1", 3, 7).transactional_id, TaskWrite("q1", 4, 7).transactional_id,
                TaskWrite("q2", 3, 7).transactional_id}) == 3


def test_the_marker_of_a_micro_batch_says_it_and_every_earlier_one_were_written():
    assert marker(7).offset == 8
    assert already_written(marker(7), 7)
    assert already_written(marker(7), 6)
    assert not already_written(marker(7), 8)
    assert not already_written(None, 0)
    assert not already_written(OffsetAndMetadata(0), 0)
