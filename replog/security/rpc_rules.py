"""What each RPC needs, Kafka's table of operations per request (docs/SECURITY.md), and how a
request that is partly denied is answered.

Four kinds of check:

- `Cluster(op)`: the whole request needs `op` on the cluster; without it the call ends with
  PERMISSION_DENIED and a message naming the principal and the operation.
- `Named(type, op, field)`: the request names one resource in `field` (a group id, a
  transactional id); without the permission the answer is the response with that resource
  type's *_AUTHORIZATION_FAILED error (at the top, or on every partition of the request).
- `Each(type, op, field, ...)`: each entry of a repeated field is a resource (a topic); the
  denied entries are taken out of the request and answered with the error next to the
  answers of the others.
- `Visible(type, op, field, ...)`: entries of the response the principal may not see are left out.

Adding a check for a new RPC is one entry in RULES.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from replog.api.controller.v1 import controller_pb2
from replog.core.acl import CLUSTER_NAME, Decision, Operation, ResourceType
from replog.core.errors import ErrorCode

Message = Any

ERROR_OF = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}


class Judge(Protocol):
    """The authorizer as the rules see it: one session's questions."""

    def may(self, operation: Operation, resource_type: ResourceType, name: str) -> Decision: ...

    def may_on_some(self, operation: Operation, resource_type: ResourceType) -> bool: ...

    @property
    def principal(self) -> str: ...


class PermissionDenied(Exception):
    """A cluster-level refusal: the call ends with PERMISSION_DENIED and this message."""


def always(_: Message) -> bool:
    return True


@dataclasses.dataclass(frozen=True)
class Cluster:
    operation: Operation
    when: Callable[[Message], bool] = always


@dataclasses.dataclass(frozen=True)
class Named:
    resource_type: ResourceType
    operation: Operation
    field: str


@dataclasses.dataclass(frozen=True)
class IdempotentWrite:
    """KIP-679: a producer without a transactional id needs IdempotentWrite on the cluster, or
    Write on some topic."""

    when: Callable[[Message], bool] = always


@dataclasses.dataclass(frozen=True)
class Each:
    resource_type: ResourceType
    operation: Operation
    field: str
    key: str | None  # the entry's name attribute; None: the entries are the names
    response_field: str
    response_key: str
    or_cluster: bool = False  # allowed on the cluster: allowed on every entry (CreateTopics)
    when: Callable[[Message], bool] = always


@dataclasses.dataclass(frozen=True)
class ConfigResources:
    """DescribeConfigs/AlterConfigs: a topic's configs are the topic's, a broker's the cluster's."""

    operation: Operation
    field: str = "resources"
    response_field: str = "results"


@dataclasses.dataclass(frozen=True)
class Visible:
    resource_type: ResourceType
    operation: Operation
    field: str
    key: str
    unless_cluster: Operation | None = None  # with this on the cluster, everything is visible
    requested: str | None = None  # names asked for explicitly get an error entry instead


Check = Cluster | Named | IdempotentWrite | Each | ConfigResources | Visible


def _is_follower(request: Message) -> bool:
    return request.replica_id >= 0


def _is_client(request: Message) -> bool:
    return request.replica_id < 0


def _has_transactional_id(request: Message) -> bool:
    return request.HasField("transactional_id") and bool(request.transactional_id)


def _no_transactional_id(request: Message) -> bool:
    return not _has_transactional_id(request)


def _from_a_leader(request: Message) -> bool:
    """A partition leader's AddPartitionsToTxn: a verification, or an add for a producer on transaction
    version 2 (whose own Produce was authorized on the topic and the transactional id)."""
    return request.verify_only or request.leader_add


def _from_the_producer(request: Message) -> bool:
    return not _from_a_leader(request)


T, G, C, X = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER, ResourceType.TRANSACTIONAL_ID
O = Operation


def _topics(operation: Operation, when: Callable[[Message], bool] = always) -> Each:
    return Each(T, operation, "topics", "topic", "topics", "topic", when=when)


BROKER = "/replog.api.broker.v1.BrokerService/"
CONTROLLER = "/replog.api.controller.v1.ControllerService/"
COORDINATOR = "/replog.api.coordinator.v1.CoordinatorService/"
METADATA = "/replog.api.metadata.v1.MetadataService/"

