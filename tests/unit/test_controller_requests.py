"""The requests the controller builds for brokers, from its records (replog.rpc.broker_convert)."""

from replog.core.topic_partition import TopicPartition
from replog.rpc import broker_convert
from replog.zk.records import LeaderAndIsr
from replog.zk.store import BrokerRegistration

ORDERS_0 = TopicPartition("orders", 0)
STATE = LeaderAndIsr(leader=2, leader_epoch=5, isr=(2, 3), controller_epoch=9, partition_epoch=8)
HEADER = broker_convert.ControllerHeader(controller_id=1, controller_epoch=9, broker_epoch=1234)


def test_leader_and_isr_carries_the_state_the_replicas_and_the_header():
    state = broker_convert.leader_and_isr_state(ORDERS_0, "id-1", STATE, (1, 2, 3), is_new=True, adding=(3,))
    endpoint = broker_convert.broker_endpoint(BrokerRegistration(2, "h", 9092, None, 0, 77))
    request = broker_convert.leader_and_isr_request(HEADER, [state], [endpoint])
    assert (request.controller_id, request.controller_epoch, request.broker_epoch) == (1, 9, 1234)
    (sent,) = request.partition_states
    assert (sent.topic, sent.partition, sent.topic_id, sent.leader, sent.leader_epoch, sent.partition_epoch) == \
        ("orders", 0, "id-1", 2, 5, 8)
    assert (list(sent.isr), list(sent.replicas), list(sent.adding_replicas)) == ([2, 3], [1, 2, 3], [3])
    assert sent.is_new
    assert [(e.broker_id, e.host, e.port, e.rack) for e in request.live_leaders] == [(2, "h", 9092, "")]


def test_update_metadata_names_the_replicas_that_are_not_live():
    state = broker_convert.update_metadata_state(ORDERS_0, "id-1", STATE, (1, 2, 3), live=[2, 3])
    assert list(state.offline_replicas) == [1]


def test_a_deleting_stop_replica_passes_every_leader_epoch():
    partition = broker_convert.stop_replica_partition(ORDERS_0, delete=True)
    request = broker_convert.stop_replica_request(HEADER, [partition])
    assert request.partitions[0].leader_epoch == broker_convert.DELETION_LEADER_EPOCH
    assert request.partitions[0].delete_partition and request.broker_epoch == 1234
