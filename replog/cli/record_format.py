"""How `replog consume` prints a record: kafka-console-consumer's formatter properties, by their names.

    print.timestamp  print.partition  print.offset  print.headers  print.key  print.value   (true/false)
    key.separator  line.separator  headers.separator  headers.key.separator  null.literal

The fields come in that order, each but the last followed by key.separator (a tab by default); a record
ends with line.separator. `\\t`, `\\n` and `\\r` in a separator stand for those characters, so that a
shell need not quote them.
"""

from __future__ import annotations

import dataclasses

from replog.cli.properties import parse_properties
from replog.client import ClientError, ConsumerRecord

SWITCHES = ("print.timestamp", "print.partition", "print.offset", "print.headers", "print.key", "print.value")
TEXTS = ("key.separator", "line.separator", "headers.separator", "headers.key.separator", "null.literal")


@dataclasses.dataclass(frozen=True)
class RecordFormat:
    timestamp: bool = False
    partition: bool = False
    offset: bool = False
    headers: bool = False
    key: bool = False
    value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_literal: bytes = b"null"
    labels: bool = True  # "Partition:3" rather than "3" (`--print-offsets` prints bare numbers)

    def render(self, record: ConsumerRecord) -> bytes:
        fields = []
        if self.timestamp:
            fields.append(b"%s:%d" % (str(record.timestamp_type).encode(), record.timestamp)
                          if record.timestamp >= 0 else b"NO_TIMESTAMP")
        if self.partition:
            fields.append(b"Partition:%d" % record.partition if self.labels else b"%d" % record.partition)
        if self.offset:
            fields.append(b"Offset:%d" % record.offset if self.labels else b"%d" % record.offset)
        if self.headers:
            fields.append(self.headers_separator.join(
                name.encode() + self.headers_key_separator + self._bytes(value) for name, value in record.headers)
                if record.headers else b"NO_HEADERS")
        if self.key:
            fields.append(self._bytes(record.key))
        if self.value:
            fields.append(self._bytes(record.value))
        return self.key_separator.join(fields) + self.line_separator

    def _bytes(self, data: bytes | None) -> bytes:
        return self.null_literal if data is None else data


PARTITION_OFFSET_VALUE = RecordFormat(partition=True, offset=True, labels=False)  # `--print-offsets`


def record_format(properties: list[str], print_offsets: bool = False) -> RecordFormat:
    """The format `--property KEY=VALUE`s ask for (or `--print-offsets`); ClientError naming a key replog does
    not know or a switch that is not true or false."""
    if print_offsets:
        if properties:
            raise ClientError("give --print-offsets or --property, not both (--property print.partition=true "
                              "--property print.offset=true labels them as kafka-console-consumer does)")
        return PARTITION_OFFSET_VALUE
    changes = parse_properties(properties, SWITCHES, TEXTS, "print.")
    chosen = RecordFormat(**changes)
    if not (chosen.timestamp or chosen.partition or chosen.offset or chosen.headers or chosen.key or chosen.value):
        raise ClientError("every print.* property is false: nothing of a record would be printed")
    return chosen
