"""Kafka's producer and consumer configs under Python names (linger.ms is linger_ms), checked once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replog.client.broker_requests import ISOLATION_LEVELS
from replog.client.fetch_state import LATEST
from replog.protocol.compression import Compression

ACKS = {"all": -1, "-1": -1, -1: -1, "1": 1, 1: 1, "0": 0, 0: 0}


def parse_acks(acks: Any) -> int:
    """Kafka's acks values ("all", -1, 1, 0, or their strings) as the wire's -1, 1, 0."""
    try:
        return ACKS[acks]
    except (KeyError, TypeError):
        raise ValueError(f"acks must be 'all', -1, 1 or 0, not {acks!r}") from None


@dataclass(frozen=True)
class ProducerConfig:
    """Kafka's producer configs under Python names (linger_ms is linger.ms, ...)."""

    acks: int = -1
    linger_ms: float = 5
    batch_size: int = 1 << 20
    compression: Compression = Compression.NONE
    retries: int = 2**31 - 1
    request_timeout_ms: int = 30_000
    delivery_timeout_ms: int = 120_000
    max_in_flight_requests_per_connection: int = 5
    retry_backoff_ms: int = 100
    buffer_memory: int = 32 << 20
    max_request_size: int = 16 << 20
    max_block_ms: int = 60_000

    def __post_init__(self) -> None:
        positive = ("batch_size", "request_timeout_ms", "delivery_timeout_ms",
                    "max_in_flight_requests_per_connection", "buffer_memory", "max_request_size")
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)!r}")
        for name in ("linger_ms", "retries", "retry_backoff_ms", "max_block_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, not {getattr(self, name)!r}")
        if self.delivery_timeout_ms < self.linger_ms + self.request_timeout_ms:
            raise ValueError("delivery_timeout_ms must be at least linger_ms + request_timeout_ms "
                             f"({self.linger_ms + self.request_timeout_ms:g}), as in Kafka")


@dataclass(frozen=True)
class ConsumerConfig:
    auto_offset_reset: str = LATEST
    fetch_min_bytes: int = 1
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 50 << 20
    max_partition_fetch_bytes: int = 1 << 20
    max_poll_records: int = 500
    isolation_level: str = "read_uncommitted"
    request_timeout_ms: int = 30_000
    retry_backoff_ms: int = 100

    def __post_init__(self) -> None:
        if self.isolation_level not in ISOLATION_LEVELS:
            raise ValueError(f"isolation_level must be read_uncommitted or read_committed, "
                             f"not {self.isolation_level!r}")
        for name in ("fetch_max_bytes", "max_partition_fetch_bytes", "max_poll_records", "request_timeout_ms"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, not {getattr(self, name)!r}")
        for name in ("fetch_min_bytes", "fetch_max_wait_ms", "retry_backoff_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, not {getattr(self, name)!r}")
