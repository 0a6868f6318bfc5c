"""The `replog` command (DESIGN §9)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from replog.cli import (
    acls,
    bench,
    configs,
    consume,
    delete_records,
    dev,
    dump_log,
    get_offsets,
    groups,
    k8s,
    leader_election,
    log_dirs,
    produce,
    reassign,
    tokens,
    topics,
    transactions,
)
from replog.cli.bootstrap import user_message
from replog.client.errors import ClientError
from replog.rpc import allocator
from replog.storage.dump import DumpError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="replog",
        description="replog: Kafka's replication design as gRPC services on ZooKeeper.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    dev.add_commands(commands)
    topics.add_commands(commands)
    leader_election.add_commands(commands)
    reassign.add_commands(commands)
    configs.add_commands(commands)
    delete_records.add_commands(commands)
    get_offsets.add_commands(commands)
    log_dirs.add_commands(commands)
    dump_log.add_commands(commands)
    produce.add_commands(commands)
    consume.add_commands(commands)
    groups.add_commands(commands)
    transactions.add_commands(commands)
    bench.add_commands(commands)
    k8s.add_commands(commands)
    acls.add_commands(commands)
    tokens.add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    allocator.keep_freed_memory()  # a client's messages are megabytes too (replog/rpc/allocator.py)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except (*dev.USER_ERRORS, acls.AclsError, tokens.TokensError, DumpError) as error:
        print(f"replog: {error}", file=sys.stderr)
        return 1
    except ClientError as error:
        print(f"replog: {user_message(error)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`replog consume t | head`): stop quietly, as other tools do.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
