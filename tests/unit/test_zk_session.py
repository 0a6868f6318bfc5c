"""A ZooKeeper session misused by its caller says so in a sentence, under `python -O` too."""

import asyncio

import pytest

from replog.core.invariant import InvariantViolation
from replog.zk.store import MetadataStore


def test_a_store_read_before_start_is_refused_with_a_sentence():
    store = MetadataStore("127.0.0.1:1", session_timeout_ms=6000, connection_timeout_ms=5000)
    with pytest.raises(InvariantViolation, match="used before start"):
        asyncio.run(store.topic_names())