# Kafka's "Operations and Resources on Protocols", RPC by RPC. The stream forms (ProduceStream,
# FetchStream) check each message as Produce and Fetch.
RULES: dict[str, tuple[Check, ...]] = {
    BROKER + "Produce": (Named(X, O.WRITE, "transactional_id"), _topics(O.WRITE)),
    BROKER + "Fetch": (Cluster(O.CLUSTER_ACTION, when=_is_follower), _topics(O.READ, when=_is_client)),
    BROKER + "ListOffsets": (_topics(O.DESCRIBE),),
    BROKER + "DescribeProducers": (_topics(O.READ),),
    BROKER + "DeleteRecords": (_topics(O.DELETE),),
    BROKER + "DescribeLogDirs": (Cluster(O.DESCRIBE),),
    BROKER + "OffsetsForLeaderEpoch": (Cluster(O.CLUSTER_ACTION, when=_is_follower),
                                       _topics(O.DESCRIBE, when=_is_client)),
    BROKER + "LeaderAndIsr": (Cluster(O.CLUSTER_ACTION),),
    BROKER + "StopReplica": (Cluster(O.CLUSTER_ACTION),),
    BROKER + "UpdateMetadata": (Cluster(O.CLUSTER_ACTION),),
    BROKER + "WriteTxnMarkers": (Cluster(O.CLUSTER_ACTION),),
    CONTROLLER + "CreateTopics": (Each(T, O.CREATE, "topics", "name", "topics", "name", or_cluster=True),),
    CONTROLLER + "DeleteTopics": (Each(T, O.DELETE, "topic_names", None, "topics", "name"),),
    CONTROLLER + "CreatePartitions": (Each(T, O.ALTER, "topics", "name", "topics", "name"),),
    CONTROLLER + "DescribeConfigs": (ConfigResources(O.DESCRIBE_CONFIGS),),
    CONTROLLER + "AlterConfigs": (ConfigResources(O.ALTER_CONFIGS),),
    CONTROLLER + "ElectLeaders": (Cluster(O.ALTER),),
    CONTROLLER + "AlterPartition": (Cluster(O.CLUSTER_ACTION),),
    CONTROLLER + "ControlledShutdown": (Cluster(O.CLUSTER_ACTION),),
    CONTROLLER + "AlterPartitionReassignments": (Cluster(O.ALTER),),
    CONTROLLER + "ListPartitionReassignments": (Cluster(O.DESCRIBE),),
    COORDINATOR + "FindCoordinator": (Each(G, O.DESCRIBE, "keys", None, "coordinators", "key",
                                           when=lambda r: r.key_type != 2),
                                      Each(X, O.DESCRIBE, "keys", None, "coordinators", "key",
                                           when=lambda r: r.key_type == 2)),
    COORDINATOR + "ConsumerGroupHeartbeat": (Named(G, O.READ, "group_id"),),
    COORDINATOR + "OffsetCommit": (Named(G, O.READ, "group_id"), _topics(O.READ)),
    COORDINATOR + "OffsetFetch": (Named(G, O.DESCRIBE, "group_id"), _topics(O.DESCRIBE)),
    COORDINATOR + "ListGroups": (Visible(G, O.DESCRIBE, "groups", "group_id", unless_cluster=O.DESCRIBE),),
    COORDINATOR + "DescribeGroups": (Each(G, O.DESCRIBE, "group_ids", None, "groups", "group_id"),),
    COORDINATOR + "DeleteGroups": (Each(G, O.DELETE, "group_ids", None, "results", "group_id"),),
    COORDINATOR + "OffsetDelete": (Named(G, O.DELETE, "group_id"),
                                   Each(T, O.READ, "topics", "topic", "results", "topic")),
    COORDINATOR + "InitProducerId": (Named(X, O.WRITE, "transactional_id"),
                                     IdempotentWrite(when=_no_transactional_id)),
    COORDINATOR + "AddPartitionsToTxn": (Cluster(O.CLUSTER_ACTION, when=_from_a_leader),
                                         Named(X, O.WRITE, "transactional_id"),
                                         Each(T, O.WRITE, "topics", "topic", "results", "topic",
                                              when=_from_the_producer)),
    COORDINATOR + "EndTxn": (Named(X, O.WRITE, "transactional_id"),),
    COORDINATOR + "AddOffsetsToTxn": (Named(X, O.WRITE, "transactional_id"), Named(G, O.READ, "group_id")),
    COORDINATOR + "TxnOffsetCommit": (Named(X, O.WRITE, "transactional_id"), Named(G, O.READ, "group_id"),
                                      _topics(O.READ)),
    COORDINATOR + "ListTransactions": (Visible(X, O.DESCRIBE, "transactions", "transactional_id"),),
    COORDINATOR + "DescribeTransactions": (Each(X, O.DESCRIBE, "transactional_ids", None, "transactions",
                                                "transactional_id"),),
    METADATA + "Metadata": (Visible(T, O.DESCRIBE, "topics", "name", requested="topics"),),
    METADATA + "WatchMetadata": (Visible(T, O.DESCRIBE, "changed_topics", "name"),),
}

