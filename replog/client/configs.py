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


IDEMPOTENT_IN_FLIGHT_MAX = 5  # the batches a partition leader remembers per producer
INT32_MAX = 2**31 - 1


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
    enable_idempotence: bool = False
    transactional_id: str | None = None
    transaction_timeout_ms: int = 60_000

    def __post_init__(self) -> None:
        if self.transactional_id is not None:
            if not isinstance(self.transactional_id, str) or not self.transactional_id.strip():
                raise ValueError(f"transactional_id must be a non-empty string or None, not {self.transactional_id!r}")
            if not self.enable_idempotence:
                raise ValueError("transactional_id needs enable_idempotence: a transactional producer is idempotent")
        if not 0 < self.transaction_timeout_ms <= INT32_MAX:
            raise ValueError(f"transaction_timeout_ms must be between 1 and {INT32_MAX}, not "
                             f"{self.transaction_timeout_ms!r}")
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
        if self.enable_idempotence:
            if self.acks != -1:
                raise ValueError(f"enable_idempotence needs acks='all', not acks={self.acks}")
            if self.max_in_flight_requests_per_connection > IDEMPOTENT_IN_FLIGHT_MAX:
                raise ValueError(f"enable_idempotence needs max_in_flight_requests_per_connection of at most "
                                 f"{IDEMPOTENT_IN_FLIGHT_MAX}, not {self.max_in_flight_requests_per_connection}")
            if self.retries == 0:
                raise ValueError("enable_idempotence needs retries above 0")

    @staticmethod
    def idempotence_default(acks: int, max_in_flight: int, retries: int, transactional: bool = False) -> bool:
        """Kafka's default (3.0 on): idempotent unless another setting rules it out; always when transactional
        (then a setting that rules it out is refused)."""
        return transactional or (acks == -1 and max_in_flight <= IDEMPOTENT_IN_FLIGHT_MAX and retries > 0)



@dataclass(frozen=True)
class ConsumerConfig:
    """Kafka's consumer configs under Python names (group_id is group.id, ...)."""

    group_id: str | None = None
    group_instance_id: str | None = None
    client_id: str = ""
    enable_auto_commit: bool = True  # only with a group_id
    auto_commit_interval_ms: int = 5_000
    max_poll_interval_ms: int = 300_000  # sent as the rebalance timeout
    group_remote_assignor: str | None = None
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
        for name in ("fetch_min_bytes", "fetch_max_wait_ms", "retry_backoff_ms", "auto_commit_interval_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, not {getattr(self, name)!r}")
        if not 0 < self.max_poll_interval_ms <= INT32_MAX:
            raise ValueError(f"max_poll_interval_ms must be between 1 and {INT32_MAX}, not "
                             f"{self.max_poll_interval_ms!r}")
        for name in ("group_id", "group_instance_id", "group_remote_assignor"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{name} must be a non-empty string or None, not {value!r}")
        if self.group_instance_id is not None and self.group_id is None:
            raise ValueError("group_instance_id needs a group_id: a static member is a member of a group")

    @property
    def auto_commit(self) -> bool:
        """enable.auto.commit counts only for a consumer with a group, as in Kafka."""
        return self.enable_auto_commit and self.group_id is not None
