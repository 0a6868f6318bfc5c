"""The transaction coordinator on real brokers, driven with the raw gRPC API as a client library would drive it.

Given a dev cluster of three brokers: a transaction's records reach read_committed consumers once it commits
and never when it aborts; bad requests are refused with a clear error and write nothing; a new producer
instance fences the old one; a transaction left open past its timeout is aborted; a write delayed past its
transaction's end is refused (KIP-890); a coordinator SIGKILLed after the decision and before the markers
is succeeded by one that completes the commit; offsets committed in a transaction stay invisible until it
commits and vanish if it aborts, through a failover of the group coordinator too; a COMPLETE_COMMIT that
min.insync.replicas refuses holds the next transaction back, and the log it leaves loads on a new coordinator;
the next transaction's AddPartitionsToTxn is held while the last one completes; on transaction version 2 the
partition leaders add the partitions and the producer sends no AddPartitionsToTxn (KIP-890 part 2).
"""

from __future__ import annotations

import concurrent.futures
import time
import urllib.request

import grpc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from replog.api.broker.v1 import broker_pb2 as bp
from replog.api.broker.v1 import broker_pb2_grpc as bg
from replog.api.common.v1 import common_pb2
from replog.api.coordinator.v1 import coordinator_pb2 as cp
from replog.api.coordinator.v1 import coordinator_pb2_grpc as cg
from replog.client import Admin, NewTopic, Producer, TopicPartition
from replog.core.errors import ErrorCode
from replog.core.group.placement import OFFSETS_TOPIC, partition_for
from replog.core.txn import records as txn_records
from replog.core.txn.placement import TRANSACTION_STATE_TOPIC, partition_for_transactional_id
from replog.core.txn.read_committed import read_committed
from replog.protocol import encode_batch
from replog.protocol.batch import iter_batches
from replog.protocol.control import fetched_batch
from tests.integration.cluster import started, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

TOPIC = "txn-data"
# Errors a client retries (after finding the coordinator again for the first two).
RETRIABLE = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
             ErrorCode.CONCURRENT_TRANSACTIONS}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """Three brokers; timed-out transactions are looked for every second; small internal topics start faster."""
    yield from started(tmp_path_factory, "cluster", "--brokers", "3", "--controllers", "2",
                       "--config", "transaction.abort.timed.out.transaction.cleanup.interval.ms=1000",
                       "--config", "transaction.state.log.num.partitions=10",
                       "--config", "offsets.topic.num.partitions=10")


@pytest.fixture(scope="module")
def admin(cluster):
    with Admin(cluster.status()["metadata"][0]["address"]) as client:
        client.create_topics([NewTopic(TOPIC, 2, 3, configs={"min.insync.replicas": "2"})])
        wait_for(lambda: all(p.leader >= 0 for p in client.describe_topics([TOPIC])[0].partitions), 60, "leaders")
        yield client


def addresses(cluster) -> dict[int, str]:
    return {b["id"]: b["address"] for b in cluster.status()["brokers"] if b["alive"]}


def find(cluster, key: str, key_type=cp.COORDINATOR_TYPE_TRANSACTION) -> tuple[int, str] | None:
    for address in addresses(cluster).values():
        try:
            with grpc.insecure_channel(address) as channel:
                answer = cg.CoordinatorServiceStub(channel).FindCoordinator(
                    cp.FindCoordinatorRequest(keys=[key], key_type=key_type), timeout=10).coordinators[0]
        except grpc.RpcError:
            continue
        if answer.error_code == ErrorCode.NONE:
            return answer.coordinator.broker_id, f"{answer.coordinator.host}:{answer.coordinator.port}"
    return None


def coordinator_of(cluster, key: str, key_type=cp.COORDINATOR_TYPE_TRANSACTION) -> tuple[int, str]:
    return wait_for(lambda: find(cluster, key, key_type), 60, f"a coordinator for {key}")


def call(cluster, key: str, method: str, request, key_type=cp.COORDINATOR_TYPE_TRANSACTION, timeout_s=90,
         retriable=RETRIABLE):
    """Ask the key's coordinator, finding it again and retrying while the answer is retriable."""
    def attempt():
        _, address = coordinator_of(cluster, key, key_type)
        try:
            with grpc.insecure_channel(address) as channel:
                answer = getattr(cg.CoordinatorServiceStub(channel), method)(request, timeout=60)
        except grpc.RpcError:
            return None
        return None if _error_of(answer) in retriable else answer
    return wait_for(attempt, timeout_s, f"{method} for {key}", interval_s=0.05)


def _error_of(answer) -> ErrorCode:
    if hasattr(answer, "error_code"):
        error = ErrorCode.of(answer.error_code)
        if error != ErrorCode.NONE or not hasattr(answer, "results"):
            return error
    results = getattr(answer, "results", None) or [p for t in getattr(answer, "topics", []) for p in t.partitions]
    errors = {ErrorCode.of(r.error_code) for r in results}
    return next(iter(errors & RETRIABLE), ErrorCode.NONE)


