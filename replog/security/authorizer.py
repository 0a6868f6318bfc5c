"""The ACL authorizer of a service: the cluster's ACLs, cached from ZooKeeper and kept fresh by
watching the change notifications, and decisions remembered until the ACLs change."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

import prometheus_client

from replog.core.acl import (
    AclSnapshot,
    AuthorizerRules,
    Decision,
    Operation,
    ResourceType,
    authorize,
    may_on_some,
    parse_super_users,
)
from replog.security.authenticate import Session
from replog.zk.acls import acl_watcher
from replog.zk.changes import ChangeWatcher
from replog.zk.session import new_client, start_watcher

log = logging.getLogger(__name__)

# Decisions remembered per (principal, host, operation, resource); forgotten when the ACLs change.
DECISIONS_CACHED_MAX = 100_000

DENIED = prometheus_client.Counter(
    "replog_authorization_denied_total",
    "Operations the authorizer refused, by operation and resource type.",
    ["operation", "resource_type"],
)
ACLS = prometheus_client.Gauge("replog_acls", "ACLs this service holds in its cache (every pattern's entries).")
ACL_RELOADS = prometheus_client.Counter(
    "replog_acl_reloads_total", "Times this service read the ACLs again after a change notification.")


class Authorizer:
    def __init__(self, rules: AuthorizerRules, watcher: ChangeWatcher[AclSnapshot] | None = None) -> None:
        self.rules = rules
        self._watcher = watcher
        self._snapshot = AclSnapshot()
        self._decisions: dict[tuple[str, str, Operation, ResourceType, str], Decision] = {}

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Authorizer | None:
        if not config["authorizer.class.name"]:
            return None
        rules = AuthorizerRules(parse_super_users(config["super.users"]), config["allow.everyone.if.no.acl.found"])
        authorizer = cls(rules)
        authorizer._watcher = acl_watcher(
            new_client(config["zookeeper.connect"], config["zookeeper.session.timeout.ms"] / 1000),
            on_change=authorizer._changed)
        return authorizer

    async def start(self, connection_timeout_s: float, connect: str) -> None:
        if self._watcher is not None:
            await start_watcher(self._watcher.start, connect, connection_timeout_s, "the ACLs")

    async def stop(self) -> None:
        if self._watcher is not None:
            await asyncio.to_thread(self._watcher.stop)

    def _changed(self, snapshot: AclSnapshot) -> None:
        # kazoo's thread: replacing the references is atomic; readers see the old or the new set whole.
        self._snapshot = snapshot
        self._decisions = {}
        ACL_RELOADS.inc()
        ACLS.set(sum(len(entries) for entries in snapshot.acls.values()))
        log.info("ACLs loaded: %d patterns", len(snapshot.acls))

    def use(self, snapshot: AclSnapshot) -> None:
        """Decide by these ACLs (tests, and the pure simulator of the rules)."""
        self._changed(snapshot)

    def decide(self, session: Session, operation: Operation, resource_type: ResourceType, name: str) -> Decision:
        key = (session.principal, session.host, operation, resource_type, name)
        decisions = self._decisions
        decision = decisions.get(key)
        if decision is None:
            decision = authorize(self._snapshot, self.rules, session.principal, session.host, operation,
                                 resource_type, name)
            if len(decisions) >= DECISIONS_CACHED_MAX:
                decisions.clear()
            decisions[key] = decision
        if not decision.allowed:
            DENIED.labels(operation.value, resource_type.value).inc()
            log.debug("denied %s %s on %s:%s from %s: %s", session.principal, operation.value,
                      resource_type.value, name, session.host, decision.reason)
        return decision

    def may_on_some(self, session: Session, operation: Operation, resource_type: ResourceType) -> bool:
        return may_on_some(self._snapshot, self.rules, session.principal, session.host, operation, resource_type)

    def judge(self, session: Session) -> SessionJudge:
        return SessionJudge(self, session)


@dataclasses.dataclass(frozen=True)
class SessionJudge:
    """The authorizer's questions for one caller (rpc_rules.Judge)."""

    authorizer: Authorizer
    session: Session

    @property
    def principal(self) -> str:
        return self.session.principal

    def may(self, operation: Operation, resource_type: ResourceType, name: str) -> Decision:
        return self.authorizer.decide(self.session, operation, resource_type, name)

    def may_on_some(self, operation: Operation, resource_type: ResourceType) -> bool:
        return self.authorizer.may_on_some(self.session, operation, resource_type)
