"""Kafka's authorizer rules: Deny beats Allow, implied Describe, prefixed and wildcard patterns,
hosts, super users, and what happens where no ACL matches."""

import pytest

from replog.core.acl import (
    Acl,
    AclBinding,
    AclSnapshot,
    AuthorizerRules,
    Operation,
    PatternType,
    Permission,
    ResourcePattern,
    ResourceType,
    authorize,
    check_binding,
    may_on_some,
    parse_super_users,
)

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
ALLOW, DENY = Permission.ALLOW, Permission.DENY
RULES = AuthorizerRules()


def snapshot(*entries):
    acls = {}
    for pattern, acl in entries:
        acls.setdefault(pattern, set()).add(acl)
    return AclSnapshot(acls)


def topic(name, kind=PatternType.LITERAL):
    return ResourcePattern(T, name, kind)


def allowed(acls, principal, operation, resource_type, name, host="10.0.0.1", rules=RULES):
    return authorize(acls, rules, principal, host, operation, resource_type, name).allowed


def test_an_acl_allows_exactly_its_operation_on_its_resource():
    acls = snapshot((topic("orders"), Acl("User:alice", "*", Operation.WRITE, ALLOW)))
    assert allowed(acls, "User:alice", Operation.WRITE, T, "orders")
    assert not allowed(acls, "User:alice", Operation.READ, T, "orders")
    assert not allowed(acls, "User:bob", Operation.WRITE, T, "orders")
    assert not allowed(acls, "User:alice", Operation.WRITE, T, "payments")


def test_deny_beats_allow_and_deny_all_denies_every_operation():
    acls = snapshot((topic("orders"), Acl("User:alice", "*", Operation.ALL, ALLOW)),
                    (topic("orders"), Acl("User:alice", "*", Operation.WRITE, DENY)),
                    (topic("*"), Acl("User:bob", "*", Operation.ALL, DENY)),
                    (topic("orders"), Acl("User:bob", "*", Operation.READ, ALLOW)))
    assert allowed(acls, "User:alice", Operation.READ, T, "orders")
    assert not allowed(acls, "User:alice", Operation.WRITE, T, "orders")
    assert not allowed(acls, "User:bob", Operation.READ, T, "orders")


@pytest.mark.parametrize("granted", [Operation.READ, Operation.WRITE, Operation.DELETE, Operation.ALTER])
def test_read_write_delete_and_alter_imply_describe(granted):
    acls = snapshot((topic("orders"), Acl("User:alice", "*", granted, ALLOW)))
    assert allowed(acls, "User:alice", Operation.DESCRIBE, T, "orders")
    assert not allowed(acls, "User:alice", Operation.DESCRIBE_CONFIGS, T, "orders")


def test_alter_configs_implies_describe_configs():
    acls = snapshot((topic("orders"), Acl("User:alice", "*", Operation.ALTER_CONFIGS, ALLOW)))
    assert allowed(acls, "User:alice", Operation.DESCRIBE_CONFIGS, T, "orders")


def test_prefixed_patterns_match_names_that_start_with_them():
    acls = snapshot((topic("orders-", PatternType.PREFIXED), Acl("User:alice", "*", Operation.READ, ALLOW)))
    assert allowed(acls, "User:alice", Operation.READ, T, "orders-eu")
    assert allowed(acls, "User:alice", Operation.READ, T, "orders-")
    assert not allowed(acls, "User:alice", Operation.READ, T, "order")


def test_wildcards_of_principal_and_resource_and_the_host():
    acls = snapshot((topic("*"), Acl("User:*", "10.0.0.1", Operation.READ, ALLOW)))
    assert allowed(acls, "User:anyone", Operation.READ, T, "whatever", host="10.0.0.1")
    assert not allowed(acls, "User:anyone", Operation.READ, T, "whatever", host="10.0.0.2")


def test_no_matching_acl_is_open_only_to_super_users_unless_allowed_for_everyone():
    empty = AclSnapshot()
    assert not allowed(empty, "User:alice", Operation.READ, T, "orders")
    supers = AuthorizerRules(parse_super_users("User:admin; User:CN=broker,OU=replog"))
    assert allowed(empty, "User:admin", Operation.CLUSTER_ACTION, C, "kafka-cluster", rules=supers)
    assert allowed(empty, "User:CN=broker,OU=replog", Operation.READ, T, "orders", rules=supers)
    open_rules = AuthorizerRules(allow_everyone_if_no_acl_found=True)
    assert allowed(empty, "User:alice", Operation.READ, T, "orders", rules=open_rules)
    acls = snapshot((topic("orders"), Acl("User:bob", "*", Operation.READ, ALLOW)))
    assert not allowed(acls, "User:alice", Operation.READ, T, "orders", rules=open_rules)


def test_idempotent_producers_need_write_on_some_topic_or_idempotent_write():
    acls = snapshot((topic("orders"), Acl("User:alice", "*", Operation.WRITE, ALLOW)))
    assert may_on_some(acls, RULES, "User:alice", "h", Operation.WRITE, T)
    assert not may_on_some(acls, RULES, "User:bob", "h", Operation.WRITE, T)


@pytest.mark.parametrize("binding, complaint", [
    (AclBinding(ResourcePattern(G, "g"), Acl("User:a", "*", Operation.WRITE, ALLOW)), "not an operation on a Group"),
    (AclBinding(topic("t"), Acl("alice", "*", Operation.READ, ALLOW)), "is not Type:name"),
    (AclBinding(ResourcePattern(C, "other"), Acl("User:a", "*", Operation.ALTER, ALLOW)), "kafka-cluster"),
    (AclBinding(topic("*", PatternType.PREFIXED), Acl("User:a", "*", Operation.READ, ALLOW)), "cannot be"),
    (AclBinding(topic("t"), Acl("User:a", "app.example.com", Operation.READ, ALLOW)), "is not an IP address"),
    (AclBinding(topic("t"), Acl("User:a", "0:0:0:0:0:0:0:1", Operation.READ, ALLOW)), "is written ::1"),
])
def test_acls_kafka_acls_refuses_are_refused_with_a_reason(binding, complaint):
    with pytest.raises(ValueError, match=complaint):
        check_binding(binding)


@pytest.mark.parametrize("host", ["*", "10.0.0.1", "::1", "fe80::1"])
def test_a_host_is_any_or_an_ip_address_as_a_request_gives_it(host):
    check_binding(AclBinding(topic("t"), Acl("User:a", host, Operation.READ, ALLOW)))
