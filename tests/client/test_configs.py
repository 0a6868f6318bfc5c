"""Configs are checked when a client is built, before it connects: bad ones name Kafka's config."""

import pytest

from replog.client import ClientError, Consumer, Producer
from replog.client.configs import parse_acks

NOWHERE = "127.0.0.1:1"  # nothing listens here: a refused config never gets as far as connecting


@pytest.mark.parametrize(("acks", "wire"), [("all", -1), ("-1", -1), (-1, -1), ("1", 1), (1, 1), ("0", 0), (0, 0)])
def test_acks_are_sent_as_kafka_defines_them(acks, wire):
    assert parse_acks(acks) == wire


@pytest.mark.parametrize(("configs", "named"), [
    ({"acks": 2}, "acks"),
    ({"acks": None}, "acks"),
    ({"compression_type": "brotli"}, "compression.type"),
    ({"delivery_timeout_ms": 1000}, "delivery_timeout_ms"),
    ({"batch_size": 0}, "batch_size"),
    ({"linger_ms": -1}, "linger_ms"),
])
def test_bad_producer_configs_are_refused_with_their_name(configs, named):
    with pytest.raises(ValueError, match=named):
        Producer(NOWHERE, **configs)


@pytest.mark.parametrize(("configs", "named"), [
    ({"auto_offset_reset": "smallest"}, "auto_offset_reset"),
    ({"isolation_level": "serializable"}, "isolation_level"),
    ({"max_poll_records": 0}, "max_poll_records"),
    ({"fetch_max_wait_ms": -1}, "fetch_max_wait_ms"),
])
def test_bad_consumer_configs_are_refused_with_their_name(configs, named):
    with pytest.raises(ValueError, match=named):
        Consumer(NOWHERE, **configs)


@pytest.mark.parametrize(("configs", "named"), [
    ({"group_id": ""}, "group_id"),
    ({"group_id": "g", "group_instance_id": ""}, "group_instance_id"),
    ({"group_instance_id": "i-1"}, "group_instance_id needs a group_id"),
    ({"group_id": "g", "group_remote_assignor": " "}, "group_remote_assignor"),
    ({"group_id": "g", "auto_commit_interval_ms": -1}, "auto_commit_interval_ms"),
    ({"group_id": "g", "max_poll_interval_ms": 0}, "max_poll_interval_ms"),
])
def test_bad_group_configs_are_refused_with_their_name(configs, named):
    with pytest.raises(ValueError, match=named):
        Consumer(NOWHERE, **configs)


@pytest.mark.parametrize("call", [
    lambda c: c.subscribe(["t"]),
    lambda c: c.commit({("t", 0): 5}),
    lambda c: c.committed([("t", 0)]),
])
def test_group_calls_without_a_group_id_say_what_is_missing(call):
    with Consumer(NOWHERE) as consumer, pytest.raises(ClientError, match="needs a consumer group"):
        call(consumer)


def test_subscribe_and_assign_exclude_each_other():
    with Consumer(NOWHERE, group_id="g", enable_auto_commit=False) as consumer:
        consumer.assign([("t", 0)])
        with pytest.raises(ClientError, match="cannot be mixed"):
            consumer.subscribe(["t"])
        consumer.unsubscribe()
        consumer.subscribe(["t"])
        with pytest.raises(ClientError, match="cannot be mixed"):
            consumer.assign([("t", 0)])
        consumer.unsubscribe(timeout=0.5)
        consumer.assign([("t", 0)])


def test_a_regex_that_does_not_compile_is_refused_at_subscribe():
    with Consumer(NOWHERE, group_id="g") as consumer, pytest.raises(ClientError, match="does not compile"):
        consumer.subscribe("orders-(")
