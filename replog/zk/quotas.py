"""Quotas in ZooKeeper, in Kafka's layout, and a cache the brokers keep by watching the changes.

    /config/users/alice                   {"version":1,"config":{"producer_byte_rate":"1048576"}}
    /config/clients/<default>             {"version":1,"config":{"consumer_byte_rate":"2097152"}}
    /config/clients/etl                   {"version":1,"config":{"request_rate":"200"}}
    /config/changes/config_change_0000003 {"version":2,"entity_path":"users/alice"}
"""

from __future__ import annotations

import json
import logging
import urllib.parse
from collections.abc import Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError, NoNodeError

from replog.core.quota import KINDS, Quotas, parse_quota_configs
from replog.zk import paths
from replog.zk.changes import ChangeWatcher, notify_change

log = logging.getLogger(__name__)

ENTITY_ROOTS = {"users": paths.CONFIG_USERS, "clients": paths.CONFIG_CLIENTS}


def entity_path(entity_type: str, name: str) -> str:
    if not name.strip():
        raise ValueError(f"the {'user name' if entity_type == 'users' else 'client id'} of a quota must not be empty")
    return f"{ENTITY_ROOTS[entity_type]}/{urllib.parse.quote(name, safe='<>')}"


def read_entity(client: KazooClient, entity_type: str, name: str) -> dict[str, str]:
    try:
        data, _ = client.get(entity_path(entity_type, name))
    except NoNodeError:
        return {}
    return dict(json.loads(data or b"{}").get("config", {}))


def write_entity(client: KazooClient, entity_type: str, name: str, configs: Mapping[str, str]) -> None:
    """Replace the entity's configs (none left: its znode goes) and notify the brokers."""
    path = entity_path(entity_type, name)
    data = json.dumps({"version": 1, "config": dict(configs)}).encode()
    try:
        if configs:
            if client.exists(path):
                client.set(path, data)
            else:
                client.create(path, data, makepath=True)
        elif client.exists(path):
            client.delete(path)
        notify_change(client, paths.CONFIG_CHANGES, paths.CONFIG_CHANGE_PREFIX,
                      json.dumps({"version": 2, "entity_path": f"{entity_type}/{name}"}).encode())
    except NoAuthError:
        raise ValueError(f"ZooKeeper refuses to let this identity write {path}: give the services' "
                         "zookeeper.auth.digest.file") from None


def read_quotas(client: KazooClient) -> Quotas:
    entities: dict[str, dict[str, dict[str, int]]] = {"users": {}, "clients": {}}
    for entity_type, root in ENTITY_ROOTS.items():
        try:
            names = client.get_children(root)
        except NoNodeError:
            continue
        for quoted in names:
            name = urllib.parse.unquote(quoted)
            try:  # a user's znode may hold more than its quotas (Kafka keeps SCRAM credentials there)
                configs = parse_quota_configs(
                    {k: v for k, v in read_entity(client, entity_type, name).items() if k in KINDS})
            except (ValueError, json.JSONDecodeError) as error:
                log.error("the quota of %s %s does not read (%s); it is ignored", entity_type, name, error)
                continue
            if configs:
                entities[entity_type][name] = configs
    return Quotas(entities["users"], entities["clients"])


def quota_watcher(client: KazooClient) -> ChangeWatcher[Quotas]:
    """The quotas in ZooKeeper, read again on every entity config change notification."""
    return ChangeWatcher(client, read_quotas, Quotas(), (paths.CONFIG_CHANGES,))
