"""Kafka's ACL model and the authorizer's decision, as pure code.

An ACL says: principal P is allowed (or denied) operation O from host H on the resources that
a pattern matches — a literal name (`*` for every name) or a prefix. A request is allowed when
some ACL allows it and none denies it (Deny wins); super users are allowed everything; a
resource that no ACL matches at all is open only if `allow.everyone.if.no.acl.found`.
"""

from __future__ import annotations

import dataclasses
import enum
import ipaddress
from collections.abc import Iterable, Mapping

WILDCARD = "*"
CLUSTER_NAME = "kafka-cluster"  # the one Cluster resource, by Kafka's name
ANONYMOUS = "User:ANONYMOUS"


class ResourceType(enum.Enum):
    TOPIC = "Topic"
    GROUP = "Group"
    CLUSTER = "Cluster"
    TRANSACTIONAL_ID = "TransactionalId"


class Operation(enum.Enum):
    ALL = "All"
    READ = "Read"
    WRITE = "Write"
    CREATE = "Create"
    DELETE = "Delete"
    ALTER = "Alter"
    DESCRIBE = "Describe"
    CLUSTER_ACTION = "ClusterAction"
    DESCRIBE_CONFIGS = "DescribeConfigs"
    ALTER_CONFIGS = "AlterConfigs"
    IDEMPOTENT_WRITE = "IdempotentWrite"


class PatternType(enum.Enum):
    LITERAL = "literal"
    PREFIXED = "prefixed"


class Permission(enum.Enum):
    ALLOW = "Allow"
    DENY = "Deny"


# An allowed operation that implies another (Kafka's AclOperation docs): whoever may read,
# write, delete or alter a resource may describe it; whoever may alter configs may describe them.
IMPLIED_BY = {
    Operation.DESCRIBE: frozenset({Operation.DESCRIBE, Operation.READ, Operation.WRITE, Operation.DELETE,
                                   Operation.ALTER}),
    Operation.DESCRIBE_CONFIGS: frozenset({Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS}),
}

# The operations each resource type has (kafka-acls refuses the others).
OPERATIONS_OF = {
    ResourceType.TOPIC: frozenset({Operation.READ, Operation.WRITE, Operation.CREATE, Operation.DELETE, Operation.ALTER,
                                   Operation.DESCRIBE, Operation.DESCRIBE_CONFIGS, Operation.ALTER_CONFIGS,
                                   Operation.ALL}),
    ResourceType.GROUP: frozenset({Operation.READ, Operation.DESCRIBE, Operation.DELETE, Operation.ALL}),
    ResourceType.CLUSTER: frozenset({Operation.CREATE, Operation.CLUSTER_ACTION, Operation.DESCRIBE_CONFIGS,
                                     Operation.ALTER_CONFIGS, Operation.IDEMPOTENT_WRITE, Operation.ALTER,
                                     Operation.DESCRIBE, Operation.ALL}),
    ResourceType.TRANSACTIONAL_ID: frozenset({Operation.DESCRIBE, Operation.WRITE, Operation.ALL}),
}


