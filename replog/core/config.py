"""The settings a partition replica obeys, under Kafka's names, with units last."""

from collections.abc import Mapping
from dataclasses import dataclass, fields

# Kafka's config name for each field, so that drivers can build a ReplicaConfig
# from topic and broker properties.
KAFKA_NAMES = {
    "min.insync.replicas": "min_insync_replicas",
    "replica.lag.time.max.ms": "replica_lag_time_ms_max",
    "replica.fetch.wait.max.ms": "replica_fetch_wait_ms_max",
    "replica.fetch.max.bytes": "replica_fetch_bytes_max",
    "replica.fetch.backoff.ms": "replica_fetch_backoff_ms",
    "replica.socket.timeout.ms": "replica_fetch_timeout_ms",
    "producer.id.expiration.ms": "producer_id_expiration_ms",
    "transaction.partition.verification.enable": "transaction_partition_verification_enable",
}


@dataclass(frozen=True, slots=True)
class ReplicaConfig:
    min_insync_replicas: int = 1
    # A follower not caught up for this long leaves the ISR.
    replica_lag_time_ms_max: int = 30_000
    # How long a leader may hold a follower's fetch that has nothing to return.
    replica_fetch_wait_ms_max: int = 500
    replica_fetch_bytes_max: int = 1_048_576
    # After a failed fetch, the follower waits this long before the next one.
    replica_fetch_backoff_ms: int = 1_000
    # A fetch unanswered for this long is given up and sent again.
    replica_fetch_timeout_ms: int = 30_000
    # An AlterPartition unanswered for this long is sent again; after a
    # rejection, the leader waits this long before proposing again.
    alter_partition_retry_ms: int = 2_000
    # Bound on acks=all requests waiting for replication in one partition.
    produce_waiters_max: int = 100_000
    # An idempotent producer silent this long is forgotten (its sequences start over).
    producer_id_expiration_ms: int = 86_400_000
    # KIP-890: a transaction's first batch on the partition waits for its coordinator's word (1), or not (0).
    transaction_partition_verification_enable: int = 1

    def __post_init__(self) -> None:
        # Values come from users' properties: a bad one is a ValueError with one sentence.
        for field in fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f"{field.name} must be a non-negative integer, not {value!r}")
        if self.min_insync_replicas < 1:
            raise ValueError("min.insync.replicas must be at least 1")
        if self.produce_waiters_max < 1:
            raise ValueError("produce_waiters_max must be at least 1")

    @classmethod
    def from_properties(cls, properties: Mapping[str, int | str]) -> "ReplicaConfig":
        """Build from Kafka-named properties; names the replica does not use are ignored."""
        return cls(**{KAFKA_NAMES[name]: _integer(value) for name, value in properties.items() if name in KAFKA_NAMES})


def _integer(value: int | str) -> int:
    """A property's value as an int; booleans as Kafka writes them (true, false) are 1 and 0."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return int(value.strip().lower() == "true")
    return int(value)