def init(cluster, txn_id: str, timeout_ms: int = 60_000, producer_id: int = -1, epoch: int = -1):
    return call(cluster, txn_id, "InitProducerId", cp.InitProducerIdRequest(
        transactional_id=txn_id, transaction_timeout_ms=timeout_ms, producer_id=producer_id, producer_epoch=epoch))


def add(cluster, txn_id: str, pid: int, epoch: int, partitions: dict[str, list[int]], **kwargs):
    return call(cluster, txn_id, "AddPartitionsToTxn", cp.AddPartitionsToTxnRequest(
        transactional_id=txn_id, producer_id=pid, producer_epoch=epoch,
        topics=[common_pb2.TopicPartitions(topic=t, partitions=p) for t, p in partitions.items()]), **kwargs)


def end(cluster, txn_id: str, pid: int, epoch: int, commit: bool, **kwargs):
    return call(cluster, txn_id, "EndTxn", cp.EndTxnRequest(transactional_id=txn_id, producer_id=pid,
                                                            producer_epoch=epoch, committed=commit), **kwargs)


def describe(cluster, txn_id: str) -> cp.TransactionDescription:
    return call(cluster, txn_id, "DescribeTransactions",
                cp.DescribeTransactionsRequest(transactional_ids=[txn_id]), retriable=set()).transactions[0]


def wait_state(cluster, txn_id: str, state: str, timeout_s=60) -> cp.TransactionDescription:
    return wait_for(lambda: (d := describe(cluster, txn_id)).state == state and d, timeout_s, f"{txn_id} in {state}")


_channels: dict[str, grpc.Channel] = {}


def leader_stub(admin, cluster, tp: TopicPartition) -> bg.BrokerServiceStub:
    leader = wait_for(lambda: (lid := admin.cluster().leader_of(tp)) >= 0 and lid in addresses(cluster) and (lid,),
                      90, f"a live leader of {tp}")[0]
    address = addresses(cluster)[leader]
    if address not in _channels:
        _channels[address] = grpc.insecure_channel(address)
    return bg.BrokerServiceStub(_channels[address])


def produce(admin, cluster, tp: TopicPartition, values: list[bytes], pid: int, epoch: int, sequence: int,
            txn_id: str, retry: bool = True, version: int = 0) -> ErrorCode:
    """A transactional batch to the partition's leader (`version` 2: the leader adds the partition);
    NOT_ENOUGH_REPLICAS (not verified yet), CONCURRENT_TRANSACTIONS (not added yet) and a moved leader are
    retried when `retry`."""
    batch = encode_batch([(None, v) for v in values], producer_id=pid, producer_epoch=epoch, base_sequence=sequence,
                         transactional=True)
    request = bp.ProduceRequest(transactional_id=txn_id, acks=-1, timeout_ms=10_000, transaction_version=version)
    request.topics.add(topic=tp.topic).partitions.add(partition=tp.partition, records=batch, current_leader_epoch=-1)

    def attempt():
        try:
            answer = leader_stub(admin, cluster, tp).Produce(request, timeout=30)
        except grpc.RpcError:
            return None
        error = ErrorCode.of(answer.topics[0].partitions[0].error_code)
        if retry and error in (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.NOT_LEADER_OR_FOLLOWER,
                               ErrorCode.CONCURRENT_TRANSACTIONS):
            return None
        return error
    return wait_for(attempt, 60, f"a produce answer from {tp}'s leader")


def committed_values(admin, cluster, tp: TopicPartition) -> tuple[list[bytes], int, int]:
    """What a read_committed consumer reads from the start of the partition; the HW and LSO."""
    request = bp.FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 20,
                              isolation_level=bp.ISOLATION_LEVEL_READ_COMMITTED)
    request.topics.add(topic=tp.topic).partitions.add(partition=tp.partition, fetch_offset=0, current_leader_epoch=-1,
                                                      partition_max_bytes=1 << 20)
    answer = leader_stub(admin, cluster, tp).Fetch(request, timeout=30).topics[0].partitions[0]
    batches = [fetched_batch(batch) for batch in iter_batches(answer.records)]
    aborted = [(a.producer_id, a.first_offset) for a in answer.aborted_transactions]
    values = [r.value for r in read_committed(batches, aborted, answer.last_stable_offset)]
    return values, answer.high_watermark, answer.last_stable_offset


def stable_values(admin, cluster, tp: TopicPartition) -> list[bytes]:
    """The read_committed values once no transaction holds the partition's LSO back."""
    def attempt():
        try:
            values, high_watermark, last_stable_offset = committed_values(admin, cluster, tp)
        except grpc.RpcError:
            return None
        return (values,) if high_watermark == last_stable_offset else None
    return wait_for(attempt, 90, f"{tp}'s LSO to reach its high watermark")[0]


