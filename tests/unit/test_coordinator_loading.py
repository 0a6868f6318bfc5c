"""A broker whose group coordinator is still loading a partition of __consumer_offsets says so when
asked to list its groups, rather than leaving that partition's groups out (Kafka answers
COORDINATOR_LOAD_IN_PROGRESS; the admin client then asks again). Without it, `replog groups list`
run during a coordinator failover silently misses groups."""

import asyncio

from replog.api.coordinator.v1 import coordinator_pb2
from replog.broker.coordinator_servicer import CoordinatorServicer, InternalTopicSettings
from replog.broker.group_coordinator import GroupCoordinators
from replog.broker.partitions import Partitions, TopicSettings
from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.group.placement import OFFSETS_TOPIC
from replog.core.group.requests import GroupConfig
from replog.core.messages import PartitionState
from replog.storage import LogConfig


def test_list_groups_while_a_coordinator_loads_answers_load_in_progress(tmp_path):
    async def scenario():
        settings = TopicSettings(LogConfig(), ReplicaConfig())
        coordinators: GroupCoordinators | None = None

        def role_changed(driver):
            if coordinators is not None and driver.topic == OFFSETS_TOPIC:
                coordinators.leadership_changed(driver)

        partitions = Partitions(1, (str(tmp_path),), lambda _: settings, lambda *_: None, lambda *_: None,
                                role_changed=role_changed)
        partitions.start()
        coordinators = GroupCoordinators(partitions, GroupConfig(), 600_000, 5_000)
        servicer = CoordinatorServicer(coordinators, None, None, None, None, InternalTopicSettings(), InternalTopicSettings())
        # Leader of an offsets partition: its shard replays the partition before it serves (LOADING).
        partitions.leader_and_isr(OFFSETS_TOPIC, 0, PartitionState(leader=1, leader_epoch=1, isr=(1,),
                                                                    partition_epoch=0, replicas=(1,)))
        response = await servicer.ListGroups(coordinator_pb2.ListGroupsRequest(), None)
        await coordinators.stop()  # no replay left pending when the loop closes
        await partitions.close()
        return ErrorCode.of(response.error_code)

    assert asyncio.run(scenario()) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