# Inner requests of the stream forms: each message is checked as its unary RPC.
STREAM_OF = {BROKER + "ProduceStream": BROKER + "Produce", BROKER + "FetchStream": BROKER + "Fetch"}


def is_cluster_action(method: str, request: Message) -> bool:
    """Whether `request` is one of the cluster's own, needing ClusterAction on the cluster (a
    follower's fetch, the controller's LeaderAndIsr, a leader's verify-only or adding AddPartitionsToTxn):
    quotas never count those (Kafka exempts them)."""
    return any(isinstance(check, Cluster) and check.operation is O.CLUSTER_ACTION and check.when(request)
               for check in RULES.get(STREAM_OF.get(method, method), ()))


# Open to everyone: probes and tools must reach them.
OPEN_SERVICES = ("/grpc.health.v1.Health/", "/grpc.reflection.v1alpha.ServerReflection/",
                 "/grpc.reflection.v1.ServerReflection/")


@dataclasses.dataclass
class Plan:
    """What the checks decided for one request: answer now, or call the servicer and then add
    the denied entries and hide what may not be seen."""

    answer: Message | None = None
    denied: list[tuple[Each | ConfigResources, list[Message], Decision]] = dataclasses.field(default_factory=list)
    visible: list[Visible] = dataclasses.field(default_factory=list)
    requested: dict[str, frozenset[str]] = dataclasses.field(default_factory=dict)
    skip_servicer: bool = False


def plan(rpc: str, checks: Sequence[Check], request: Message, response_type: type, judge: Judge) -> Plan:
    """Apply the checks to `request` (denied entries are removed from it in place)."""
    result = Plan()
    for check in checks:
        if isinstance(check, Cluster):
            if check.when(request):
                decision = judge.may(check.operation, C, CLUSTER_NAME)
                if not decision.allowed:
                    raise PermissionDenied(f"{judge.principal} may not {check.operation.value} on the cluster "
                                           f"({rpc.rsplit('/', 1)[-1]}): {decision.reason}")
        elif isinstance(check, Named):
            name = getattr(request, check.field)
            if name:
                decision = judge.may(check.operation, check.resource_type, name)
                if not decision.allowed:
                    result.answer = error_response(response_type, request, ERROR_OF[check.resource_type],
                                                   _message(judge, check.operation, check.resource_type, name))
                    return result
        elif isinstance(check, IdempotentWrite):
            if check.when(request) and not (
                    judge.may(O.IDEMPOTENT_WRITE, C, CLUSTER_NAME).allowed or judge.may_on_some(O.WRITE, T)):
                result.answer = error_response(
                    response_type, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    f"{judge.principal} may not IdempotentWrite on the cluster, nor Write on any topic")
                return result
        elif isinstance(check, Each):
            if check.when(request):
                _split(check, request, judge, result)
        elif isinstance(check, ConfigResources):
            _split(check, request, judge, result)
        else:
            result.visible.append(check)
            if check.requested is not None:
                result.requested[check.field] = frozenset(getattr(request, check.requested))
    return result


def finish(plan_: Plan, response: Message, judge: Judge) -> Message:
    """Add the denied entries to the servicer's response and hide what may not be seen."""
    for check, entries, decision in plan_.denied:
        container = getattr(response, check.response_field)
        for entry in entries:
            resource_type, name = _resource_of(check, entry)
            _denied_entry(container, entry, _response_key(check), name, ERROR_OF[resource_type],
                          _message(judge, check.operation, resource_type, name))
    for check in plan_.visible:
        if check.unless_cluster is not None and judge.may(check.unless_cluster, C, CLUSTER_NAME).allowed:
            continue
        _hide(check, response, judge, plan_.requested.get(check.field, frozenset()))
    return response


