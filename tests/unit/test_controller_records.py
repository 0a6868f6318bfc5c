"""The controller's ZooKeeper records: the znode JSON, and a partition state between the znode and the core."""

from replog.core.messages import PartitionState
from replog.zk.records import LeaderAndIsr, TopicAssignment


def test_a_partition_state_crosses_between_the_znode_and_the_core_with_its_replicas_from_the_topic():
    stored = LeaderAndIsr(leader=2, leader_epoch=5, isr=(2, 3), controller_epoch=9, partition_epoch=8)
    core = stored.to_core((1, 2, 3))
    assert core == PartitionState(leader=2, leader_epoch=5, isr=(2, 3), partition_epoch=8, replicas=(1, 2, 3))
    assert LeaderAndIsr.from_core(core, controller_epoch=9) == stored
    assert LeaderAndIsr.from_core(core, controller_epoch=10).controller_epoch == 10


def test_znode_json_round_trips():
    assignment = TopicAssignment("id", {0: (1, 2), 1: (2, 3)})
    assert TopicAssignment.from_json(assignment.to_json()) == assignment
    assert b'"version":3' in assignment.to_json() and b'"partitions":{"0":[1,2],"1":[2,3]}' in assignment.to_json()
    partition_state = LeaderAndIsr(leader=1, leader_epoch=4, isr=(1, 2), controller_epoch=1, partition_epoch=7)
    assert LeaderAndIsr.from_json(partition_state.to_json()) == partition_state