@dataclasses.dataclass(frozen=True, slots=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def matches(self, name: str) -> bool:
        if self.pattern_type is PatternType.PREFIXED:
            return name.startswith(self.name)
        return self.name == name or self.name == WILDCARD

    def __str__(self) -> str:
        kind = "" if self.pattern_type is PatternType.LITERAL else f" ({self.pattern_type.value})"
        return f"{self.resource_type.value}:{self.name}{kind}"


@dataclasses.dataclass(frozen=True, slots=True)
class Acl:
    principal: str  # "User:alice", or "User:*" for every principal
    host: str  # an address, or "*"
    operation: Operation
    permission: Permission

    def applies_to(self, principal: str, host: str) -> bool:
        return self.principal in (principal, "User:*") and self.host in (host, WILDCARD)

    def __str__(self) -> str:
        return (f"(principal={self.principal}, host={self.host}, operation={self.operation.value}, "
                f"permissionType={self.permission.value})")


@dataclasses.dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    acl: Acl


@dataclasses.dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    reason: str


class AclSnapshot:
    """Every ACL of the cluster at one moment, indexed for the authorizer's lookups."""

    def __init__(self, acls: Mapping[ResourcePattern, Iterable[Acl]] | None = None) -> None:
        self.acls: dict[ResourcePattern, frozenset[Acl]] = {
            pattern: frozenset(entries) for pattern, entries in (acls or {}).items() if entries}
        self._literal: dict[tuple[ResourceType, str], frozenset[Acl]] = {}
        self._prefixed: dict[ResourceType, list[tuple[str, frozenset[Acl]]]] = {}
        for pattern, entries in self.acls.items():
            if pattern.pattern_type is PatternType.LITERAL:
                self._literal[(pattern.resource_type, pattern.name)] = entries
            else:
                self._prefixed.setdefault(pattern.resource_type, []).append((pattern.name, entries))

    def matching(self, resource_type: ResourceType, name: str) -> list[Acl]:
        """The ACLs of every pattern that matches the resource: the literal name, `*`, prefixes of it."""
        found = [*self._literal.get((resource_type, name), ()), *self._literal.get((resource_type, WILDCARD), ())]
        for prefix, entries in self._prefixed.get(resource_type, ()):
            if name.startswith(prefix):
                found.extend(entries)
        return found

    def bindings(self) -> list[AclBinding]:
        return sorted((AclBinding(pattern, acl) for pattern, entries in self.acls.items() for acl in entries),
                      key=lambda b: (b.pattern.resource_type.value, b.pattern.pattern_type.value, b.pattern.name,
                                     b.acl.principal, b.acl.operation.value, b.acl.permission.value, b.acl.host))


@dataclasses.dataclass(frozen=True)
class AuthorizerRules:
    super_users: frozenset[str] = frozenset()
    allow_everyone_if_no_acl_found: bool = False


def parse_super_users(text: str) -> frozenset[str]:
    """`super.users`: principals separated by semicolons (a certificate's DN has commas)."""
    return frozenset(user.strip() for user in text.split(";") if user.strip())


def authorize(snapshot: AclSnapshot, rules: AuthorizerRules, principal: str, host: str,
              operation: Operation, resource_type: ResourceType, name: str) -> Decision:
    """May `principal`, calling from `host`, do `operation` on the resource? Kafka's AclAuthorizer."""
    if principal in rules.super_users:
        return Decision(True, f"{principal} is a super user")
    acls = snapshot.matching(resource_type, name)
    if not acls:
        if rules.allow_everyone_if_no_acl_found:
            return Decision(True, "no ACL matches the resource and allow.everyone.if.no.acl.found=true")
        return Decision(False, f"no ACL matches {resource_type.value}:{name}")
    mine = [acl for acl in acls if acl.applies_to(principal, host)]
    for acl in mine:
        if acl.permission is Permission.DENY and acl.operation in (operation, Operation.ALL):
            return Decision(False, f"denied by {acl}")
    allowing = IMPLIED_BY.get(operation, frozenset({operation})) | {Operation.ALL}
    for acl in mine:
        if acl.permission is Permission.ALLOW and acl.operation in allowing:
            return Decision(True, f"allowed by {acl}")
    return Decision(False, f"no ACL allows {operation.value} on {resource_type.value}:{name} to {principal}")


def may_on_some(snapshot: AclSnapshot, rules: AuthorizerRules, principal: str, host: str,
                operation: Operation, resource_type: ResourceType) -> bool:
    """Could the principal do `operation` on some resource of the type (KIP-679: an idempotent
    producer needs Write on some topic, or IdempotentWrite on the cluster)?"""
    if principal in rules.super_users:
        return True
    denied_everywhere = any(
        pattern.resource_type is resource_type and pattern.name == WILDCARD
        and pattern.pattern_type is PatternType.LITERAL and acl.permission is Permission.DENY
        and acl.operation in (operation, Operation.ALL) and acl.applies_to(principal, host)
        for pattern, entries in snapshot.acls.items() for acl in entries)
    if denied_everywhere:
        return False
    return any(
        pattern.resource_type is resource_type and acl.permission is Permission.ALLOW
        and acl.operation in (operation, Operation.ALL) and acl.applies_to(principal, host)
        for pattern, entries in snapshot.acls.items() for acl in entries)


def canonical_host(text: str) -> str:
    """An ACL's host as requests give theirs: '*', or the IP address in its canonical form ("::1" for
    "0:0:0:0:0:0:0:1"); ValueError with one sentence for anything else, which would never match."""
    if text == WILDCARD:
        return text
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ValueError(f"host {text!r} is not an IP address: an ACL's host is matched against the address a "
                         "request comes from, so give that address, or '*' for any") from None


def check_binding(binding: AclBinding) -> None:
    """ValueError with one sentence for an ACL kafka-acls would refuse."""
    pattern, acl = binding.pattern, binding.acl
    if acl.operation not in OPERATIONS_OF[pattern.resource_type]:
        allowed = ", ".join(sorted(op.value for op in OPERATIONS_OF[pattern.resource_type]))
        raise ValueError(f"{acl.operation.value} is not an operation on a {pattern.resource_type.value} "
                         f"(those are: {allowed})")
    if ":" not in acl.principal or not acl.principal.split(":", 1)[1]:
        raise ValueError(f"principal {acl.principal!r} is not Type:name, e.g. User:alice")
    canonical = canonical_host(acl.host)
    if canonical != acl.host:
        raise ValueError(f"host {acl.host!r} is written {canonical} where requests come from; give it so")
    if pattern.resource_type is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise ValueError(f"the cluster resource is named {CLUSTER_NAME}")
    if not pattern.name:
        raise ValueError("a resource name cannot be empty")
    if pattern.pattern_type is PatternType.PREFIXED and pattern.name == WILDCARD:
        raise ValueError("a prefixed pattern cannot be '*'; use a literal '*' for every name")
