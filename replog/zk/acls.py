"""ACLs in ZooKeeper, in Kafka's layout and JSON, and a cache every service keeps by watching
the change notifications.

    /kafka-acl/Topic/orders                      {"version":1,"acls":[{"principal":"User:alice",
    /kafka-acl-extended/prefixed/Topic/orders-     "permissionType":"Allow","operation":"Write","host":"*"}]}
    /kafka-acl-changes/acl_changes_0000000007    "Topic:orders"

A name holding "/" or "%" (group ids may) is stored percent-encoded: a znode name cannot hold "/".
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Callable, Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoAuthError, NodeExistsError, NoNodeError, NotEmptyError

from replog.core.acl import Acl, AclSnapshot, Operation, PatternType, Permission, ResourcePattern, ResourceType
from replog.zk import paths
from replog.zk.changes import ChangeWatcher, notify_change

log = logging.getLogger(__name__)

# Notifications kept under each changes path: enough for any watcher to see that something
# changed (each reloads everything), few enough that the list stays small.
WRITE_ATTEMPTS_MAX = 20


def pattern_path(pattern: ResourcePattern) -> str:
    name = urllib.parse.quote(pattern.name, safe="")
    if pattern.pattern_type is PatternType.LITERAL:
        return f"{paths.ACLS}/{pattern.resource_type.value}/{name}"
    return f"{paths.ACLS_EXTENDED}/{pattern.pattern_type.value}/{pattern.resource_type.value}/{name}"


def encode(acls: Iterable[Acl]) -> bytes:
    entries = [{"principal": a.principal, "permissionType": a.permission.value, "operation": a.operation.value,
                "host": a.host} for a in sorted(acls, key=str)]
    return json.dumps({"version": 1, "acls": entries}).encode()


def decode(data: bytes) -> frozenset[Acl]:
    document = json.loads(data or b'{"acls": []}')
    return frozenset(Acl(entry["principal"], entry["host"], Operation(entry["operation"]),
                         Permission(entry["permissionType"])) for entry in document.get("acls", []))


def read_snapshot(client: KazooClient) -> AclSnapshot:
    """Every ACL in ZooKeeper now."""
    acls: dict[ResourcePattern, frozenset[Acl]] = {}
    roots = [(paths.ACLS, PatternType.LITERAL)] + [
        (f"{paths.ACLS_EXTENDED}/{kind.value}", kind) for kind in PatternType if kind is not PatternType.LITERAL]
    for root, pattern_type in roots:
        for resource_type in ResourceType:
            folder = f"{root}/{resource_type.value}"
            try:
                names = client.get_children(folder)
            except NoNodeError:
                continue
            for quoted in names:
                try:
                    data, _ = client.get(f"{folder}/{quoted}")
                    entries = decode(data)
                except NoNodeError:
                    continue
                except (ValueError, KeyError) as error:
                    log.error("the ACLs in %s/%s do not read (%s); they are ignored", folder, quoted, error)
                    continue
                acls[ResourcePattern(resource_type, urllib.parse.unquote(quoted), pattern_type)] = entries
    return AclSnapshot(acls)


def change(client: KazooClient, pattern: ResourcePattern, update: Callable[[frozenset[Acl]], frozenset[Acl]]) -> \
        tuple[frozenset[Acl], frozenset[Acl]]:
    """Apply `update` to the pattern's ACLs with a version-conditional write (another writer at
    the same time makes it read and try again), then notify the watchers. Returns (before, after)."""
    path = pattern_path(pattern)
    for _ in range(WRITE_ATTEMPTS_MAX):
        try:
            data, stat = client.get(path)
            before, version = decode(data), stat.version
        except NoNodeError:
            before, version = frozenset(), -1
        after = update(before)
        if after == before:
            return before, after
        try:
            if version < 0:
                client.create(path, encode(after), makepath=True)
            elif after:
                client.set(path, encode(after), version=version)
            else:
                client.delete(path, version=version)
        except (BadVersionError, NodeExistsError, NoNodeError, NotEmptyError):
            continue
        except NoAuthError:
            raise ValueError(f"ZooKeeper refuses to let this identity write {path}: give the services' "
                             "zookeeper.auth.digest.file in --authorizer-properties") from None
        _notify(client, pattern)
        return before, after
    raise RuntimeError(f"the ACLs of {pattern} kept changing under {WRITE_ATTEMPTS_MAX} attempts to write them")


def _notify(client: KazooClient, pattern: ResourcePattern) -> None:
    if pattern.pattern_type is PatternType.LITERAL:
        folder, data = paths.ACL_CHANGES, f"{pattern.resource_type.value}:{pattern.name}".encode()
    else:
        folder = paths.ACL_EXTENDED_CHANGES
        data = json.dumps({"version": 1, "resourceType": pattern.resource_type.value, "name": pattern.name,
                           "patternType": pattern.pattern_type.value.upper()}).encode()
    notify_change(client, folder, paths.ACL_CHANGE_PREFIX, data)


def acl_watcher(client: KazooClient, on_change: Callable[[AclSnapshot], None] | None = None
                ) -> ChangeWatcher[AclSnapshot]:
    """The ACLs in ZooKeeper, read again on every ACL change notification."""
    return ChangeWatcher(client, read_snapshot, AclSnapshot(), (paths.ACL_CHANGES, paths.ACL_EXTENDED_CHANGES),
                         on_change)
