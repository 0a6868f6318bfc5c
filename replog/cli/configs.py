"""`replog configs describe|alter`, as kafka-configs: topic configs, and brokers' static settings."""

from __future__ import annotations

import argparse
from typing import Any

from replog.cli import acls
from replog.cli.bootstrap import add_cluster_arguments, command_admin
from replog.client import AdminError
from replog.config import ConfigError
from replog.core.errors import ErrorCode
from replog.core.quota import parse_quota_configs
from replog.zk import quotas as zk_quotas

ENTITY_TYPES = {"topics": "topic", "brokers": "broker", "users": "user", "clients": "client"}
# Quotas are written to ZooKeeper itself, as kafka-configs --zookeeper did.
QUOTA_ENTITY_TYPES = ("users", "clients")


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("configs", help="describe and change topic configs, and users' and clients' quotas",
                                 description="Describe and change configs (as kafka-configs does).")
    sub = parser.add_subparsers(dest="configs_command", metavar="ACTION", required=True)

    describe = sub.add_parser("describe", help="show a topic's configs, a broker's, or a user's or client's quotas")
    _entity_arguments(describe)
    describe.add_argument("--all", action="store_true",
                          help="every config with its effective value, not only the ones set for the topic")
    add_cluster_arguments(describe)
    describe.set_defaults(handler=_describe)

    alter = sub.add_parser("alter", help="set or delete a topic's configs, or a user's or client's quotas")
    _entity_arguments(alter)
    alter.add_argument("--add-config", action="append", default=[], metavar="K=V[,K=V]",
                       help="configs to set, e.g. retention.ms=60000,cleanup.policy=[compact,delete] (repeatable)")
    alter.add_argument("--delete-config", action="append", default=[], metavar="K[,K]",
                       help="configs to remove, so that their defaults apply again (repeatable)")
    add_cluster_arguments(alter)
    alter.set_defaults(handler=_alter)


def _entity_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--entity-type", choices=sorted(ENTITY_TYPES), required=True)
    parser.add_argument("--entity-name", required=True,
                        help="the topic name, the broker id, the user (principal name without User:) or the client "
                        "id; <default> for every user or client id without a quota of its own")
    parser.add_argument("--zookeeper", metavar="HOST:PORT[/chroot]", default=None,
                        help="users and clients: the ZooKeeper whose quotas to change (default: the local cluster's)")


def parse_add_config(text: str) -> dict[str, str]:
    """Kafka's --add-config: k=v pairs separated by commas; a list value goes in brackets (k=[a,b])."""
    configs: dict[str, str] = {}
    rest = text.strip()
    while rest:
        key, sep, rest = rest.partition("=")
        if not sep or not key.strip():
            raise AdminError(f"--add-config takes KEY=VALUE pairs separated by commas, not {text!r}",
                             ErrorCode.INVALID_CONFIG)
        if rest.startswith("["):
            value, bracket, rest = rest[1:].partition("]")
            if not bracket:
                raise AdminError(f"--add-config: the list value of {key.strip()} has no closing ']' in {text!r}",
                                 ErrorCode.INVALID_CONFIG)
            rest = rest.removeprefix(",")
        else:
            value, _, rest = rest.partition(",")
        configs[key.strip()] = value.strip()
    return configs


def _check_entity_name(args: argparse.Namespace) -> None:
    if not args.entity_name.strip():
        raise AdminError("--entity-name must not be empty: name the topic, the broker id, the user or the client "
                         "id (<default> for every user or client id without a quota of its own)",
                         ErrorCode.INVALID_REQUEST)


def _describe(args: argparse.Namespace) -> int:
    _check_entity_name(args)
    if args.entity_type in QUOTA_ENTITY_TYPES:
        return _quota_entity(args, lambda client: None)
    resource_type = ENTITY_TYPES[args.entity_type]
    with command_admin(args) as admin:
        entries = admin.describe_config_entries(resource_type, args.entity_name)
    if resource_type == "broker":
        print(f"Static configs for broker {args.entity_name} are:")
    elif args.all:
        print(f"All configs for topic {args.entity_name} are:")
    else:
        print(f"Dynamic configs for topic {args.entity_name} are:")
        entries = [e for e in entries if e.source == "DYNAMIC_TOPIC_CONFIG"]
    for entry in entries:
        value = "" if entry.value is None else entry.value
        read_only = " read-only" if entry.read_only else ""
        print(f"  {entry.name}={value} source={entry.source}{read_only}")
    return 0


def _alter(args: argparse.Namespace) -> int:
    _check_entity_name(args)
    resource_type = ENTITY_TYPES[args.entity_type]
    set_configs: dict[str, str] = {}
    for text in args.add_config:
        set_configs.update(parse_add_config(text))
    deleted = [name.strip() for text in args.delete_config for name in text.split(",") if name.strip()]
    if not set_configs and not deleted:
        raise AdminError("give --add-config K=V or --delete-config K", ErrorCode.INVALID_REQUEST)
    if args.entity_type in QUOTA_ENTITY_TYPES:
        try:
            parse_quota_configs(set_configs)
        except ValueError as error:
            raise AdminError(f"--add-config: {error}", ErrorCode.INVALID_CONFIG) from None

        def change(client: Any) -> None:
            configs = {**zk_quotas.read_entity(client, args.entity_type, args.entity_name), **set_configs}
            for name in deleted:
                configs.pop(name, None)
            zk_quotas.write_entity(client, args.entity_type, args.entity_name, configs)

        return _quota_entity(args, change)
    with command_admin(args) as admin:
        admin.alter_configs(resource_type, args.entity_name, set_configs=set_configs, delete_configs=deleted)
    print(f"Completed updating config for {resource_type} {args.entity_name}.")
    return 0


def _quota_entity(args: argparse.Namespace, change: Any) -> int:
    """Apply `change` to a user's or client id's quotas in ZooKeeper, then print them."""
    given = {"zookeeper.connect": args.zookeeper} if args.zookeeper else {}
    try:
        client = acls.connected(*acls.zookeeper_of(given, args.data_dir))
    except ConfigError as error:
        raise AdminError(str(error), ErrorCode.INVALID_CONFIG) from None
    try:
        try:
            change(client)
        except ValueError as error:
            raise AdminError(str(error), ErrorCode.CLUSTER_AUTHORIZATION_FAILED) from None
        configs = zk_quotas.read_entity(client, args.entity_type, args.entity_name)
    finally:
        client.stop()
        client.close()
    kind = ENTITY_TYPES[args.entity_type]
    print(f"Quota configs for {kind} {args.entity_name} are:")
    for name, value in sorted(configs.items()):
        print(f"  {name}={value}")
    return 0
