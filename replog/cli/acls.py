"""`replog acls add|remove|list`: the cluster's ACLs, with kafka-acls' flags.

As kafka-acls did with `--authorizer-properties zookeeper.connect=...`, the command writes the
ACLs into ZooKeeper itself; every service sees the change within a second or so through the
change notifications. Without --authorizer-properties it uses the local cluster's ZooKeeper.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import logging
import socket
from typing import Any

from replog.config import ConfigError, zookeeper_hosts
from replog.core.acl import (
    CLUSTER_NAME,
    WILDCARD,
    Acl,
    AclBinding,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
    canonical_host,
    check_binding,
)
from replog.dev import cluster as local
from replog.zk import acls as store
from replog.zk.session import ZkAuth, new_client

CONNECT_TIMEOUT_S = 10.0
OPERATIONS = {op.value.lower(): op for op in Operation}


class AclsError(Exception):
    """A mistake in the command's flags; one sentence."""


def add_commands(commands: Any) -> None:
    parser = commands.add_parser("acls", help="add, remove and list ACLs (kafka-acls' flags)")
    sub = parser.add_subparsers(dest="acls_command", metavar="COMMAND", required=True)
    for name, help_text in (("add", "add ACLs: every principal x host x operation, on every resource named"),
                            ("remove", "remove ACLs (all of a resource's when no principal is given)"),
                            ("list", "list ACLs, of the resources named or all")):
        command = sub.add_parser(name, help=help_text)
        command.add_argument("--authorizer-properties", action="append", default=[], metavar="KEY=VALUE",
                             help="zookeeper.connect=HOST:PORT[/chroot] (default: the local cluster's ZooKeeper)")
        command.add_argument("--data-dir", default=None, help="the local cluster's directory")
        command.add_argument("--topic", action="append", default=[], help="a topic (repeatable; '*' for every topic)")
        command.add_argument("--group", action="append", default=[], help="a consumer group (repeatable)")
        command.add_argument("--transactional-id", action="append", default=[], help="a transactional id (repeatable)")
        command.add_argument("--cluster", action="store_true", help="the cluster itself")
        # any and match select ACLs; an ACL is added for a literal name or a prefix
        selectors = ["any", "match"] if name != "add" else []
        command.add_argument("--resource-pattern-type", choices=["literal", "prefixed", *selectors],
                             default="literal" if name == "add" else "any",
                             help="literal names, or prefixes of names (list and remove: also any or match)")
        if name == "list":
            command.add_argument("--principal", action="append", default=[], help="only this principal's ACLs")
        else:
            command.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL",
                                 help="User:name to allow (repeatable)")
            command.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL",
                                 help="User:name to deny (repeatable)")
            command.add_argument("--allow-host", action="append", default=[], help="host of allowed calls (default *)")
            command.add_argument("--deny-host", action="append", default=[], help="host of denied calls (default *)")
            command.add_argument("--operation", action="append", default=[],
                                 help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, "
                                 "AlterConfigs, IdempotentWrite or All (repeatable; default All)")
            command.add_argument("--force", action="store_true", help="accepted for kafka-acls' scripts; never asks")
        command.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    try:
        patterns = _patterns(args)
        acls = _checked_acls(args, patterns) if args.acls_command != "list" else []  # before ZooKeeper is asked
        client = connected(*_zookeeper(args))
        try:
            if args.acls_command == "list":
                _print(store.read_snapshot(client), patterns, set(args.principal))
            else:
                _change(client, args.acls_command, patterns, acls)
        finally:
            client.stop()
            client.close()
    except (ValueError, ConfigError) as error:
        raise AclsError(str(error)) from None
    return 0


def _zookeeper(args: argparse.Namespace) -> tuple[str, ZkAuth | None]:
    given = {}
    for pair in args.authorizer_properties:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise AclsError(f"--authorizer-properties takes KEY=VALUE, e.g. zookeeper.connect=HOST:PORT, not {pair!r}")
        given[key.strip()] = value.strip()
    return zookeeper_of(given, args.data_dir)


def zookeeper_of(given: dict[str, str], data_dir: str | None) -> tuple[str, ZkAuth | None]:
    """Where the cluster's state is and who may write it: the given zookeeper.connect,
    zookeeper.auth.digest.file and zookeeper.set.acl, else the local cluster's."""
    if "zookeeper.connect" not in given:
        cluster = local.Cluster.load(data_dir or local.find_data_dir())
        given = {**cluster.state["config"], **given, "zookeeper.connect": cluster.zookeeper_address}
    settings = {"zookeeper.auth.digest.file": given.get("zookeeper.auth.digest.file", ""),
                "zookeeper.set.acl": given.get("zookeeper.set.acl", "false").lower() == "true"}
    return given["zookeeper.connect"], ZkAuth.from_config(settings)


