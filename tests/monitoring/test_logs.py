"""The JSON log lines: one object a line with the stable fields, and what a log call adds."""

from __future__ import annotations

import json
import logging

import pytest

from replog.rpc import logs


def line(record: logging.LogRecord) -> dict:
    return json.loads(logs.JsonFormatter("broker", {"broker_id": 2}).format(record))


def record(message: str, *args: object, extra: dict | None = None, exc_info=None) -> logging.LogRecord:
    made = logging.getLogger("replog.broker").makeRecord("replog.broker", logging.INFO, __file__, 1, message, args,
                                                         exc_info, extra=extra)
    made.created = 1_700_000_000.25
    return made


def test_a_partition_event_carries_its_topic_partition_and_name():
    fields = line(record("%s ISR %s -> %s", "orders-0", [1, 2], [1],
                         extra=logs.fields("isr_changed", topic="orders", partition=0)))
    assert fields == {"time": "2023-11-14T22:13:20.250Z", "level": "INFO", "service": "broker", "broker_id": 2,
                      "logger": "replog.broker", "event": "isr_changed", "message": "orders-0 ISR [1, 2] -> [1]",
                      "topic": "orders", "partition": 0}


def test_a_line_without_an_event_name_is_named_by_its_template():
    fields = line(record("broker %d registered", 2))
    assert fields["event"] == "broker %d registered" and fields["message"] == "broker 2 registered"
    assert "topic" not in fields and "group" not in fields


def test_a_failure_carries_its_traceback():
    try:
        raise ValueError("bad")
    except ValueError as error:
        fields = line(record("failed", exc_info=(type(error), error, error.__traceback__)))
    assert "ValueError: bad" in fields["exception"]


def test_only_the_documented_context_fields_may_be_added():
    with pytest.raises(ValueError):
        logs.fields("isr_changed", offset=3)
