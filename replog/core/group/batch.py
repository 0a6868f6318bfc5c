"""One operation's output: the records it made (each applied as it was made), and its events."""

from typing import Any, Protocol

from . import records as rec
from .requests import Event, Result


class Replayer(Protocol):
    def replay(self, record: rec.GroupRecord) -> None: ...


class Batch:
    """Records made by one operation, each applied as it is made; and the events to report."""

    def __init__(self, shard: "Replayer") -> None:
        self._shard = shard
        self.records: list[rec.GroupRecord] = []
        self.events: list[Event] = []

    def write(self, record: rec.GroupRecord) -> None:
        self._shard.replay(record)
        self.records.append(record)

    def result(self, response: Any) -> Result[Any]:
        return Result(response, tuple(self.records), tuple(self.events))
