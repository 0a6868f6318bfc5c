"""How `replog produce` reads a line into a record: kafka-console-producer's reader properties, by their names.

    parse.key  parse.headers   (true/false)
    key.separator  headers.delimiter  headers.separator  headers.key.separator  null.marker

A line is `[headers<headers.delimiter>][key<key.separator>]value`, the headers `k1:v1,k2:v2`; a key, a
value or a header's value equal to null.marker is null. `\\t`, `\\n` and `\\r` in a separator stand for
those characters, as in `replog consume --property`.
"""

from __future__ import annotations

import dataclasses

from replog.cli.properties import parse_properties
from replog.client import ClientError

Headers = tuple[tuple[str, bytes | None], ...]

SWITCHES = ("parse.key", "parse.headers")
TEXTS = ("key.separator", "headers.delimiter", "headers.separator", "headers.key.separator", "null.marker")


@dataclasses.dataclass(frozen=True)
class LineFormat:
    key: bool = False
    headers: bool = False
    key_separator: bytes = b"\t"
    headers_delimiter: bytes = b"\t"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_marker: bytes | None = None

    def parse(self, line: bytes, number: int) -> tuple[bytes | None, bytes | None, Headers]:
        """(key, value, headers) of line `number`; ClientError for a line without a separator it needs."""
        headers: Headers = ()
        if self.headers:
            section, found, line = line.partition(self.headers_delimiter)
            if not found:
                raise ClientError(f"line {number} has no headers delimiter {self.headers_delimiter.decode()!r}")
            headers = tuple(self._header(pair, number) for pair in section.split(self.headers_separator) if pair)
        key = None
        if self.key:
            key, found, line = line.partition(self.key_separator)
            if not found:
                raise ClientError(f"line {number} has no key separator {self.key_separator.decode()!r}")
            key = self._nullable(key)
        return key, self._nullable(line), headers

    def _header(self, pair: bytes, number: int) -> tuple[str, bytes | None]:
        name, found, value = pair.partition(self.headers_key_separator)
        if not found:
            raise ClientError(f"line {number}: header {pair.decode(errors='replace')!r} has no key separator "
                              f"{self.headers_key_separator.decode()!r}")
        try:
            return name.decode(), self._nullable(value)
        except UnicodeDecodeError:
            raise ClientError(f"line {number}: a header's name is not UTF-8") from None

    def _nullable(self, data: bytes) -> bytes | None:
        return None if self.null_marker is not None and data == self.null_marker else data


def line_format(properties: list[str], key_separator: str | None = None) -> LineFormat:
    """The reading `--property KEY=VALUE`s (and `--key-separator SEP`, which is parse.key=true with that
    key.separator) ask for; ClientError naming a key replog does not know, a switch that is not true or
    false, or an empty separator."""
    if key_separator == "":
        raise ClientError("--key-separator must not be empty")
    changes: dict[str, object] = {}
    if key_separator is not None:
        changes.update(key=True, key_separator=key_separator.encode())
    given = parse_properties(properties, SWITCHES, TEXTS, "parse.")
    for name, value in given.items():
        if value == b"" and name != "null_marker":
            raise ClientError(f"--property {name.replace('_', '.')} must not be empty")
    return LineFormat(**{**changes, **given})