def connected(connect: str, auth: ZkAuth | None) -> Any:
    try:
        hosts = zookeeper_hosts(connect)
    except ValueError as error:
        raise AclsError(f"the ZooKeeper {connect!r} is not host:port[,host:port...][/chroot] ({error})") from None
    refusals = [_refused(address.host, address.port) for address in hosts]
    if all(refusals):
        raise AclsError(f"cannot reach ZooKeeper at {connect}: {'; '.join(dict.fromkeys(refusals))}; is the "
                        "cluster running? (`replog dev status` shows a local one)")
    # kazoo logs each failed attempt; a command that cannot connect says so in one sentence instead.
    logging.getLogger("kazoo").setLevel(logging.CRITICAL)
    client = new_client(connect, CONNECT_TIMEOUT_S, auth)
    try:
        client.start(CONNECT_TIMEOUT_S)
    except Exception as error:  # kazoo raises its own timeout type
        raise AclsError(f"cannot reach ZooKeeper at {connect} ({error or type(error).__name__})") from None
    return client


def _refused(host: str, port: int) -> str | None:
    """Why nothing can listen at the address (its connection refused at once, or its name unknown), or None:
    a slow address, or a name whose lookup may work on a retry, is left to kazoo's timeout."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return None
    except ConnectionRefusedError:
        return "nothing accepts connections there"
    except socket.gaierror as error:
        return None if error.errno == socket.EAI_AGAIN else f"{host} does not resolve"
    except OSError:
        return None


def _patterns(args: argparse.Namespace) -> list[ResourcePattern]:
    kinds = [PatternType(args.resource_pattern_type)] if args.resource_pattern_type in ("literal", "prefixed") \
        else list(PatternType)
    if args.resource_pattern_type == "prefixed" and args.acls_command != "list" and (
            args.cluster or WILDCARD in (*args.topic, *args.group, *args.transactional_id)):
        raise AclsError(f"a prefixed pattern cannot be '{WILDCARD}' or the cluster: '{WILDCARD}' already names every "
                        "resource of its type; use --resource-pattern-type literal")
    named = [(ResourceType.TOPIC, args.topic), (ResourceType.GROUP, args.group),
             (ResourceType.TRANSACTIONAL_ID, args.transactional_id),
             (ResourceType.CLUSTER, [CLUSTER_NAME] if args.cluster else [])]
    patterns = [ResourcePattern(rtype, name, kind) for rtype, names in named for name in names for kind in kinds
                if not (kind is PatternType.PREFIXED and (rtype is ResourceType.CLUSTER or name == WILDCARD))]
    if not patterns and args.acls_command != "list":
        raise AclsError("name a resource: --topic, --group, --transactional-id or --cluster")
    return patterns


def _acls(args: argparse.Namespace) -> list[Acl]:
    operations = [_operation(text) for text in args.operation] or [Operation.ALL]
    acls = []
    for principals, hosts, permission in ((args.allow_principal, args.allow_host, Permission.ALLOW),
                                          (args.deny_principal, args.deny_host, Permission.DENY)):
        for principal, host, operation in itertools.product(principals, hosts or [WILDCARD], operations):
            acls.append(Acl(principal, host, operation, permission))
    return acls


def _operation(text: str) -> Operation:
    operation = OPERATIONS.get(text.replace("-", "").replace("_", "").lower())
    if operation is None:
        raise AclsError(f"{text!r} is not an operation; use one of " + ", ".join(op.value for op in Operation))
    return operation


def _checked_acls(args: argparse.Namespace, patterns: list[ResourcePattern]) -> list[Acl]:
    acls = _acls(args)
    if args.acls_command == "add":
        if not acls:
            raise AclsError("name who: --allow-principal or --deny-principal")
        # An ACL is stored with its host as requests give theirs; `remove` takes hosts as they were stored.
        acls = [dataclasses.replace(acl, host=canonical_host(acl.host)) for acl in acls]
        for pattern in patterns:
            for acl in acls:
                check_binding(AclBinding(pattern, acl))
    return acls


def _change(client: Any, command: str, patterns: list[ResourcePattern], acls: list[Acl]) -> None:
    if command == "add":
        for pattern in patterns:
            _, after = store.change(client, pattern, lambda before, new=frozenset(acls): before | new)
            _print_pattern("Current ACLs for", pattern, after)
        return
    for pattern in patterns:
        remove = (lambda before: frozenset()) if not acls else \
            (lambda before, gone=frozenset(acls): before - gone)
        before, after = store.change(client, pattern, remove)
        if before != after:
            _print_pattern("Removed from", pattern, before - after)


def _print(snapshot: Any, patterns: list[ResourcePattern], principals: set[str]) -> None:
    for pattern, entries in sorted(snapshot.acls.items(), key=lambda item: str(item[0])):
        if patterns and pattern not in patterns:
            continue
        shown = {acl for acl in entries if not principals or acl.principal in principals}
        if shown:
            _print_pattern("Current ACLs for", pattern, shown)


def _print_pattern(title: str, pattern: ResourcePattern, acls: Any) -> None:
    print(f"{title} resource `{pattern}`:")
    for acl in sorted(acls, key=str):
        print(f"\t{acl}")
    print()
