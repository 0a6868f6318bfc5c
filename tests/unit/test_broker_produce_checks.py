"""What a topic's configs demand of a producer's records is answered by the leader with Kafka's error,
before anything is appended, and the partition goes on: a record without a key on a compacted topic,
a CreateTime too far from the broker's clock. A LogAppendTime topic gets the leader's time, and a topic
whose compression.type names a codec gets its batches in it."""

import asyncio
import time

from replog.api.broker.v1 import broker_pb2
from replog.broker.partitions import Partitions, TopicSettings
from replog.broker.produce import handle_produce
from replog.core.config import ReplicaConfig
from replog.core.errors import ErrorCode
from replog.core.messages import PartitionState
from replog.protocol import Compression, encode_batch, iter_batches
from replog.storage import LogConfig

CONFIGS = {
    "compacted": LogConfig(cleanup_policy="compact"),
    "appended": LogConfig(message_timestamp_type="LogAppendTime"),
    "created": LogConfig(),
    "zstd": LogConfig(compression_type="zstd"),
    "uncompressed": LogConfig(compression_type="uncompressed"),
}


def produce_each(tmp_path, topic: str, batches: list[bytes]) -> tuple[list, list]:
    """Produce each batch alone, acks=1, to partition 0 of `topic` led by this broker alone; the answers
    and the batches the log holds afterwards."""

    async def scenario():
        partitions = Partitions(1, (str(tmp_path),), lambda name: TopicSettings(CONFIGS[name], ReplicaConfig()),
                                lambda *_: None, lambda *_: None)
        partitions.start()
        state = PartitionState(leader=1, leader_epoch=0, isr=(1,), partition_epoch=0, replicas=(1,))
        partitions.leader_and_isr(topic, 0, state)
        answers = []
        for data in batches:
            request = broker_pb2.ProduceRequest(acks=1, timeout_ms=5_000)
            request.topics.add(topic=topic).partitions.add(partition=0, records=data)
            answers.append((await asyncio.wait_for(handle_produce(partitions, request), 5)).topics[0].partitions[0])
        driver = next(iter(partitions.hosted))
        stored = list(iter_batches(driver.log.read(0, 1 << 20).records))
        await partitions.close()
        return answers, stored

    return asyncio.run(scenario())


def test_a_record_without_a_key_is_refused_by_a_compacted_topic_which_goes_on_taking_keyed_ones(tmp_path):
    answers, stored = produce_each(tmp_path, "compacted", [encode_batch([(None, b"lost")]),
                                                           encode_batch([(b"k", b"kept")])])

    assert [ErrorCode(a.error_code) for a in answers] == [ErrorCode.INVALID_RECORD, ErrorCode.NONE]
    assert "has no key" in answers[0].error_message and answers[0].base_offset == -1
    assert answers[1].base_offset == 0, "nothing of the refused batch was appended"
    assert [r.value for b in stored for r in b.records] == [b"kept"]


def test_a_log_append_time_topic_stores_and_answers_the_leaders_time(tmp_path):
    before = time.time_ns() // 1_000_000
    answers, stored = produce_each(tmp_path, "appended", [encode_batch([(None, b"v")], base_timestamp_ms=1_000)])
    after = time.time_ns() // 1_000_000

    (answer,), (batch,) = answers, stored
    assert ErrorCode(answer.error_code) is ErrorCode.NONE
    assert before <= answer.log_append_time_ms <= after
    assert batch.is_log_append_time and [r.timestamp for r in batch.records] == [answer.log_append_time_ms]


def test_a_retried_idempotent_batch_is_answered_with_the_time_its_first_append_stored(tmp_path, monkeypatch):
    clock = iter(range(5_000_000, 6_000_000, 1_000))  # the leader's wall clock, a second on at each produce
    monkeypatch.setattr("replog.broker.produce.wall_ms", lambda: next(clock))
    first = encode_batch([(None, b"v")], producer_id=7, producer_epoch=0, base_sequence=0)
    answers, stored = produce_each(tmp_path, "appended", [first, first])

    assert [(ErrorCode(a.error_code), a.base_offset) for a in answers] == [(ErrorCode.NONE, 0)] * 2
    assert [a.log_append_time_ms for a in answers] == [5_000_000] * 2, "the retry's own arrival is not the time"
    assert [r.timestamp for b in stored for r in b.records] == [5_000_000], "stored once"


def test_a_create_time_an_hour_ahead_of_the_broker_is_refused_and_a_create_time_topic_answers_no_append_time(tmp_path):
    now = time.time_ns() // 1_000_000
    ahead, current = (encode_batch([(None, value)], base_timestamp_ms=ms) for value, ms in
                      ((b"v", now + 7_200_000), (b"w", now)))
    answers, stored = produce_each(tmp_path, "created", [ahead, current])

    assert ErrorCode(answers[0].error_code) is ErrorCode.INVALID_TIMESTAMP
    assert "message.timestamp.after.max.ms=3600000" in answers[0].error_message
    assert answers[0].log_append_time_ms == -1 and answers[1].log_append_time_ms == -1
    assert [(r.offset, r.value, r.timestamp) for b in stored for r in b.records] == [(0, b"w", now)]


def test_a_topics_compression_type_is_the_codec_its_batches_are_stored_in(tmp_path):
    plain = encode_batch([(b"k", b"v" * 200)] * 3, producer_id=5, producer_epoch=0, base_sequence=0)
    gzip = encode_batch([(b"k", b"w")], compression=Compression.GZIP)

    answers, stored = produce_each(tmp_path / "zstd", "zstd", [plain])
    assert [ErrorCode(a.error_code) for a in answers] == [ErrorCode.NONE]
    (batch,) = stored
    assert (batch.compression, batch.producer_id, batch.base_sequence) == (Compression.ZSTD, 5, 0)
    assert [r.value for r in batch.records] == [b"v" * 200] * 3

    answers, stored = produce_each(tmp_path / "uncompressed", "uncompressed", [gzip])
    assert [(b.compression, [r.value for r in b.records]) for b in stored] == [(Compression.NONE, [b"w"])]