def metric(cluster, broker_id: int, name: str, labels: dict[str, str]) -> float | None:
    address = cluster.metrics_address("broker", broker_id)
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as response:
        text = response.read().decode()
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            if found.name == name and all(found.labels.get(k) == v for k, v in labels.items()):
                return found.value
    return None


# -- scenarios ---------------------------------------------------------------------------------------


def test_a_commit_reaches_read_committed_readers_and_an_abort_never_does(cluster, admin):
    txn, tp0, tp1 = "copier-1", TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    before = {tp: stable_values(admin, cluster, tp) for tp in (tp0, tp1)}
    started = init(cluster, txn)
    assert (started.error_code, started.producer_epoch) == (ErrorCode.NONE, 0)
    pid = started.producer_id
    added = add(cluster, txn, pid, 0, {TOPIC: [0, 1]})
    assert added.error_code == ErrorCode.NONE and {r.error_code for r in added.results} == {ErrorCode.NONE}
    assert produce(admin, cluster, tp0, [b"c-0a", b"c-0b"], pid, 0, 0, txn) == ErrorCode.NONE
    assert produce(admin, cluster, tp1, [b"c-1a"], pid, 0, 0, txn) == ErrorCode.NONE
    assert describe(cluster, txn).state == "Ongoing"
    assert committed_values(admin, cluster, tp0)[0] == before[tp0], "nothing shows before the commit"

    ended = end(cluster, txn, pid, 0, commit=True)
    assert (ended.error_code, ended.producer_id, ended.producer_epoch) == (ErrorCode.NONE, pid, 1), \
        "every end bumps the epoch (KIP-890)"
    wait_state(cluster, txn, "CompleteCommit")
    assert stable_values(admin, cluster, tp0) == before[tp0] + [b"c-0a", b"c-0b"]
    assert stable_values(admin, cluster, tp1) == before[tp1] + [b"c-1a"]

    # The next transaction, at the epoch EndTxn handed out, aborts.
    assert add(cluster, txn, pid, 1, {TOPIC: [0]}).error_code == ErrorCode.NONE
    assert produce(admin, cluster, tp0, [b"a-0"], pid, 1, 0, txn) == ErrorCode.NONE
    aborted = end(cluster, txn, pid, 1, commit=False)
    assert (aborted.error_code, aborted.producer_epoch) == (ErrorCode.NONE, 2)
    done = wait_state(cluster, txn, "CompleteAbort")
    assert (done.producer_id, done.producer_epoch, list(done.topics)) == (pid, 2, [])
    assert stable_values(admin, cluster, tp0) == before[tp0] + [b"c-0a", b"c-0b"], "aborted records never show"

    listed = {}
    for broker_id, address in addresses(cluster).items():
        with grpc.insecure_channel(address) as channel:
            answer = cg.CoordinatorServiceStub(channel).ListTransactions(cp.ListTransactionsRequest(
                state_filters=["CompleteAbort"]), timeout=10)
        listed.update({t.transactional_id: (broker_id, t.state) for t in answer.transactions})
    coordinator, _ = coordinator_of(cluster, txn)
    assert listed[txn] == (coordinator, "CompleteAbort")
    # The gauge is set on the coordinator's next tick.
    wait_for(lambda: (metric(cluster, coordinator, "replog_transactions", {"state": "CompleteAbort"}) or 0) >= 1, 10,
             "the CompleteAbort transaction in replog_transactions")
    assert metric(cluster, coordinator, "replog_txn_marker_latency_seconds_count", {}) >= 2
    assert "transactional id 'copier-1': PrepareCommit, producer" in cluster.log_text("broker", coordinator)


