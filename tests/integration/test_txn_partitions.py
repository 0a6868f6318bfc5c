"""Transactions on a partition of real brokers, driven by hand with the raw RPCs (producer, then the
coordinator's markers): the last stable offset holds read_committed consumers below an open
transaction, markers end transactions on the leader and on every follower, a late write or a late
marker of an ended transaction is refused, and a new leader after a SIGKILL lists the same aborted
transactions from its own .txnindex. The markers are written by hand here, so the cluster runs without
the coordinator's verification (transaction.partition.verification.enable=false)."""

from __future__ import annotations

import grpc
import pytest

from replog.api.broker.v1 import broker_pb2 as bp
from replog.api.broker.v1 import broker_pb2_grpc as bg
from replog.api.common.v1 import common_pb2
from replog.api.coordinator.v1 import coordinator_pb2 as cp
from replog.api.coordinator.v1 import coordinator_pb2_grpc as cg
from replog.client import Admin, NewTopic, TopicPartition
from replog.core.errors import ErrorCode
from replog.core.txn.read_committed import read_committed
from replog.protocol import encode_batch
from replog.protocol.batch import iter_batches
from replog.protocol.control import fetched_batch
from tests.integration.cluster import started, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

TOPIC = "txn-partition"
TP = TopicPartition(TOPIC, 0)
READ_COMMITTED = bp.ISOLATION_LEVEL_READ_COMMITTED
READ_UNCOMMITTED = bp.ISOLATION_LEVEL_READ_UNCOMMITTED


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from started(tmp_path_factory, "cluster", "--brokers", "3", "--controllers", "2",
                       "--config", "transaction.partition.verification.enable=false")


def stub(address: str) -> bg.BrokerServiceStub:
    return bg.BrokerServiceStub(grpc.insecure_channel(address))


def produce(broker: bg.BrokerServiceStub, values: list[bytes], producer_id: int, epoch: int, sequence: int,
            transactional_id: str = "t1") -> ErrorCode:
    batch = encode_batch([(None, value) for value in values], producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence,
                         transactional=True)
    request = bp.ProduceRequest(transactional_id=transactional_id, acks=-1, timeout_ms=10_000)
    request.topics.add(topic=TOPIC).partitions.add(partition=0, records=batch, current_leader_epoch=-1)
    answer = broker.Produce(request, timeout=30)
    return ErrorCode.of(answer.topics[0].partitions[0].error_code)


def write_marker(broker: bg.BrokerServiceStub, producer_id: int, epoch: int, commit: bool,
                 coordinator_epoch: int = 0) -> ErrorCode:
    request = bp.WriteTxnMarkersRequest()
    request.markers.add(producer_id=producer_id, producer_epoch=epoch, committed=commit,
                        coordinator_epoch=coordinator_epoch,
                        topics=[common_pb2.TopicPartitions(topic=TOPIC, partitions=[0])])
    answer = broker.WriteTxnMarkers(request, timeout=60)
    return ErrorCode.of(answer.markers[0].results[0].error_code)


def fetch(broker: bg.BrokerServiceStub, isolation_level: int) -> bp.FetchPartitionResponse:
    request = bp.FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 20, isolation_level=isolation_level)
    request.topics.add(topic=TOPIC).partitions.add(partition=0, fetch_offset=0, current_leader_epoch=-1,
                                                   partition_max_bytes=1 << 20)
    return broker.Fetch(request, timeout=30).topics[0].partitions[0]


def visible(answer: bp.FetchPartitionResponse) -> list[bytes]:
    """What a read_committed consumer hands its application from this answer."""
    batches = [fetched_batch(batch) for batch in iter_batches(answer.records)]
    aborted = [(a.producer_id, a.first_offset) for a in answer.aborted_transactions]
    return [record.value for record in read_committed(batches, aborted, answer.last_stable_offset)]