def error_response(response_type: type, request: Message, code: ErrorCode, message: str) -> Message:
    """The whole request refused with `code`: at the top of the response where it has an error, else
    on every partition the request named."""
    response = response_type()
    fields = response.DESCRIPTOR.fields_by_name
    if "error_code" in fields:
        response.error_code = int(code)
        if "error_message" in fields:
            response.error_message = message
        return response
    if "topics" in fields and "topics" in request.DESCRIPTOR.fields_by_name:
        key = "topic" if "topic" in fields["topics"].message_type.fields_by_name else "name"
        for entry in request.topics:
            _denied_entry(response.topics, entry, key, _entry_name(entry, "topic"), code, message)
    return response


def _split(check: Each | ConfigResources, request: Message, judge: Judge, result: Plan) -> None:
    entries = getattr(request, check.field)
    if not entries:
        return
    if isinstance(check, Each) and check.or_cluster and judge.may(check.operation, C, CLUSTER_NAME).allowed:
        return
    kept, denied, reason = [], [], None
    for entry in entries:
        decision = judge.may(check.operation, *_resource_of(check, entry))
        if decision.allowed:
            kept.append(entry)
        else:
            denied.append(entry)
            reason = decision
    if denied:
        _keep(request, check.field, kept)
        result.denied.append((check, denied, reason))
        result.skip_servicer = result.skip_servicer or not kept


def _keep(request: Message, field: str, kept: list[Message]) -> None:
    container = getattr(request, field)
    copies = [entry if isinstance(entry, str | int) else _copy(entry) for entry in kept]
    del container[:]
    container.extend(copies)


def _copy(entry: Message) -> Message:
    duplicate = type(entry)()
    duplicate.CopyFrom(entry)
    return duplicate


def _hide(check: Visible, response: Message, judge: Judge, requested: frozenset[str]) -> None:
    container = getattr(response, check.field)
    kept = []
    for entry in container:
        name = getattr(entry, check.key)
        decision = judge.may(check.operation, check.resource_type, name)
        if decision.allowed:
            kept.append(_copy(entry))
        elif name in requested:
            denied = type(entry)()
            setattr(denied, check.key, name)
            denied.error_code = int(ERROR_OF[check.resource_type])
            denied.error_message = _message(judge, check.operation, check.resource_type, name)
            kept.append(denied)
    del container[:]
    container.extend(kept)


def _resource_of(check: Each | ConfigResources, entry: Message) -> tuple[ResourceType, str]:
    if isinstance(check, ConfigResources):
        return _config_resource(entry)
    return check.resource_type, _entry_name(entry, check.key)


def _response_key(check: Each | ConfigResources) -> str:
    return "resource_name" if isinstance(check, ConfigResources) else check.response_key


def _config_resource(entry: Message) -> tuple[ResourceType, str]:
    if entry.resource_type == controller_pb2.CONFIG_RESOURCE_TYPE_TOPIC:
        return T, entry.resource_name
    return C, CLUSTER_NAME


def _entry_name(entry: Message, key: str | None) -> str:
    return entry if key is None or isinstance(entry, str) else getattr(entry, key)


def _denied_entry(container: Any, request_entry: Message, key: str, name: str, code: ErrorCode,
                  message: str) -> None:
    """Answer one denied entry of a request in the response's list: one entry per partition where
    the list is flat (PartitionResult), else one entry, with the partitions inside when it has them."""
    entry = container.add()
    fields = entry.DESCRIPTOR.fields_by_name
    partitions = None if isinstance(request_entry, str) else getattr(request_entry, "partitions", None)
    indexes = [p if isinstance(p, int) else p.partition for p in partitions or ()]
    if "partition" in fields and indexes:  # flat: (topic, partition, error) each
        del container[-1]
        for index in indexes:
            _set_error(container.add(**{key: name, "partition": index}), code, message)
        return
    setattr(entry, key, name)
    if "resource_type" in fields and not isinstance(request_entry, str):
        entry.resource_type = request_entry.resource_type
    if "partitions" in fields and indexes:
        for index in indexes:
            _set_error(entry.partitions.add(partition=index), code, message)
        return
    _set_error(entry, code, message)


def _set_error(entry: Message, code: ErrorCode, message: str) -> None:
    fields = entry.DESCRIPTOR.fields_by_name
    if "error_code" in fields:
        entry.error_code = int(code)
    if "error_message" in fields:
        entry.error_message = message


def _message(judge: Judge, operation: Operation, resource_type: ResourceType, name: str) -> str:
    return f"{judge.principal} may not {operation.value} on {resource_type.value}:{name}"
