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


def test_a_group_id_is_refused_until_groups_exist():
    with pytest.raises(ClientError, match="not supported yet"):
        Consumer(NOWHERE, group_id="g")
