"""The `replog` command (DESIGN §9)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from replog.cli import dev


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="replog",
        description="replog: Kafka's replication design as gRPC services on ZooKeeper.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    dev.add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except dev.USER_ERRORS as error:
        print(f"replog: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
