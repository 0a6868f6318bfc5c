"""DescribeConfigs and AlterConfigs at the active controller.

Topic configs live in `/config/topics/<topic>` (only the ones a topic sets);
they are checked against the one table of `replog.core.topic_configs`, the same
one creation uses. Brokers watch the configs of the topics they host and apply
a change at once. The controller applies `unclean.leader.election.enable`
itself, at once: turning it on gives offline partitions of the topic a leader.

Broker configs are static (properties file, REPLOG_* variables): describing a
broker shows what its registration in ZooKeeper records, read-only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from replog.controller.context import ControllerContext
from replog.core.config_resources import ConfigEntry, ConfigSource, DescribedConfigs, Resource, ResourceType
from replog.core.errors import ErrorCode
from replog.core.outcome import SUCCESS, Outcome
from replog.core.topic_configs import (
    ConfigChange,
    InvalidConfig,
    apply_config_changes,
    described,
    unclean_leader_election_enabled,
)

if TYPE_CHECKING:
    from replog.controller.driver import Controller

log = logging.getLogger("replog.controller")


class ConfigAdmin:
    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    async def describe(self, requests: Sequence[tuple[Resource, Sequence[str]]]) -> list[DescribedConfigs]:
        """The configs of each resource: the named ones, or all when none are named."""

        def failed(error: ErrorCode, message: str) -> list[DescribedConfigs]:
            return [DescribedConfigs(resource, Outcome(error, message)) for resource, _ in requests]

        async def describe_all(context: ControllerContext) -> list[DescribedConfigs]:
            return [self._describe(context, resource, names) for resource, names in requests]

        return await self._controller.answer("describe configs", describe_all, failed)

    @staticmethod
    def _describe(context: ControllerContext, resource: Resource, names: Sequence[str]) -> DescribedConfigs:
        if resource.type is ResourceType.TOPIC:
            if resource.name not in context.assignments:
                return DescribedConfigs(resource, Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                            f"topic {resource.name!r} does not exist"))
            entries = tuple(
                ConfigEntry(name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG if is_set else ConfigSource.DEFAULT_CONFIG,
                            read_only=False)
                for name, value, is_set in described(context.configs.get(resource.name, {}), names))
            return DescribedConfigs(resource, SUCCESS, entries)
        if resource.type is ResourceType.BROKER:
            broker = _broker_id(resource.name)
            registration = context.brokers.get(broker) if broker is not None else None
            if registration is None:
                return DescribedConfigs(resource, Outcome(
                    ErrorCode.BROKER_NOT_AVAILABLE, f"{resource.name!r} is not the id of a live broker; "
                    f"live brokers: {sorted(context.brokers)}"))
            values = {"broker.id": str(registration.broker_id), "broker.rack": registration.rack,
                      "advertised.listeners": f"{registration.host}:{registration.port}"}
            entries = tuple(ConfigEntry(name, value, ConfigSource.STATIC_BROKER_CONFIG, read_only=True)
                            for name, value in values.items() if not names or name in names)
            return DescribedConfigs(resource, SUCCESS, entries)
        return DescribedConfigs(resource, Outcome(ErrorCode.INVALID_REQUEST, "give the resource type: topic or broker"))

    async def alter(self, requests: Sequence[tuple[Resource, Sequence[ConfigChange]]], *,
                    validate_only: bool) -> list[Outcome]:
        """Change each resource's configs, all of its changes or none; one answer per resource."""

        def failed(error: ErrorCode, message: str) -> list[Outcome]:
            return [Outcome(error, message) for _ in requests]

        async def alter_all(context: ControllerContext) -> list[Outcome]:
            return [await self._alter(context, resource, changes, validate_only) for resource, changes in requests]

        return await self._controller.answer("alter configs", alter_all, failed)

    async def _alter(self, context: ControllerContext, resource: Resource, changes: Sequence[ConfigChange],
                     validate_only: bool) -> Outcome:
        if resource.type is ResourceType.BROKER:
            return Outcome(ErrorCode.INVALID_REQUEST,
                             "broker configs cannot be changed while the broker runs: set them in its properties "
                             "file (or REPLOG_* variables) and restart it")
        if resource.type is not ResourceType.TOPIC:
            return Outcome(ErrorCode.INVALID_REQUEST, "give the resource type: topic or broker")
        topic = resource.name
        if topic not in context.assignments:
            return Outcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} does not exist")
        before = context.configs.get(topic, {})
        try:
            after = apply_config_changes(before, changes)
        except InvalidConfig as error:
            return Outcome(ErrorCode.INVALID_CONFIG, str(error))
        if validate_only or after == before:
            return SUCCESS
        await self._controller.store.write_topic_config(context.lease, topic, after)
        context.configs[topic] = after
        log.info("topic %r configs %s -> %s", topic, before, after)
        if unclean_leader_election_enabled(after) and not unclean_leader_election_enabled(before):
            # Offline partitions of the topic may now take an out-of-sync replica as leader.
            await self._controller.broker_changes.reconcile_topic(context, topic)
        return SUCCESS


def _broker_id(name: str) -> int | None:
    try:
        return int(name)
    except ValueError:
        return None
