"""How every replog process logs: text for people, or one JSON object a line for Loki and the like.

The JSON lines have stable fields: `time` (UTC, ISO 8601 with milliseconds), `level`,
`service`, `broker_id` or `controller_id` where the process has one, `logger`, `event`,
`message`, and `topic`, `partition` and `group` when the line is about one. `event` is the
short name a log call gives (`isr_changed`, `member_joined`, …) or else the message's
template, so that equal events group together whatever values they carry.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

FORMATS = ("text", "json")
FORMAT_ENV = "REPLOG_LOG_FORMAT"
# The fields a log call may add with fields(); each goes into the JSON line under its own name.
CONTEXT_FIELDS = ("topic", "partition", "group", "transactional_id", "producer_id", "producer_epoch")


def fields(event: str, **context: Any) -> dict[str, Any]:
    """The `extra` of a log call: a stable event name and what it is about (topic, partition, group, transaction)."""
    unknown = context.keys() - set(CONTEXT_FIELDS)
    if unknown:
        raise ValueError(f"log fields {sorted(unknown)} are not among {CONTEXT_FIELDS}")
    return {"event": event, **context}


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str, process_fields: Mapping[str, Any]) -> None:
        super().__init__()
        self._static = {"service": service, **process_fields}

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _iso_time(record.created),
            "level": record.levelname,
            **self._static,
            "logger": record.name,
            "event": getattr(record, "event", None) or str(record.msg),
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                line[name] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def _iso_time(created: float) -> str:
    moment = datetime.datetime.fromtimestamp(created, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def default_format() -> str:
    """The format when none is given: $REPLOG_LOG_FORMAT, else text."""
    return os.environ.get(FORMAT_ENV, "text")


def configure(service: str, log_format: str, process_fields: Mapping[str, Any]) -> None:
    """Log INFO and above to stderr in the chosen format; kazoo's chatter only from WARNING."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter(service, process_fields))
    else:
        handler.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s {service} %(name)s: %(message)s"))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    logging.getLogger("kazoo.client").setLevel(logging.WARNING)
