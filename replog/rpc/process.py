"""The entry point shared by `python -m replog.broker|controller|metadata`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from replog import config as configuration
from replog.rpc import allocator, channels, event_loop, logs, server
from replog.security.tls import service_client_security
from replog.zk import session
from replog.zk.store import StoreError


def main(
    name: str,
    settings: Sequence[configuration.Setting],
    build: Callable[[configuration.Config], server.Service],
    listener_setting: str,
    argv: Sequence[str] | None = None,
) -> int:
    kept = allocator.keep_freed_memory()  # before the first message's memory is asked for
    parser = argparse.ArgumentParser(
        prog=f"python -m replog.{name}",
        description=f"Run a replog {name}. Settings use Kafka's names; later sources win: "
        f"defaults, the properties file, REPLOG_* environment variables, --override.",
    )
    parser.add_argument("properties", nargs="?", help="a Java-style properties file")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="set one setting (repeatable)")
    parser.add_argument("--list-settings", action="store_true",
                        help="print every setting with its default and meaning, then exit")
    parser.add_argument("--log-format", choices=logs.FORMATS, default=None,
                        help=f"text (the default) or json: one JSON object a line with stable fields "
                        f"(docs/OPERATIONS.md); default ${logs.FORMAT_ENV}, else text")
    args = parser.parse_args(argv)
    if args.list_settings:
        for setting in settings:
            print(f"{setting.name} (default {setting.default!r}): {setting.doc}")
        return 0
    try:
        config = configuration.load(
            name,
            settings,
            file_path=args.properties,
            env=os.environ,
            overrides=configuration.parse_overrides(args.override),
        )
        channels.set_default(service_client_security(config))
        if "zookeeper.connect" in config:
            session.set_default_auth(session.ZkAuth.from_config(config))
        service = build(config)
    except configuration.ConfigError as error:
        print(f"replog {name}: {error}", file=sys.stderr)
        return 2
    log_format = args.log_format or logs.default_format()
    if log_format not in logs.FORMATS:
        print(f"replog {name}: {logs.FORMAT_ENV}={log_format} is not a log format; use text or json", file=sys.stderr)
        return 2
    logs.configure(name, log_format, {f"{name}_id": config[f"{name}.id"]} if f"{name}.id" in config else {})
    allocator.log.info("%s", allocator.describe(kept))
    try:
        event_loop.run(server.serve(name, service, config[listener_setting], config))
    except (StoreError, configuration.ConfigError, event_loop.EventLoopError) as error:
        # Problems found while starting (ZooKeeper unreachable, a log dir of another
        # cluster) are the operator's to fix: one sentence, no traceback.
        print(f"replog {name}: {error}", file=sys.stderr)
        return 1
    return 0