def test_bad_requests_get_clear_errors_and_write_nothing(cluster, admin):
    unknown = end(cluster, "never-started", 12345, 0, commit=True, retriable=RETRIABLE - {
        ErrorCode.CONCURRENT_TRANSACTIONS})
    assert unknown.error_code == ErrorCode.INVALID_PRODUCER_ID_MAPPING and "not the one of" in unknown.error_message

    txn = "careful"
    pid = init(cluster, txn).producer_id
    missing = add(cluster, txn, pid, 0, {"no-such-topic": [0], TOPIC: [0]})
    assert missing.error_code == ErrorCode.NONE
    assert {(r.topic, r.error_code) for r in missing.results} == {
        ("no-such-topic", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (TOPIC, ErrorCode.OPERATION_NOT_ATTEMPTED)}
    assert add(cluster, txn, pid, -1, {TOPIC: [0]}).error_code == ErrorCode.PRODUCER_FENCED
    assert end(cluster, txn, pid, -1, commit=False).error_code == ErrorCode.PRODUCER_FENCED
    assert end(cluster, txn, pid, 0, commit=True).error_code == ErrorCode.INVALID_TXN_STATE, "nothing to commit"
    timeout = init(cluster, txn, timeout_ms=-5)
    assert timeout.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT and "transaction.max.timeout.ms" in \
        timeout.error_message
    too_long = init(cluster, txn, timeout_ms=3_600_000)
    assert too_long.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert produce(admin, cluster, TopicPartition(TOPIC, 0), [b"x"], pid, -2, 0, txn, retry=False) == \
        ErrorCode.INVALID_RECORD
    described = describe(cluster, txn)
    assert (described.state, described.producer_epoch, list(described.topics)) == ("Empty", 0, []), \
        "nothing was written"

    empty = cg.CoordinatorServiceStub(grpc.insecure_channel(next(iter(addresses(cluster).values())))).FindCoordinator(
        cp.FindCoordinatorRequest(keys=[""], key_type=cp.COORDINATOR_TYPE_TRANSACTION), timeout=10)
    assert empty.coordinators[0].error_code == ErrorCode.INVALID_REQUEST
    assert describe(cluster, "nobody").error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


def test_a_new_producer_instance_fences_the_old_one_and_aborts_its_transaction(cluster, admin):
    txn, tp = "fenced-app", TopicPartition(TOPIC, 0)
    before = stable_values(admin, cluster, tp)
    old = init(cluster, txn)
    pid = old.producer_id
    add(cluster, txn, pid, 0, {TOPIC: [0, 1]})
    assert produce(admin, cluster, tp, [b"zombie-1"], pid, 0, 0, txn) == ErrorCode.NONE

    new = init(cluster, txn)  # retried through CONCURRENT_TRANSACTIONS while the old transaction aborts
    assert (new.error_code, new.producer_id) == (ErrorCode.NONE, pid) and new.producer_epoch > 0
    assert produce(admin, cluster, tp, [b"zombie-2"], pid, 0, 1, txn, retry=False) in (
        ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED)
    assert produce(admin, cluster, TopicPartition(TOPIC, 1), [b"zombie-3"], pid, 0, 0, txn) in (
        ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED)
    assert end(cluster, txn, pid, 0, commit=True).error_code == ErrorCode.PRODUCER_FENCED
    assert stable_values(admin, cluster, tp) == before, "the zombie's transaction was aborted"
    log = cluster.log_text("broker", coordinator_of(cluster, txn)[0])
    assert f"producer {pid} epoch 0 fenced by a new instance" in log


def test_a_transaction_left_open_past_its_timeout_is_aborted_and_its_producer_goes_on_once_it_aborts(cluster,
                                                                                                         admin):
    txn, tp = "silent-app", TopicPartition(TOPIC, 1)
    before = stable_values(admin, cluster, tp)
    pid = init(cluster, txn, timeout_ms=2_000).producer_id
    add(cluster, txn, pid, 0, {TOPIC: [1]})
    assert produce(admin, cluster, tp, [b"never"], pid, 0, 0, txn) == ErrorCode.NONE
    aborted = wait_state(cluster, txn, "CompleteAbort", timeout_s=30)
    assert aborted.producer_epoch == 1
    # Back from its pause, the producer hears that its transaction was aborted, not that it was fenced.
    assert produce(admin, cluster, tp, [b"late"], pid, 0, 1, txn, retry=False) == ErrorCode.INVALID_PRODUCER_EPOCH
    offsets = call(cluster, "silent-group", "TxnOffsetCommit", cp.TxnOffsetCommitRequest(
        transactional_id=txn, group_id="silent-group", producer_id=pid, producer_epoch=0, member_epoch=-1,
        topics=[cp.OffsetCommitTopic(topic=TOPIC, partitions=[cp.OffsetCommitPartition(
            partition=1, committed_offset=1, committed_leader_epoch=-1)])]), key_type=cp.COORDINATOR_TYPE_GROUP)
    refused = offsets.topics[0].partitions[0]
    assert refused.error_code == ErrorCode.INVALID_PRODUCER_EPOCH and "2000 ms" in refused.error_message
    commit = end(cluster, txn, pid, 0, commit=True)
    assert commit.error_code == ErrorCode.TRANSACTION_ABORTABLE and "2000 ms" in commit.error_message
    abort = end(cluster, txn, pid, 0, commit=False)
    assert (abort.error_code, abort.producer_id, abort.producer_epoch) == (ErrorCode.NONE, pid, 1)
    add(cluster, txn, pid, 1, {TOPIC: [1]})
    assert produce(admin, cluster, tp, [b"after"], pid, 1, 0, txn) == ErrorCode.NONE
    assert end(cluster, txn, pid, 1, commit=True).error_code == ErrorCode.NONE
    wait_state(cluster, txn, "CompleteCommit")
    assert stable_values(admin, cluster, tp) == before + [b"after"]
    assert "transaction passed its 2000 ms timeout" in cluster.log_text("broker", coordinator_of(cluster, txn)[0])


def test_a_write_delayed_past_its_transactions_end_is_refused(cluster, admin):
    txn, tp0, tp1 = "late-writer", TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    before = {tp: stable_values(admin, cluster, tp) for tp in (tp0, tp1)}
    pid = init(cluster, txn).producer_id
    add(cluster, txn, pid, 0, {TOPIC: [0]})
    assert produce(admin, cluster, tp0, [b"on-time"], pid, 0, 0, txn) == ErrorCode.NONE
    assert end(cluster, txn, pid, 0, commit=True).producer_epoch == 1
    wait_state(cluster, txn, "CompleteCommit")
    # The batch a slow network held back arrives now, to the partition it was for and to one never added.
    assert produce(admin, cluster, tp0, [b"late"], pid, 0, 1, txn, retry=False) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert produce(admin, cluster, tp1, [b"late"], pid, 0, 0, txn) == ErrorCode.PRODUCER_FENCED
    # The next transaction's write to a partition it never added is refused by verification too.
    assert produce(admin, cluster, tp1, [b"unadded"], pid, 1, 0, txn) == ErrorCode.INVALID_TXN_STATE
    assert stable_values(admin, cluster, tp0) == before[tp0] + [b"on-time"]
    assert stable_values(admin, cluster, tp1) == before[tp1]


def test_offsets_committed_in_a_transaction_show_only_once_it_commits(cluster, admin):
    txn, group = "offset-copier", "copiers"
    offsets_partition = partition_for(group, 10)

    def offset_commit(pid, epoch, offset):
        return call(cluster, group, "TxnOffsetCommit", cp.TxnOffsetCommitRequest(
            transactional_id=txn, group_id=group, producer_id=pid, producer_epoch=epoch, member_epoch=-1, topics=[
                cp.OffsetCommitTopic(topic=TOPIC, partitions=[cp.OffsetCommitPartition(
                    partition=0, committed_offset=offset, committed_leader_epoch=-1)])]),
            key_type=cp.COORDINATOR_TYPE_GROUP)

    def fetched(require_stable=False):
        answer = call(cluster, group, "OffsetFetch", cp.OffsetFetchRequest(
            group_id=group, require_stable=require_stable,
            topics=[common_pb2.TopicPartitions(topic=TOPIC, partitions=[0])]), key_type=cp.COORDINATOR_TYPE_GROUP)
        found = answer.topics[0].partitions[0]
        return ErrorCode.of(found.error_code), found.committed_offset

    pid = init(cluster, txn).producer_id
    added = call(cluster, txn, "AddOffsetsToTxn", cp.AddOffsetsToTxnRequest(
        transactional_id=txn, producer_id=pid, producer_epoch=0, group_id=group))
    assert added.error_code == ErrorCode.NONE
    assert [(t.topic, list(t.partitions)) for t in describe(cluster, txn).topics] == [
        (OFFSETS_TOPIC, [offsets_partition])]
    answer = offset_commit(pid, 0, 42)
    assert answer.topics[0].partitions[0].error_code == ErrorCode.NONE
    assert fetched() == (ErrorCode.NONE, -1), "invisible while the transaction is open"
    assert fetched(require_stable=True)[0] == ErrorCode.UNSTABLE_OFFSET_COMMIT
    assert end(cluster, txn, pid, 0, commit=True).error_code == ErrorCode.NONE
    wait_for(lambda: fetched() == (ErrorCode.NONE, 42), 60, "the committed offset")

    # The next transaction's offsets are pending when the group coordinator's broker dies: the new one
    # replays them as pending, and the abort drops them.
    call(cluster, txn, "AddOffsetsToTxn", cp.AddOffsetsToTxnRequest(transactional_id=txn, producer_id=pid,
                                                                     producer_epoch=1, group_id=group))
    assert offset_commit(pid, 1, 99).topics[0].partitions[0].error_code == ErrorCode.NONE
    group_coordinator, _ = coordinator_of(cluster, group, cp.COORDINATOR_TYPE_GROUP)
    cluster.signal("broker", group_coordinator, "KILL")
    try:
        wait_for(lambda: (found := find(cluster, group, cp.COORDINATOR_TYPE_GROUP)) and found[0] != group_coordinator,
                 60, "the group's coordinator to move")
        assert fetched() == (ErrorCode.NONE, 42)
        assert fetched(require_stable=True)[0] == ErrorCode.UNSTABLE_OFFSET_COMMIT, "replayed as pending"
        assert end(cluster, txn, pid, 1, commit=False).error_code == ErrorCode.NONE
        wait_state(cluster, txn, "CompleteAbort", timeout_s=90)
        wait_for(lambda: fetched(require_stable=True) == (ErrorCode.NONE, 42), 60, "the abort to drop the offset")
    finally:
        cluster("dev", "start", "broker", str(group_coordinator))
    wait_for(lambda: group_coordinator in addresses(cluster), 60, "the broker back")


def test_a_coordinator_killed_after_the_decision_is_succeeded_by_one_that_completes_the_commit(cluster, admin):
    txn = "crash-commit"
    coordinator, _ = coordinator_of(cluster, txn)
    data_leader = next(b for b in sorted(addresses(cluster)) if b != coordinator)
    topic, tp = "txn-one-replica", TopicPartition("txn-one-replica", 0)
    admin.create_topics([NewTopic(topic, replica_assignment={0: [data_leader]})])
    pid = init(cluster, txn).producer_id
    add(cluster, txn, pid, 0, {topic: [0]})
    assert produce(admin, cluster, tp, [b"d1", b"d2"], pid, 0, 0, txn) == ErrorCode.NONE

    # The partition's only replica dies: the commit's marker cannot be written anywhere for now.
    cluster.signal("broker", data_leader, "KILL")
    killed = [data_leader]
    try:
        assert end(cluster, txn, pid, 0, commit=True).error_code == ErrorCode.NONE
        assert describe(cluster, txn).state == "PrepareCommit"
        cluster.signal("broker", coordinator, "KILL")
        killed.append(coordinator)
        successor = wait_for(lambda: (found := find(cluster, txn)) and found[0] != coordinator and found, 90,
                             "a new transaction coordinator")
        assert successor[0] not in killed
        assert wait_state(cluster, txn, "PrepareCommit").producer_epoch == 1, "it loaded the decision"
        cluster("dev", "start", "broker", str(data_leader))
        killed.remove(data_leader)
        wait_state(cluster, txn, "CompleteCommit", timeout_s=120)
        assert stable_values(admin, cluster, tp) == [b"d1", b"d2"]
        assert "resends 1 markers of 1 ending transactions" in cluster.log_text("broker", successor[0])
    finally:
        for broker_id in killed:
            cluster("dev", "start", "broker", str(broker_id))


def test_a_refused_complete_holds_the_next_transaction_back_and_a_new_coordinator_loads_the_log(cluster, admin):
    """The exactly-once copier's stuck load: COMPLETE_COMMIT refused (min.insync.replicas cannot be met) while
    the producer asks for its next transaction. The next transaction waits for COMPLETE_COMMIT, the log keeps
    the id's records in the order they were decided, and a coordinator that takes over loads it and serves."""
    txn, topic = "refused-complete", "txn-refused-complete"
    tp = TopicPartition(topic, 0)
    coordinator, address = coordinator_of(cluster, txn)
    data_broker, third = sorted(b for b in addresses(cluster) if b != coordinator)
    state = TopicPartition(TRANSACTION_STATE_TOPIC, partition_for_transactional_id(txn, 10))
    admin.create_topics([NewTopic(topic, replica_assignment={0: [data_broker]})])
    pid = init(cluster, txn).producer_id
    assert add(cluster, txn, pid, 0, {topic: [0]}).error_code == ErrorCode.NONE
    assert produce(admin, cluster, tp, [b"first"], pid, 0, 0, txn) == ErrorCode.NONE

    def isr() -> tuple[int, ...]:
        return admin.describe_topics([TRANSACTION_STATE_TOPIC])[0].partitions[state.partition].isr

    def next_add() -> ErrorCode:  # the next transaction's AddPartitionsToTxn, asked once
        with grpc.insecure_channel(address) as channel:
            return ErrorCode.of(cg.CoordinatorServiceStub(channel).AddPartitionsToTxn(cp.AddPartitionsToTxnRequest(
                transactional_id=txn, producer_id=pid, producer_epoch=1,
                topics=[common_pb2.TopicPartitions(topic=topic, partitions=[0])]), timeout=10).error_code)

    stopped = []
    try:
        # The data partition's only replica stops: the commit's marker waits for it.
        cluster.signal("broker", data_broker, "TERM")
        stopped.append(data_broker)
        wait_for(lambda: data_broker not in isr(), 30, f"broker {data_broker} to leave {state}'s ISR")
        assert end(cluster, txn, pid, 0, commit=True).error_code == ErrorCode.NONE  # PREPARE_COMMIT is written
        # From now on __transaction_state needs all three replicas, and the third one stops too.
        admin.alter_configs("topic", TRANSACTION_STATE_TOPIC, set_configs={"min.insync.replicas": "3"})
        cluster.signal("broker", third, "TERM")
        stopped.append(third)
        cluster("dev", "start", "broker", str(data_broker))
        stopped.remove(data_broker)
        # The marker lands; COMPLETE_COMMIT is decided and refused, again and again.
        wait_for(lambda: f"transaction records of ['{txn}'] not written (NOT_ENOUGH_REPLICAS)" in
                 cluster.log_text("broker", coordinator), 60, "COMPLETE_COMMIT to be refused")
        assert describe(cluster, txn).state == "PrepareCommit"
        assert next_add() == ErrorCode.CONCURRENT_TRANSACTIONS, "the next transaction waits for COMPLETE_COMMIT"
        assert metric(cluster, coordinator, "replog_coordinator_writes_refused_total",
                      {"topic": TRANSACTION_STATE_TOPIC, "error": "NOT_ENOUGH_REPLICAS"}) >= 1

        cluster("dev", "start", "broker", str(third))
        stopped.remove(third)
        wait_state(cluster, txn, "CompleteCommit")
        admin.alter_configs("topic", TRANSACTION_STATE_TOPIC, set_configs={"min.insync.replicas": "2"})
        assert add(cluster, txn, pid, 1, {topic: [0]}).error_code == ErrorCode.NONE
        assert produce(admin, cluster, tp, [b"second"], pid, 1, 0, txn) == ErrorCode.NONE

        # The coordinator's broker dies: the partition's new leader loads the log and serves the id.
        cluster.signal("broker", coordinator, "KILL")
        stopped.append(coordinator)
        successor, _ = wait_for(lambda: (found := find(cluster, txn)) and found[0] != coordinator and found, 60,
                                "a new transaction coordinator")
        described = wait_state(cluster, txn, "Ongoing")
        assert (described.producer_epoch, [(t.topic, list(t.partitions)) for t in described.topics]) == (
            1, [(topic, [0])])
        assert end(cluster, txn, pid, 1, commit=True).producer_epoch == 2
        wait_state(cluster, txn, "CompleteCommit")
        assert stable_values(admin, cluster, tp) == [b"first", b"second"]
        states = logged_states(admin, cluster, state, txn)
        assert states == ["EMPTY", "ONGOING", "PREPARE_COMMIT", "COMPLETE_COMMIT", "ONGOING", "PREPARE_COMMIT",
                          "COMPLETE_COMMIT"], "one record per decision, in the order decided"
    finally:
        admin.alter_configs("topic", TRANSACTION_STATE_TOPIC, set_configs={"min.insync.replicas": "2"})
        for broker_id in stopped:
            cluster("dev", "start", "broker", str(broker_id))
    wait_for(lambda: len(addresses(cluster)) == 3, 60, "every broker back")


def test_the_next_transactions_add_is_held_while_the_last_one_completes(cluster, admin):
    """AddPartitionsToTxn for the next transaction, sent while the last one's marker cannot be written (its
    partition's only replica is stopped): the coordinator holds it for 0.5 s and only then answers
    CONCURRENT_TRANSACTIONS; asked again until the replica is back, it is answered NONE, and the new
    transaction follows COMPLETE_COMMIT in the log."""
    txn, topic = "held-add", "txn-held-add"
    tp = TopicPartition(topic, 0)
    coordinator, address = coordinator_of(cluster, txn)
    data_broker = min(b for b in addresses(cluster) if b != coordinator)
    state = TopicPartition(TRANSACTION_STATE_TOPIC, partition_for_transactional_id(txn, 10))
    admin.create_topics([NewTopic(topic, replica_assignment={0: [data_broker]})])
    pid = init(cluster, txn).producer_id
    assert add(cluster, txn, pid, 0, {topic: [0]}).error_code == ErrorCode.NONE
    assert produce(admin, cluster, tp, [b"first"], pid, 0, 0, txn) == ErrorCode.NONE
    held_before = metric(cluster, coordinator, "replog_txn_add_held_seconds_count", {}) or 0

    def next_add() -> tuple[ErrorCode, float]:  # the next transaction's AddPartitionsToTxn, asked once
        with grpc.insecure_channel(address) as channel:
            stub = cg.CoordinatorServiceStub(channel)
            started_s = time.monotonic()
            answer = stub.AddPartitionsToTxn(cp.AddPartitionsToTxnRequest(
                transactional_id=txn, producer_id=pid, producer_epoch=1,
                topics=[common_pb2.TopicPartitions(topic=topic, partitions=[0])]), timeout=10)
            return ErrorCode.of(answer.error_code), time.monotonic() - started_s

    cluster.signal("broker", data_broker, "TERM")
    try:
        wait_for(lambda: admin.describe_topics([topic])[0].partitions[0].leader < 0, 30, f"{tp} to go offline")
        assert end(cluster, txn, pid, 0, commit=True).producer_epoch == 1  # PREPARE_COMMIT; the marker waits
        error, elapsed_s = next_add()
        assert error == ErrorCode.CONCURRENT_TRANSACTIONS and elapsed_s >= 0.45, \
            f"held 0.5 s before CONCURRENT_TRANSACTIONS, not answered at once: {error.name} after {elapsed_s:.3f} s"
        assert describe(cluster, txn).state == "PrepareCommit"
    finally:
        cluster("dev", "start", "broker", str(data_broker))
    error = wait_for(lambda: (answer := next_add()[0]) != ErrorCode.CONCURRENT_TRANSACTIONS and (answer,), 60,
                     "the next transaction to start")[0]
    assert error == ErrorCode.NONE
    described = describe(cluster, txn)
    assert (described.state, described.producer_epoch, [(t.topic, list(t.partitions)) for t in described.topics]) \
        == ("Ongoing", 1, [(topic, [0])])
    assert logged_states(admin, cluster, state, txn)[-3:] == ["PREPARE_COMMIT", "COMPLETE_COMMIT", "ONGOING"]
    assert metric(cluster, coordinator, "replog_txn_add_held_seconds_count", {}) >= held_before + 1
    assert f"transactional id {txn!r}: AddPartitionsToTxn held 500 ms" in cluster.log_text("broker", coordinator)
    assert end(cluster, txn, pid, 1, commit=False).error_code == ErrorCode.NONE
    wait_for(lambda: len(addresses(cluster)) == 3, 60, "every broker back")


def test_transactions_back_to_back_begin_while_the_last_one_completes(cluster, admin):
    """A producer committing 20 transactions in a row: each next AddPartitionsToTxn comes while the last
    transaction's markers are out, and most are held by the coordinator, briefly, rather than refused."""
    txn = "back-to-back"
    coordinator, _ = coordinator_of(cluster, txn)

    def held() -> tuple[float, float]:
        return (metric(cluster, coordinator, "replog_txn_add_held_seconds_count", {}) or 0,
                metric(cluster, coordinator, "replog_txn_add_held_seconds_sum", {}) or 0)

    count_before, seconds_before = held()
    with Producer(cluster.status()["metadata"][0]["address"], transactional_id=txn) as producer:
        producer.init_transactions()
        for n in range(20):
            producer.begin_transaction()
            producer.send(TOPIC, b"%d" % n, partition=n % 2)
            producer.commit_transaction()
    count, seconds = held()
    assert count - count_before >= 10, f"only {count - count_before:.0f} of 19 next transactions were held"
    assert (seconds - seconds_before) / (count - count_before) < 0.1, "held until their transactions completed"


def test_on_transaction_version_2_the_leaders_add_the_partitions_and_the_producer_sends_no_add(cluster, admin):
    """KIP-890 part 2: the coordinator says version 2; batches marked so go straight to their leaders, which add
    their partitions (side by side here) before appending; a batch not marked so is only verified."""
    txn, tp0, tp1 = "v2-writer", TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)
    before = {tp: stable_values(admin, cluster, tp) for tp in (tp0, tp1)}
    started = init(cluster, txn)
    assert (started.error_code, started.transaction_version) == (ErrorCode.NONE, 2)
    pid = started.producer_id
    assert produce(admin, cluster, tp0, [b"v1-write"], pid, 0, 0, txn, retry=False) == ErrorCode.INVALID_TXN_STATE, \
        "a producer on version 1 must have added the partition itself"

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        writes = [pool.submit(produce, admin, cluster, tp, [b"v2-%d" % tp.partition], pid, 0, 0, txn, version=2)
                  for tp in (tp0, tp1)]
        assert [w.result() for w in writes] == [ErrorCode.NONE, ErrorCode.NONE]
    ongoing = describe(cluster, txn)
    assert ongoing.state == "Ongoing"
    assert {(t.topic, p) for t in ongoing.topics for p in t.partitions} == {(TOPIC, 0), (TOPIC, 1)}
    ended = end(cluster, txn, pid, 0, commit=True)
    assert (ended.error_code, ended.producer_epoch, ended.transaction_version) == (ErrorCode.NONE, 1, 2)
    assert stable_values(admin, cluster, tp0) == before[tp0] + [b"v2-0"]
    assert stable_values(admin, cluster, tp1) == before[tp1] + [b"v2-1"]

    # A write of the ended transaction's epoch, delayed past its end, is refused: the leader adds nothing for it.
    late = produce(admin, cluster, tp0, [b"late"], pid, 0, 1, txn, retry=False, version=2)
    assert late in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED)
    assert describe(cluster, txn).state == "CompleteCommit"
    assert stable_values(admin, cluster, tp0) == before[tp0] + [b"v2-0"]


def logged_states(admin, cluster, tp: TopicPartition, txn: str) -> list[str]:
    """The states of the transactional id's records in the partition, in log order."""
    request = bp.FetchRequest(replica_id=-1, max_wait_ms=0, max_bytes=1 << 20)
    request.topics.add(topic=tp.topic).partitions.add(partition=tp.partition, fetch_offset=0, current_leader_epoch=-1,
                                                      partition_max_bytes=1 << 20)
    answer = leader_stub(admin, cluster, tp).Fetch(request, timeout=30).topics[0].partitions[0]
    records = [txn_records.decode(r.key, r.value) for batch in iter_batches(answer.records) for r in batch.records]
    return [r.metadata.state.name for r in records if r.transactional_id == txn and r.metadata is not None]