def latest(broker: bg.BrokerServiceStub, isolation_level: int) -> int:
    request = bp.ListOffsetsRequest(replica_id=-1, isolation_level=isolation_level)
    request.topics.add(topic=TOPIC).partitions.add(partition=0, timestamp_ms=-1, current_leader_epoch=-1)
    return broker.ListOffsets(request, timeout=30).topics[0].partitions[0].offset


def test_markers_end_transactions_on_every_replica_and_read_committed_sees_only_commits(cluster):
    bootstrap = cluster.status()["metadata"][0]["address"]
    addresses = {b["id"]: b["address"] for b in cluster.status()["brokers"]}
    with Admin(bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, 1, 3, configs={"min.insync.replicas": "2"})])
        wait_for(lambda: admin.cluster().leader_of(TP) >= 0, 30, "a leader")
        leader_id = admin.cluster().leader_of(TP)
        leader = stub(addresses[leader_id])
        with grpc.insecure_channel(addresses[leader_id]) as channel:
            pid = cg.CoordinatorServiceStub(channel).InitProducerId(
                cp.InitProducerIdRequest(producer_id=-1, producer_epoch=-1), timeout=30).producer_id

        # An open transaction holds the LSO at its first offset.
        assert produce(leader, [b"a1", b"a2"], pid, 0, 0) == ErrorCode.NONE
        open_answer = fetch(leader, READ_COMMITTED)
        assert (open_answer.high_watermark, open_answer.last_stable_offset) == (2, 0)
        assert not open_answer.records and visible(open_answer) == []
        assert latest(leader, READ_COMMITTED) == 0 and latest(leader, READ_UNCOMMITTED) == 2
        assert len(list(iter_batches(fetch(leader, READ_UNCOMMITTED).records))) == 1

        # ABORT at the bumped epoch; a retry of the marker finds it written already.
        assert write_marker(leader, pid, 1, commit=False) == ErrorCode.NONE
        assert write_marker(leader, pid, 1, commit=False) == ErrorCode.INVALID_PRODUCER_EPOCH
        # A delayed write of the aborted transaction is refused; so is a marker of an older coordinator.
        assert produce(leader, [b"late"], pid, 0, 2) == ErrorCode.INVALID_PRODUCER_EPOCH
        assert write_marker(leader, pid, 2, commit=True, coordinator_epoch=-1) == \
            ErrorCode.TRANSACTION_COORDINATOR_FENCED

        # The next transaction commits.
        assert produce(leader, [b"c1", b"c2", b"c3"], pid, 1, 0) == ErrorCode.NONE
        assert write_marker(leader, pid, 2, commit=True) == ErrorCode.NONE
        done = fetch(leader, READ_COMMITTED)
        assert done.last_stable_offset == done.high_watermark == 7
        assert [(a.producer_id, a.first_offset) for a in done.aborted_transactions] == [(pid, 0)]
        assert visible(done) == [b"c1", b"c2", b"c3"]
        assert latest(leader, READ_COMMITTED) == 7

        # Followers completed the transactions from the markers they fetched: a new leader answers alike.
        cluster.signal("broker", leader_id, "KILL")
        wait_for(lambda: admin.cluster().leader_of(TP) not in (leader_id, -1), 60, "a new leader")
        successor = stub(addresses[admin.cluster().leader_of(TP)])
        answer = wait_for(lambda: (a := fetch(successor, READ_COMMITTED)).high_watermark == 7 and a, 30,
                          "the new leader's high watermark")
        assert answer.last_stable_offset == 7
        assert [(a.producer_id, a.first_offset) for a in answer.aborted_transactions] == [(pid, 0)]
        assert visible(answer) == [b"c1", b"c2", b"c3"]

        # The killed broker recovers its log and .txnindex, and serves the same when it leads again.
        cluster("dev", "start", "broker", str(leader_id))
        wait_for(lambda: leader_id in admin.describe_topics([TOPIC])[0].partitions[0].isr, 60,
                 "the restarted broker back in the ISR")
