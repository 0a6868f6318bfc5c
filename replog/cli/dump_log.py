"""`replog dump-log`, as kafka-dump-log.sh: a partition's files on disk, entry by entry, and what in them is
not sound. It reads files only (no cluster is asked), so it serves on a broker's disk, stopped or running."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from replog.storage.dump import SUFFIXES, DumpError, check_file, dump
from replog.storage.files import parse_segment_name

RECORD_KINDS = ("record", "marker")
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


def add_commands(commands: Any) -> None:
    parser = commands.add_parser(
        "dump-log", help="print a partition's segments, indexes and snapshots from disk, and check them",
        description="Read a partition's files as they lie on disk (as kafka-dump-log.sh does): a segment's "
        "batches (.log), its offset and time indexes (.index, .timeindex), its aborted transactions (.txnindex) "
        "and producer snapshots (.snapshot). A directory stands for every such file in it. What is not sound is "
        "printed as a PROBLEM where it is found, and the exit status is then 1. Nothing is written.")
    parser.add_argument("paths", nargs="*", metavar="FILE", type=Path,
                        help="files of a partition directory, or partition directories")
    parser.add_argument("--files", metavar="FILE[,FILE...]", default="",
                        help="the same, comma-separated, as kafka-dump-log takes them")
    parser.add_argument("--deep-iteration", action="store_true",
                        help="also each record of a batch: offset, timestamp, sequence, sizes and header keys")
    parser.add_argument("--print-data-log", action="store_true",
                        help="also each record's key, value and headers (implies --deep-iteration); bytes that "
                        "are not UTF-8 are printed as \\x escapes")
    decoders = parser.add_mutually_exclusive_group()
    decoders.add_argument("--offsets-decoder", action="store_const", dest="decoder", const="offsets",
                          help="read each record as __consumer_offsets holds it: a committed offset or a change of "
                          "a group (implies --deep-iteration)")
    decoders.add_argument("--transaction-log-decoder", action="store_const", dest="decoder", const="transaction-log",
                          help="read each record as __transaction_state holds it: a transactional id's state "
                          "(implies --deep-iteration)")
    parser.add_argument("--index-sanity-check", action="store_true",
                        help="check every .index and .timeindex entry against the .log beside it")
    parser.add_argument("--json", action="store_true",
                        help='print one JSON object a line: {"file", "kind", ...}, kind one of batch, record, '
                        'marker, index, timeindex, aborted, producer, problem')
    parser.set_defaults(handler=_dump)


def _dump(args: argparse.Namespace) -> int:
    files = _files([*args.paths, *(Path(name) for name in args.files.split(",") if name)])
    problems = 0
    for path in files:
        if not args.json:
            print(f"Dumping {path}")
        for entry in _entries(path, args):
            problems += entry["kind"] == "problem"
            print(json.dumps({"file": str(path), **entry}) if args.json else _line(entry))
    if problems:
        print(f"replog: {problems} {'problem' if problems == 1 else 'problems'} found", file=sys.stderr)
        return 1
    return 0


def _entries(path: Path, args: argparse.Namespace) -> Iterator[dict]:
    """The file's entries; a file that went or cannot be read (one of a directory's, on a running broker) is a
    problem of its own, and the others are read."""
    try:
        yield from dump(path, records=args.deep_iteration, payloads=args.print_data_log, decoder=args.decoder,
                        check_index=args.index_sanity_check)
    except DumpError as error:
        yield {"kind": "problem", "at": path.name, "problem": str(error)}


def _files(paths: list[Path]) -> list[Path]:
    """The files to read: each one named, and a directory's log files in offset order, .log first."""
    if not paths:
        raise DumpError("name the files to read, e.g. replog dump-log DATA_DIR/orders-0/00000000000000000000.log")
    files = []
    for path in paths:
        if not path.is_dir():
            check_file(path)
            files.append(path)
            continue
        try:
            found = [(parsed, entry) for entry in path.iterdir()
                     if (parsed := parse_segment_name(entry.name)) is not None and parsed[1] in SUFFIXES
                     and entry.is_file()]
        except OSError as error:
            raise DumpError(f"cannot list {path}: {error.strerror}") from None
        if not found:
            raise DumpError(f"{path} holds no partition files ({', '.join(SUFFIXES)})")
        files += [entry for _, entry in sorted(found, key=lambda item: (item[0][0], SUFFIXES.index(item[0][1])))]
    return files


def _line(entry: dict) -> str:
    kind = entry["kind"]
    if kind == "problem":
        return f"PROBLEM at {entry['at']}: {entry['problem']}"
    fields = " ".join(f"{name}: {_value(value)}" for name, value in entry.items() if name != "kind")
    return f"| {fields}" if kind in RECORD_KINDS else f"{kind} {fields}"


def _value(value: Any) -> str:
    """A field as text on one line: JSON's spelling for null, booleans, lists and objects, and a string's
    control characters escaped, so that no value can start a line of its own."""
    if value is None or isinstance(value, bool | list | dict):
        return json.dumps(value)
    if isinstance(value, str):
        return CONTROL_CHARACTERS.sub(lambda found: json.dumps(found.group())[1:-1], value)
    return str(value)
