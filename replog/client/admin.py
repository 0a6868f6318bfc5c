"""The admin client: topics, configs, leader elections and reassignments at the active controller;
descriptions from the metadata service; consumer groups and their offsets at the groups' coordinators;
offsets by time at the partitions' leaders."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TypeVar

import grpc

from replog.api.common.v1 import common_pb2
from replog.api.controller.v1 import controller_pb2
from replog.client import broker_requests
from replog.client import coordinator_requests as requests
from replog.client.cluster import ClusterMetadata
from replog.client.coordinator import GROUP, TRANSACTION, Coordinators
from replog.client.errors import (
    AdminError,
    ClientError,
    ClusterUnreachableError,
    ProducerFencedError,
    ServerUnsupportedError,
    TransactionAbortedError,
    UnknownTopicError,
)
from replog.client.fetch_state import LIST_OFFSETS_TIMESTAMP
from replog.client.io import Channels, IoThread, parse_bootstrap
from replog.client.metadata import MetadataManager
from replog.client.offsets_lookup import list_offsets
from replog.client.retry import backoff_ms, error_code_for_status
from replog.client.types import (
    AbortTransactionSpec,
    CreatedTopic,
    GroupDescription,
    GroupListing,
    LogDirDescription,
    NewTopic,
    OffsetAndMetadata,
    PreparedTransaction,
    ProducerDescription,
    TopicDescription,
    TransactionDescription,
    TransactionListing,
)
from replog.core.errors import ErrorCode
from replog.core.messages import DELETE_TO_HIGH_WATERMARK
from replog.core.topic_partition import TopicPartition
from replog.core.txn.hanging import abort_coordinator_epoch, abort_marker_epoch
from replog.core.txn.producer import Reaction, Request, reaction, retried
from replog.rpc.channels import ClientSecurity

T = TypeVar("T")

DEADLINE_MARGIN_MS = 5_000  # the gRPC deadline exceeds the controller's own timeout_ms
METADATA_POLL_S = 0.05

RESOURCE_TYPES = {"topic": controller_pb2.CONFIG_RESOURCE_TYPE_TOPIC,
                  "broker": controller_pb2.CONFIG_RESOURCE_TYPE_BROKER}
ELECTION_TYPES = {"preferred": controller_pb2.ELECTION_TYPE_PREFERRED,
                  "unclean": controller_pb2.ELECTION_TYPE_UNCLEAN}
CONFIG_SOURCES = {
    controller_pb2.CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG: "DYNAMIC_TOPIC_CONFIG",
    controller_pb2.CONFIG_SOURCE_DYNAMIC_BROKER_CONFIG: "DYNAMIC_BROKER_CONFIG",
    controller_pb2.CONFIG_SOURCE_DYNAMIC_DEFAULT_BROKER_CONFIG: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    controller_pb2.CONFIG_SOURCE_STATIC_BROKER_CONFIG: "STATIC_BROKER_CONFIG",
    controller_pb2.CONFIG_SOURCE_DEFAULT_CONFIG: "DEFAULT_CONFIG",
}


@dataclasses.dataclass(frozen=True)
class ConfigEntry:
    """One config of a topic or broker, with its effective value and where that comes from
    (Kafka's source names: DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG, ...)."""

    name: str
    value: str | None
    source: str
    read_only: bool


@dataclasses.dataclass(frozen=True)
class ElectionResult:
    """The outcome of a leader election for one partition: NONE when a leader was elected."""

    error_code: ErrorCode
    message: str


@dataclasses.dataclass(frozen=True)
class PartitionReassignment:
    """A reassignment in progress: all replicas now, those being added, those to be removed."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)


class Admin:
    """Topic administration; every call is synchronous and raises AdminError on failure."""

    def __init__(self, bootstrap: str | Sequence[str], *, request_timeout_ms: int = 30_000,
                 retry_backoff_ms: int = 100, security: ClientSecurity | None = None,
                 retry_unreachable: bool = True) -> None:
        """`retry_unreachable`: group and transaction calls ask again, until their timeout, while no metadata
        service answers (a restart passes unnoticed); False raises ClusterUnreachableError at once, as the
        topic calls do (a command line, which says so to its user)."""
        self._request_timeout_ms = request_timeout_ms
        self._retry_backoff_s = retry_backoff_ms / 1000
        addresses = parse_bootstrap(bootstrap)
        self._io = IoThread("replog-admin-io")
        self._channels = Channels(security)
        self._metadata = MetadataManager(addresses, self._channels, request_timeout_ms=request_timeout_ms,
                                         retry_backoff_ms=retry_backoff_ms, all_topics=True)
        self._coordinators, self._transactions = (
            Coordinators(self._metadata, self._channels, request_timeout_ms=request_timeout_ms,
                         retry_backoff_ms=retry_backoff_ms, key_type=key_type,
                         unreachable_ends=not retry_unreachable)
            for key_type in (GROUP, TRANSACTION))
        self._closed = False

    # -- topics ----------------------------------------------------------------------------------

    def create_topics(
        self, topics: Iterable[NewTopic], *, timeout_ms: int = 30_000, validate_only: bool = False
    ) -> dict[str, CreatedTopic]:
        """Create topics; returns them by name, or raises AdminError for the first that failed.

        The error's `errors` attribute maps every failed topic to its AdminError
        (some topics of one call may be created while others fail). Returns once
        the metadata service shows the new topics, or timeout_ms has passed.
        """
        topics = list(topics)
        request = controller_pb2.CreateTopicsRequest(
            topics=[_creatable(topic) for topic in topics], timeout_ms=timeout_ms, validate_only=validate_only,
        )
        wait_s = (timeout_ms + DEADLINE_MARGIN_MS) / 1000
        response = self._io.run(self._create_topics(request, wait_s), wait_s + 5, what="creating topics")
        created: dict[str, CreatedTopic] = {}
        errors: dict[str, AdminError] = {}
        for result in response.topics:
            code = ErrorCode.of(result.error_code)
            if code is ErrorCode.NONE:
                created[result.name] = CreatedTopic(result.name, result.topic_id, result.num_partitions,
                                                    result.replication_factor)
            else:
                errors[result.name] = AdminError(_topic_failure(result.name, code, result.error_message), code,
                                                 result.name)
        if errors:
            first = next(iter(errors.values()))
            first.errors, first.created = errors, created
            raise first
        if created and not validate_only:
            self._io.run(self._await_visible(list(created), timeout_ms / 1000), timeout_ms / 1000 + 5,
                         what="waiting for the new topics to reach the metadata service")
        return created

    def describe_topics(self, names: Iterable[str] | None = None) -> list[TopicDescription]:
        """Topics with their partitions, leaders, replicas and ISR (all topics when names is None)."""
        names = None if names is None else list(names)
        metadata = self._refresh(names)
        if names is None:
            return [metadata.topics[name] for name in sorted(metadata.topics)]
        return _described_topics(metadata, names)

    def list_topics(self) -> list[str]:
        return sorted(self._refresh(None).topics)

    def describe_configs(self, topics: Iterable[str], *, overrides_only: bool = True) -> dict[str, dict[str, str]]:
        """Topic configs: the ones set for each topic (or, with overrides_only=False, every effective value)."""
        topics = list(topics)
        if not topics:
            return {}
        request = controller_pb2.DescribeConfigsRequest(resources=[
            controller_pb2.DescribeConfigsResource(resource_type=controller_pb2.CONFIG_RESOURCE_TYPE_TOPIC,
                                                   resource_name=name)
            for name in topics
        ])
        response = self._controller_call(
            "describing configs", lambda stub, t: stub.DescribeConfigs(request, timeout=t),
            lambda r: [(x.resource_name, x.error_code) for x in r.results])
        configs: dict[str, dict[str, str]] = {}
        for result in response.results:
            code = ErrorCode.of(result.error_code)
            if code is not ErrorCode.NONE:
                raise AdminError(_topic_failure(result.resource_name, code, result.error_message), code,
                                 result.resource_name)
            configs[result.resource_name] = {
                entry.name: entry.value for entry in result.configs
                if entry.HasField("value")
                and (not overrides_only or entry.source == controller_pb2.CONFIG_SOURCE_DYNAMIC_TOPIC_CONFIG)
            }
        return configs

    def delete_topics(self, names: Iterable[str], *, timeout_ms: int = 30_000) -> None:
        """Delete topics and wait up to timeout_ms until their replicas and znodes are gone.

        Raises AdminError for the first topic that failed (`errors` maps each);
        REQUEST_TIMED_OUT means the topic is marked for deletion and still being deleted.
        """
        request = controller_pb2.DeleteTopicsRequest(topic_names=list(names), timeout_ms=timeout_ms)
        response = self._controller_call("deleting topics", lambda stub, t: stub.DeleteTopics(request, timeout=t),
                                         lambda r: [(t.name, t.error_code) for t in r.topics], timeout_ms)
        _raise_topic_errors([(t.name, t.error_code, t.error_message) for t in response.topics])

    def create_partitions(self, counts: Mapping[str, int], *,
                          assignments: Mapping[str, Sequence[Sequence[int]]] | None = None,
                          validate_only: bool = False) -> None:
        """Grow topics to the given partition counts; assignments optionally name the new
        partitions' replicas, in order. Raises AdminError for the first topic that failed."""
        assignments = assignments or {}
        current = {} if not assignments else {t.name: len(t.partitions) for t in self.describe_topics(assignments)}
        request = controller_pb2.CreatePartitionsRequest(validate_only=validate_only, topics=[
            controller_pb2.CreatePartitionsTopic(name=name, count=count, assignments=[
                controller_pb2.ReplicaAssignment(partition=current.get(name, 0) + i, broker_ids=list(replicas))
                for i, replicas in enumerate(assignments.get(name, ()))])
            for name, count in counts.items()])
        response = self._controller_call(
            "adding partitions", lambda stub, t: stub.CreatePartitions(request, timeout=t),
            lambda r: [(t.name, t.error_code) for t in r.topics])
        _raise_topic_errors([(t.name, t.error_code, t.error_message) for t in response.topics])
        if not validate_only:
            self._io.run(self._await_visible(list(counts), self._request_timeout_ms / 1000, counts),
                         self._request_timeout_ms / 1000 + 5, what="waiting for the new partitions")

    def describe_config_entries(self, resource_type: str, name: str,
                                config_names: Iterable[str] = ()) -> list[ConfigEntry]:
        """Every config of one topic or broker (resource_type "topic" or "broker"), or the named ones."""
        request = controller_pb2.DescribeConfigsRequest(resources=[controller_pb2.DescribeConfigsResource(
            resource_type=_resource_type(resource_type), resource_name=name, config_names=list(config_names))])
        response = self._controller_call(
            "describing configs", lambda stub, t: stub.DescribeConfigs(request, timeout=t),
            lambda r: [(x.resource_name, x.error_code) for x in r.results])
        (result,) = response.results
        _raise_resource_error(resource_type, name, result.error_code, result.error_message)
        return [ConfigEntry(e.name, e.value if e.HasField("value") else None, CONFIG_SOURCES.get(e.source, "UNKNOWN"),
                            e.read_only) for e in result.configs]

    def alter_configs(self, resource_type: str, name: str, *, set_configs: Mapping[str, str] | None = None,
                      delete_configs: Iterable[str] = (), append_configs: Mapping[str, str] | None = None,
                      subtract_configs: Mapping[str, str] | None = None, validate_only: bool = False) -> None:
        """Change one topic's configs key by key (Kafka's incrementalAlterConfigs): all of the changes
        or none. Deleted configs take their defaults again. Raises AdminError."""
        changes = [controller_pb2.AlterableConfig(name=k, op=controller_pb2.ALTER_CONFIG_OP_SET, value=v)
                   for k, v in (set_configs or {}).items()]
        changes += [controller_pb2.AlterableConfig(name=k, op=controller_pb2.ALTER_CONFIG_OP_DELETE)
                    for k in delete_configs]
        changes += [controller_pb2.AlterableConfig(name=k, op=controller_pb2.ALTER_CONFIG_OP_APPEND, value=v)
                    for k, v in (append_configs or {}).items()]
        changes += [controller_pb2.AlterableConfig(name=k, op=controller_pb2.ALTER_CONFIG_OP_SUBTRACT, value=v)
                    for k, v in (subtract_configs or {}).items()]
        request = controller_pb2.AlterConfigsRequest(validate_only=validate_only, resources=[
            controller_pb2.AlterConfigsResource(resource_type=_resource_type(resource_type), resource_name=name,
                                                configs=changes)])
        response = self._controller_call(
            "changing configs", lambda stub, t: stub.AlterConfigs(request, timeout=t),
            lambda r: [(x.resource_name, x.error_code) for x in r.results])
        (result,) = response.results
        _raise_resource_error(resource_type, name, result.error_code, result.error_message)

    def elect_leaders(self, election_type: str,
                      partitions: Iterable[TopicPartition] | None = None) -> dict[TopicPartition, ElectionResult]:
        """Run a "preferred" or "unclean" election for the partitions (None: every partition).

        Returns each partition's outcome: NONE, ELECTION_NOT_NEEDED,
        PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION.
        """
        if election_type not in ELECTION_TYPES:
            raise AdminError(f"the election type is preferred or unclean, not {election_type!r}",
                             ErrorCode.INVALID_REQUEST)
        request = controller_pb2.ElectLeadersRequest(
            election_type=ELECTION_TYPES[election_type], all_partitions=partitions is None,
            topic_partitions=_topic_partitions(partitions or ()), timeout_ms=self._request_timeout_ms)
        response = self._controller_call("electing leaders", lambda stub, t: stub.ElectLeaders(request, timeout=t),
                                         lambda r: [("", r.error_code)])
        _raise_request_error("electing leaders", response.error_code, response.error_message)
        return {TopicPartition(r.topic, r.partition): ElectionResult(ErrorCode.of(r.error_code), r.error_message)
                for r in response.results}

    def alter_partition_reassignments(self, targets: Mapping[TopicPartition, Sequence[int] | None]) -> None:
        """Move partitions to the target replicas (preferred leader first); None cancels the
        reassignment in progress and restores the original replicas. Raises AdminError for the
        first partition refused."""
        request = controller_pb2.AlterPartitionReassignmentsRequest(
            timeout_ms=self._request_timeout_ms, partitions=[
                controller_pb2.ReassignablePartition(topic=tp.topic, partition=tp.partition, replicas=list(r or ()))
                for tp, r in targets.items()])
        response = self._controller_call(
            "reassigning partitions", lambda stub, t: stub.AlterPartitionReassignments(request, timeout=t),
            lambda r: [("", r.error_code)])
        _raise_request_error("reassigning partitions", response.error_code, response.error_message)
        for result in response.results:
            code = ErrorCode.of(result.error_code)
            if code is not ErrorCode.NONE:
                raise AdminError(f"{result.topic}-{result.partition}: {code.name}: {result.error_message}", code,
                                 result.topic)

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, PartitionReassignment]:
        """The reassignments in progress, of these partitions or of all."""
        request = controller_pb2.ListPartitionReassignmentsRequest(
            timeout_ms=self._request_timeout_ms, topic_partitions=_topic_partitions(partitions or ()))
        response = self._controller_call(
            "listing reassignments", lambda stub, t: stub.ListPartitionReassignments(request, timeout=t),
            lambda r: [("", r.error_code)])
        _raise_request_error("listing reassignments", response.error_code, response.error_message)
        return {TopicPartition(r.topic, r.partition): PartitionReassignment(
            tuple(r.replicas), tuple(r.adding_replicas), tuple(r.removing_replicas)) for r in response.reassignments}

    def list_offsets(self, specs: Mapping[TopicPartition, str | int],
                     isolation_level: str = "read_uncommitted") -> dict[TopicPartition, int]:
        """Offsets at the partitions' leaders (Kafka's listOffsets): for each partition "earliest" (the
        log start), "latest" (the high watermark), or a time in ms since the Unix epoch (the first
        offset whose record is at or after it; -1 when there is none). UnknownTopicError or AdminError for
        a partition that does not exist."""
        timestamps = {TopicPartition(*tp): _timestamp_of(spec) for tp, spec in specs.items()}
        if not timestamps:
            return {}
        self._metadata.add_topics({tp.topic for tp in timestamps})
        wait_s = self._request_timeout_s

        async def lookup():
            await self._metadata.refresh()
            _check_partitions_in(self._metadata.current, timestamps)  # a missing one has no leader to wait for
            return await list_offsets(self._metadata, self._channels, timestamps, isolation_level=isolation_level,
                                      request_timeout_s=wait_s, retry_backoff_s=self._retry_backoff_s,
                                      timeout_s=wait_s)

        found = self._io.run(lookup(), wait_s + 5, what="looking up offsets")
        return {tp: offset for tp, (offset, _epoch, _timestamp) in found.items()}

    def delete_records(self, offsets: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """Delete each partition's records before its offset (Kafka's deleteRecords; -1 deletes every record
        a consumer can read now). Returns each partition's
        low watermark: the offset the logs of its replicas on live brokers and in sync all start at or after,
        once they do.
        AdminError for an offset past the high watermark, a partition that does not exist, or a topic that
        only compacts; ClusterUnreachableError when the replicas did not follow within the request timeout
        (the leader has deleted the records already)."""
        asked = {TopicPartition(*tp): offset for tp, offset in offsets.items()}
        for tp, offset in asked.items():
            if isinstance(offset, bool) or not isinstance(offset, int) or offset < DELETE_TO_HIGH_WATERMARK:
                raise AdminError(f"the offset to delete {tp}'s records before must be an offset of 0 or more, or -1 "
                                 f"for the high watermark, not {offset!r}", ErrorCode.INVALID_REQUEST, tp.topic)
        if not asked:
            return {}
        self._check_partitions(list(asked))
        server_timeout_ms = self._request_timeout_ms
        wait_s = (server_timeout_ms + DEADLINE_MARGIN_MS) / 1000
        return self._io.run(self._at_leaders(
            list(asked), lambda stub, tps: stub.DeleteRecords(
                broker_requests.delete_records_request([(tp, asked[tp]) for tp in tps], server_timeout_ms),
                timeout=wait_s),
            broker_requests.deleted_records, "deleting records"),
            wait_s + 5, what="deleting records")

    def describe_log_dirs(self, brokers: Iterable[int] | None = None,
                          topics: Iterable[str] | None = None) -> dict[int, list[LogDirDescription]]:
        """Each broker's log dirs and the replicas in them (Kafka's describeLogDirs): every live broker, or
        the given ones; every partition, or those of the given topics. AdminError for a broker that is not
        live or a topic that does not exist."""
        names = None if topics is None else sorted(set(topics))
        metadata = self._refresh(names)  # the live brokers, and the topics asked about
        wanted = sorted(metadata.brokers) if brokers is None else sorted(set(brokers))
        for broker in wanted:
            if broker not in metadata.brokers:
                live = ", ".join(str(b) for b in sorted(metadata.brokers)) or "none"
                raise AdminError(f"broker {broker} is not live (live brokers: {live})", ErrorCode.BROKER_NOT_AVAILABLE)
        request = broker_requests.describe_log_dirs_request(None if names is None else (
            TopicPartition(topic.name, p.partition) for topic in _described_topics(metadata, names)
            for p in topic.partitions))

        async def ask(broker: int) -> list[LogDirDescription]:
            address = metadata.brokers[broker]
            try:
                response = await self._channels.broker(address).DescribeLogDirs(request,
                                                                                timeout=self._request_timeout_s)
            except grpc.aio.AioRpcError as error:
                raise AdminError(f"broker {broker} at {address} did not describe its log dirs: "
                                 f"{error.code().name}: {error.details()}",
                                 error_code_for_status(error.code())) from None
            return broker_requests.described_log_dirs(response)

        async def ask_all() -> dict[int, list[LogDirDescription]]:
            answers = await asyncio.gather(*(ask(broker) for broker in wanted))
            return dict(zip(wanted, answers, strict=True))

        return self._io.run(ask_all(), self._request_timeout_s + 5, what="describing log dirs")

    # -- consumer groups -------------------------------------------------------------------------

    def list_groups(self, states: Iterable[str] | None = None) -> list[GroupListing]:
        """Every group of the cluster (or those in the given states: Empty, Assigning, Reconciling,
        Stable, Dead): each broker answers for the groups it coordinates, and the answers are merged."""
        wanted = [] if states is None else [_state_number(state) for state in states]
        return self._io.run(self._list_groups(wanted), self._request_timeout_s + 5, what="listing groups")

    def describe_groups(self, group_ids: Iterable[str]) -> list[GroupDescription]:
        """The groups, their state, epochs, assignor and members (each with its assignment and
        target); AdminError (GROUP_ID_NOT_FOUND, ...) for the first group that cannot be described."""
        described = []
        for group_id in group_ids:
            _check_group_id(group_id)
            response, coordinator = self._at_coordinator(group_id, "DescribeGroups",
                                                         requests.describe_groups_request([group_id]),
                                                         lambda r: [ErrorCode.of(g.error_code) for g in r.groups])
            (code, message), description = requests.described_groups(response, coordinator).get(
                group_id, ((ErrorCode.UNKNOWN_SERVER_ERROR, "the answer left the group out"), None))
            if description is None:
                raise AdminError(_group_failure(group_id, code, message), code)
            described.append(description)
        return described

    def delete_groups(self, group_ids: Iterable[str]) -> None:
        """Delete empty groups and their committed offsets; AdminError (NON_EMPTY_GROUP,
        GROUP_ID_NOT_FOUND, ...) for the first that failed, with `errors` for all of them."""
        errors: dict[str, AdminError] = {}
        for group_id in group_ids:
            _check_group_id(group_id)
            response, _ = self._at_coordinator(group_id, "DeleteGroups", requests.delete_groups_request([group_id]),
                                               lambda r: [ErrorCode.of(g.error_code) for g in r.results])
            code, message = requests.deleted_groups(response).get(
                group_id, (ErrorCode.UNKNOWN_SERVER_ERROR, "the answer left the group out"))
            if code is not ErrorCode.NONE:
                errors[group_id] = AdminError(_group_failure(group_id, code, message), code)
        if errors:
            first = next(iter(errors.values()))
            first.errors = errors
            raise first

    def list_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition] | None = None, *,
                           require_stable: bool = False) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets: of every partition it committed for, or of these (those
        without a commit are left out). With `require_stable` (Kafka's requireStable), an offset that an
        open transaction is committing is waited for until that transaction ends."""
        _check_group_id(group_id)
        partitions = None if partitions is None else [TopicPartition(*tp) for tp in partitions]
        found = self._io.run(self._coordinators.committed_offsets(group_id, partitions, self._request_timeout_s,
                                                                  require_stable),
                             self._request_timeout_s + 5, what="reading committed offsets")
        return {tp: offset for tp, offset in sorted(found.items()) if offset is not None}

    def alter_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int | OffsetAndMetadata]) -> None:
        """Set the group's committed offsets; only while the group has no members (as in Kafka, a group
        with members refuses it with UNKNOWN_MEMBER_ID: stop its consumers first)."""
        _check_group_id(group_id)
        committed = {TopicPartition(*tp): o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
                     for tp, o in offsets.items()}
        results = self._io.run(self._coordinators.commit_offsets(group_id, "", -1, committed,
                                                                 self._request_timeout_s),
                               self._request_timeout_s + 5, what="altering committed offsets")
        failed = sorted((tp, outcome) for tp, outcome in results.items() if outcome[0] is not ErrorCode.NONE)
        if not failed:
            return
        tp, (code, message) = failed[0]
        if code is ErrorCode.UNKNOWN_MEMBER_ID:
            raise AdminError(f"group {group_id!r} has active members: its offsets can be altered only while it "
                             "is empty; stop its consumers first", code)
        raise AdminError(f"group {group_id!r}: the offset of {tp} was not altered: {code.name}: {message}", code)

    def delete_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition]) -> None:
        """Delete the group's committed offsets of these partitions; refused (GROUP_SUBSCRIBED_TO_TOPIC)
        for topics a member subscribes to."""
        _check_group_id(group_id)
        partitions = [TopicPartition(*tp) for tp in partitions]
        response, _ = self._at_coordinator(group_id, "OffsetDelete", requests.offset_delete_request(group_id, partitions),
                                           _offset_delete_codes)
        (code, message), results = requests.offset_delete_results(response)
        failed = sorted((tp, outcome) for tp, outcome in results.items() if outcome[0] is not ErrorCode.NONE)
        if code is ErrorCode.NONE and failed:
            tp, (code, message) = failed[0]
            message = f"{tp}: {message}"
        if code is not ErrorCode.NONE:
            raise AdminError(_group_failure(group_id, code, message), code)

    def _at_coordinator(self, group_id: str, method: str, request, codes):
        return self._io.run(self._coordinators.call(group_id, method, request, codes, self._request_timeout_s),
                            self._request_timeout_s + 5, what=f"{method} for group {group_id!r}")

    async def _list_groups(self, states: list[int]) -> list[GroupListing]:
        return await self._list_everywhere("ListGroups", requests.list_groups_request(states),
                                           requests.listed_groups, lambda group: group.group_id, "groups")

    async def _list_everywhere(self, method: str, request, read: Callable, key: Callable, what: str) -> list:
        """Ask every broker for what it coordinates (`method`), and merge the answers by `key`."""
        deadline = time.monotonic() + self._request_timeout_s
        metadata = await self._metadata.refresh()
        listed: dict = {}
        for broker_id, address in sorted(metadata.brokers.items()):
            # What moves to another coordinator meanwhile may be named by two brokers: listed once.
            for item in await self._list_at(broker_id, address, method, request, read, what, deadline):
                listed.setdefault(key(item), item)
        return [item for _, item in sorted(listed.items())]

    async def _list_at(self, broker_id: int, address: str, method: str, request, read: Callable, what: str,
                       deadline: float) -> list:
        """One broker's listing, waiting out a coordinator that is still loading."""
        attempt = 0
        while True:
            try:
                response = await getattr(self._channels.coordinator(address), method)(
                    request, timeout=max(deadline - time.monotonic(), 0.001))
                (code, message), items = read(response)
            except grpc.aio.AioRpcError as error:
                code, message = error_code_for_status(error.code()), f"{error.code().name}: {error.details()}"
                if error.code() is grpc.StatusCode.UNIMPLEMENTED or not code.retriable:
                    raise AdminError(f"broker {broker_id} at {address} could not list its {what}: {message}",
                                     code) from None
            if code is ErrorCode.NONE:
                return items
            attempt += 1
            wait_s = backoff_ms(attempt, self._retry_backoff_s * 1000, jitter=random.random()) / 1000
            if time.monotonic() + wait_s >= deadline:
                raise ClusterUnreachableError(f"broker {broker_id} at {address} did not list its {what} in time "
                                              f"({code.name}: {message})")
            await asyncio.sleep(wait_s)

    # -- transactions ----------------------------------------------------------------------------

    def list_transactions(self, states: Iterable[str] | None = None) -> list[TransactionListing]:
        """Every transactional id of the cluster (or those in the given states, Kafka's names: Empty,
        Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, CompleteAbort, Dead); each broker answers
        for the ids it coordinates, and the answers are merged."""
        request = requests.list_transactions_request(states or ())
        return self._io.run(self._list_everywhere("ListTransactions", request, requests.listed_transactions,
                                                  lambda txn: txn.transactional_id, "transactions"),
                            self._request_timeout_s + 5, what="listing transactions")

    def describe_transactions(self, transactional_ids: Iterable[str]) -> list[TransactionDescription]:
        """Each transactional id's state, producer id and epoch, timeout and open transaction, from its
        coordinator; AdminError (TRANSACTIONAL_ID_NOT_FOUND, ...) for the first that cannot be described."""
        described = []
        for transactional_id in transactional_ids:
            if not isinstance(transactional_id, str) or not transactional_id.strip():
                raise AdminError("the transactional id must not be empty", ErrorCode.INVALID_REQUEST)
            response, coordinator = self._io.run(
                self._transactions.call(transactional_id, "DescribeTransactions",
                                        requests.describe_transactions_request([transactional_id]),
                                        lambda r: [ErrorCode.of(t.error_code) for t in r.transactions],
                                        self._request_timeout_s),
                self._request_timeout_s + 5, what=f"describing transactional id {transactional_id!r}")
            (code, message), description = requests.described_transactions(response, coordinator).get(
                transactional_id, ((ErrorCode.UNKNOWN_SERVER_ERROR, "the answer left the id out"), None))
            if description is None:
                if code is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                    raise AdminError(f"transactional id {transactional_id!r} does not exist", code)
                raise AdminError(f"transactional id {transactional_id!r}: {code.name}: {message}", code)
            described.append(description)
        return described

    def end_transaction(self, prepared: PreparedTransaction, *, commit: bool) -> None:
        """Commit or abort a transaction that a producer prepared (prepare_transaction()) and left open:
        EndTxn for its transactional id, producer id and epoch, as that producer would send it, so the
        decision can be made by another process (a two-phase commit's coordinator). Sent again after
        a retriable answer; ending one already ended the same way answers as the first time.
        ProducerFencedError when the transaction is no longer that producer's to end: a newer producer
        of the id fenced it (and aborted the transaction). TransactionAbortedError for a commit of a
        transaction its coordinator aborted after the transaction timeout."""
        request = requests.end_txn_request(prepared.transactional_id, prepared.producer_id,
                                           prepared.producer_epoch, commit)
        response, _ = self._io.run(
            self._transactions.call(prepared.transactional_id, "EndTxn", request,
                                    lambda r: [ErrorCode.of(r.error_code)], self._request_timeout_s,
                                    passing=retried(Request.END_TXN)),
            self._request_timeout_s + 5, what=f"ending transactional id {prepared.transactional_id!r}'s transaction")
        code = ErrorCode.of(response.error_code)
        outcome = reaction(Request.END_TXN, code)
        if outcome is Reaction.DONE:
            return
        detail = (f"{'committing' if commit else 'aborting'} the transaction of transactional id "
                  f"{prepared.transactional_id!r} (producer {prepared.producer_id}, epoch {prepared.producer_epoch}) "
                  f"failed with {code.name}" + (f": {response.error_message}" if response.error_message else ""))
        if outcome is Reaction.FENCED:
            raise ProducerFencedError(f"{detail}; a newer producer of the id fenced it, and it was aborted", code)
        if commit and code is ErrorCode.TRANSACTION_ABORTABLE:
            raise TransactionAbortedError(f"{detail}; none of its records or offsets are visible", code)
        raise AdminError(detail, code)

    def describe_producers(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition,
                                                                                list[ProducerDescription]]:
        """The active producers of each partition, from its leader (Kafka's describeProducers):
        UnknownTopicError or AdminError for a partition that does not exist."""
        tps = [TopicPartition(*tp) for tp in partitions]
        self._check_partitions(tps)
        return self._io.run(self._at_leaders(
            tps, lambda stub, asked: stub.DescribeProducers(broker_requests.describe_producers_request(asked),
                                                            timeout=self._request_timeout_s),
            broker_requests.described_producers, "describing the producers"),
            self._request_timeout_s + 5, what="describing producers")

    def abort_transaction(self, spec: AbortTransactionSpec) -> None:
        """Write an ABORT marker for the producer's open transaction on one partition, as its coordinator
        would (Kafka's abortTransaction): for a hanging transaction, that no coordinator will end. The marker
        carries the epoch above `spec.producer_epoch` (every end bumps it, KIP-890), so the producer's
        later writes there at that epoch are refused. Needs ClusterAction on the cluster.
        AdminError when the transaction has ended already or a newer coordinator wrote there."""
        tp = TopicPartition(*spec.topic_partition)
        marker_epoch = abort_marker_epoch(spec.producer_epoch)
        if marker_epoch is None:
            raise AdminError(f"producer {spec.producer_id}'s epoch {spec.producer_epoch} leaves no epoch for a "
                             f"marker above it", ErrorCode.INVALID_REQUEST, tp.topic)
        self._check_partitions([tp])
        request = broker_requests.abort_marker_request(tp, spec.producer_id, marker_epoch,
                                                       abort_coordinator_epoch(spec.coordinator_epoch))
        try:
            self._io.run(self._at_leaders(
                [tp], lambda stub, _: stub.WriteTxnMarkers(request, timeout=self._request_timeout_s),
                broker_requests.written_markers, "writing the abort marker"),
                self._request_timeout_s + 5, what=f"aborting a transaction on {tp}")
        except AdminError as error:
            if error.error_code is ErrorCode.INVALID_PRODUCER_EPOCH:
                raise AdminError(f"producer {spec.producer_id} has no transaction at epoch {spec.producer_epoch} "
                                 f"open on {tp} any more: its epoch there is higher (the transaction ended)",
                                 error.error_code, tp.topic) from None
            if error.error_code is ErrorCode.TRANSACTION_COORDINATOR_FENCED:
                raise AdminError(f"a coordinator epoch above {spec.coordinator_epoch} wrote a marker for producer "
                                 f"{spec.producer_id} on {tp}; name its epoch (see `replog producers`)",
                                 error.error_code, tp.topic) from None
            raise

    def _check_partitions(self, tps: list[TopicPartition]) -> None:
        """UnknownTopicError or AdminError for a partition that does not exist."""
        _check_partitions_in(self._refresh(sorted({tp.topic for tp in tps})), tps)

    async def _at_leaders(self, tps: list[TopicPartition], call: Callable, read: Callable, what: str) -> dict:
        """Ask each partition's leader (`call(stub, partitions)`), finding leaders again after a retriable
        answer, until every partition has answered; `read` turns an answer into {partition: (code, message,
        value)}, and the values come back by partition."""
        deadline = time.monotonic() + self._request_timeout_s
        found: dict = {}
        attempt = 0
        while True:
            metadata = self._metadata.current
            by_leader: dict[int, list[TopicPartition]] = {}
            for tp in tps:
                if tp not in found and metadata.leader_of(tp) >= 0:
                    by_leader.setdefault(metadata.leader_of(tp), []).append(tp)
            problem = "no leader known"
            for leader, asked in by_leader.items():
                address = metadata.brokers[leader]
                try:
                    response = await call(self._channels.broker(address), asked)
                except grpc.aio.AioRpcError as error:
                    if error.code() is grpc.StatusCode.UNIMPLEMENTED:
                        raise ServerUnsupportedError(f"broker {leader} at {address} does not support {what}: "
                                                     f"{error.details()}") from None
                    code = error_code_for_status(error.code())
                    if not code.retriable:
                        raise AdminError(f"{what} failed: broker {leader} at {address} answered "
                                         f"{error.code().name}: {error.details()}", code) from None
                    problem = f"broker {leader} at {address} answered {error.code().name}: {error.details()}"
                    continue
                for tp, (code, message, value) in read(response).items():
                    if code is ErrorCode.NONE:
                        found[tp] = value
                    elif not code.retriable:
                        raise AdminError(f"{what} of {tp} failed: {code.name}: {message}", code, tp.topic)
                    else:
                        problem = f"{tp}: {code.name}: {message}"
            if len(found) == len(set(tps)):
                return {tp: found[tp] for tp in tps}
            attempt += 1
            wait_s = backoff_ms(attempt, self._retry_backoff_s * 1000, jitter=random.random()) / 1000
            if time.monotonic() + wait_s >= deadline:
                raise ClusterUnreachableError(f"no leader answered {what} in time ({problem})")
            await asyncio.sleep(wait_s)
            await self._metadata.refresh()

    @property
    def _request_timeout_s(self) -> float:
        return self._request_timeout_ms / 1000

    def cluster(self) -> ClusterMetadata:
        """Brokers, the active controller and every topic, as the metadata service sees them now."""
        return self._refresh(None)

    # -- on the I/O loop -------------------------------------------------------------------------

    def _refresh(self, names: list[str] | None) -> ClusterMetadata:
        return self._io.run(self._metadata.refresh(names or None), self._request_timeout_ms / 1000 + 5,
                            what="asking the metadata service")

    def _controller_call(self, what: str, call: Callable[[object, float], Awaitable[T]],
                         codes: Callable[[T], list[tuple[str, int]]], timeout_ms: int = 0) -> T:
        """One request to the active controller, found again after NOT_CONTROLLER; timeout_ms is
        how long the controller itself may take, on top of the request timeout."""
        wait_s = (self._request_timeout_ms + timeout_ms + DEADLINE_MARGIN_MS) / 1000
        return self._io.run(self._at_controller(
            lambda stub: call(stub, wait_s),
            lambda r: any(ErrorCode.of(code) is ErrorCode.NOT_CONTROLLER for _, code in codes(r)),
            wait_s,
        ), wait_s + 5, what=what)

    async def _create_topics(self, request: controller_pb2.CreateTopicsRequest, wait_s: float):
        return await self._at_controller(
            lambda stub: stub.CreateTopics(request, timeout=wait_s),
            lambda r: any(ErrorCode.of(t.error_code) is ErrorCode.NOT_CONTROLLER for t in r.topics),
            wait_s,
        )

    async def _at_controller(
        self, call: Callable[[object], Awaitable[T]], not_controller: Callable[[T], bool], wait_s: float
    ) -> T:
        """Call the active controller, looking it up again after NOT_CONTROLLER or a lost connection."""
        deadline = time.monotonic() + wait_s
        refresh = self._metadata.current.controller_address is None
        while True:
            metadata = await self._metadata.refresh() if refresh else self._metadata.current
            refresh = True
            address = metadata.controller_address
            problem = "no controller is active"
            if address is not None:
                try:
                    response = await call(self._channels.controller(address))
                except grpc.aio.AioRpcError as error:
                    if error.code() is grpc.StatusCode.UNIMPLEMENTED:
                        raise ServerUnsupportedError(f"the controller at {address} does not implement this "
                                                     f"request yet: {error.details()}") from None
                    code = error_code_for_status(error.code())
                    if not code.retriable:
                        raise AdminError(f"the controller at {address} answered {error.code().name}: "
                                         f"{error.details()}", code) from None
                    problem = f"the controller at {address} answered {error.code().name}"
                else:
                    if not not_controller(response):
                        return response
                    problem = f"the controller at {address} is no longer active"
            if time.monotonic() + self._retry_backoff_s >= deadline:
                raise ClusterUnreachableError(f"{problem}; gave up after {wait_s:g} s")
            await asyncio.sleep(self._retry_backoff_s)

    async def _await_visible(self, names: list[str], wait_s: float,
                             counts: Mapping[str, int] | None = None) -> None:
        """Until the metadata service shows the topics (with `counts` partitions), each with a leader."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            metadata = await self._metadata.refresh(names)
            if all(name in metadata.topics and all(p.leader >= 0 for p in metadata.topics[name].partitions)
                   and len(metadata.topics[name].partitions) >= (counts or {}).get(name, 0)
                   for name in names):
                return
            await asyncio.sleep(METADATA_POLL_S)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._io.run(self._channels.close(), 10, what="closing the admin client's connections")
        self._io.stop()

    def __enter__(self) -> Admin:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _check_group_id(group_id: str) -> None:
    if not isinstance(group_id, str) or not group_id:
        raise AdminError("the group id must not be empty", ErrorCode.INVALID_GROUP_ID)


def _group_failure(group_id: str, code: ErrorCode, message: str) -> str:
    if code is ErrorCode.GROUP_ID_NOT_FOUND:
        return f"group {group_id!r} does not exist"
    if code is ErrorCode.NON_EMPTY_GROUP:
        return f"group {group_id!r} has active members; stop its consumers first"
    detail = f": {message}" if message else ""
    return f"group {group_id!r}: {code.name}{detail}"


def _offset_delete_codes(response) -> list[ErrorCode]:
    (code, _), results = requests.offset_delete_results(response)
    return [code, *(c for c, _ in results.values())]


def _state_number(state: str) -> int:
    for number, name in requests.GROUP_STATES.items():
        if name.lower() == state.lower():
            return number
    raise ClientError(f"a group state is one of {', '.join(requests.GROUP_STATES.values())}, not {state!r}",
                      ErrorCode.INVALID_REQUEST)


def _described_topics(metadata: ClusterMetadata, names: Iterable[str]) -> list[TopicDescription]:
    """The named topics as the metadata describes them; UnknownTopicError or AdminError for the first it lacks."""
    described = []
    for name in names:
        if name in metadata.topics:
            described.append(metadata.topics[name])
            continue
        error = metadata.topic_errors.get(name)
        if error is None or error.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise UnknownTopicError(name)
        raise AdminError(_topic_failure(name, error.error_code, error.message), error.error_code, name)
    return described


def _check_partitions_in(metadata: ClusterMetadata, tps: Iterable[TopicPartition]) -> None:
    """UnknownTopicError or AdminError for a partition the metadata says does not exist."""
    for tp in tps:
        count = len(_described_topics(metadata, [tp.topic])[0].partitions)
        if not 0 <= tp.partition < count:
            raise AdminError(f"topic {tp.topic!r} has partitions 0..{count - 1}, not {tp.partition}",
                             ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, tp.topic)


def _timestamp_of(spec: str | int) -> int:
    if spec in LIST_OFFSETS_TIMESTAMP:
        return LIST_OFFSETS_TIMESTAMP[spec]
    if isinstance(spec, int) and spec >= 0:
        return spec
    raise ClientError(f"an offset spec is 'earliest', 'latest' or a time in ms, not {spec!r}",
                      ErrorCode.INVALID_REQUEST)


def _creatable(topic: NewTopic) -> controller_pb2.CreatableTopic:
    if topic.replica_assignment is not None:
        return controller_pb2.CreatableTopic(
            name=topic.name, num_partitions=-1, replication_factor=-1,
            assignments=[controller_pb2.ReplicaAssignment(partition=p, broker_ids=list(ids))
                         for p, ids in sorted(topic.replica_assignment.items())],
            configs=dict(topic.configs),
        )
    return controller_pb2.CreatableTopic(name=topic.name, num_partitions=topic.num_partitions,
                                         replication_factor=topic.replication_factor, configs=dict(topic.configs))


def _topic_failure(name: str, code: ErrorCode, message: str) -> str:
    detail = f": {message}" if message else ""
    return f"topic {name!r}: {code.name}{detail}"


def _resource_type(name: str) -> int:
    if name not in RESOURCE_TYPES:
        raise AdminError(f"the resource type is topic or broker, not {name!r}", ErrorCode.INVALID_REQUEST)
    return RESOURCE_TYPES[name]


def _topic_partitions(partitions: Iterable[TopicPartition]) -> list[common_pb2.TopicPartitions]:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [common_pb2.TopicPartitions(topic=t, partitions=p) for t, p in by_topic.items()]


def _raise_topic_errors(results: list[tuple[str, int, str]]) -> None:
    errors = {name: AdminError(_topic_failure(name, ErrorCode.of(code), message), ErrorCode.of(code), name)
              for name, code, message in results if ErrorCode.of(code) is not ErrorCode.NONE}
    if errors:
        first = next(iter(errors.values()))
        first.errors = errors
        raise first


def _raise_resource_error(resource_type: str, name: str, code: int, message: str) -> None:
    error = ErrorCode.of(code)
    if error is not ErrorCode.NONE:
        detail = f": {message}" if message else ""
        raise AdminError(f"{resource_type} {name!r}: {error.name}{detail}", error,
                         name if resource_type == "topic" else None)


def _raise_request_error(what: str, code: int, message: str) -> None:
    error = ErrorCode.of(code)
    if error is not ErrorCode.NONE:
        raise AdminError(f"{what} failed: {error.name}: {message}", error)
