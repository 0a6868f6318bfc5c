"""The broker's settings for the transaction coordinator and __transaction_state, under Kafka's names."""

from __future__ import annotations

from dataclasses import dataclass

from replog import config as configuration
from replog.config import Setting
from replog.core.txn.requests import TxnConfig

INT32_MAX = 2**31 - 1

TXN_SETTINGS: tuple[Setting, ...] = (
    Setting("transaction.state.log.num.partitions", configuration.integer(1, 10_000), 50,
            "partitions of __transaction_state, fixed when the topic is created"),
    Setting("transaction.state.log.replication.factor", configuration.integer(1, 100), 3,
            "replicas of each __transaction_state partition (capped by the live brokers at creation)"),
    Setting("transaction.state.log.min.isr", configuration.integer(1, 100), 2,
            "min.insync.replicas of __transaction_state (capped below its replication factor)"),
    Setting("transaction.state.log.segment.bytes", configuration.integer(14, INT32_MAX), 100 * 1024 * 1024,
            "segment.bytes of __transaction_state: small segments compact sooner"),
    Setting("transaction.max.timeout.ms", configuration.integer(1, INT32_MAX), 900_000,
            "the longest transaction.timeout.ms a producer may ask for (15 minutes)"),
    Setting("transactional.id.expiration.ms", configuration.integer(1, INT32_MAX), 604_800_000,
            "a transactional id idle this long (no transaction open) is forgotten (7 days)"),
    Setting("transaction.abort.timed.out.transaction.cleanup.interval.ms", configuration.integer(1, INT32_MAX),
            10_000, "how often the coordinator aborts transactions open longer than their timeout"),
    Setting("transaction.remove.expired.transaction.cleanup.interval.ms", configuration.integer(1, INT32_MAX),
            3_600_000, "how often the coordinator forgets expired transactional ids"),
    Setting("transaction.partition.verification.enable", configuration.boolean, True,
            "partition leaders ask the coordinator that a transaction's first write to a partition was added "
            "to the transaction (KIP-890)"),
    Setting("transaction.version", configuration.integer(1, 2), 2,
            "the transaction protocol this broker's coordinator tells its producers: 2, they send no "
            "AddPartitionsToTxn and the partition leaders add partitions as their first writes arrive "
            "(KIP-890 part 2); 1, producers add them. Every leader adds for a producer on version 2, "
            "whatever its own setting, so brokers may differ during a change"),
)


@dataclass(frozen=True)
class TxnTimers:
    abort_timed_out_interval_ms: int = 10_000
    remove_expired_interval_ms: int = 3_600_000


def txn_config(config: configuration.Config) -> TxnConfig:
    return TxnConfig(max_timeout_ms=config["transaction.max.timeout.ms"],
                     transactional_id_expiration_ms=config["transactional.id.expiration.ms"],
                     offsets_topic_partitions=config["offsets.topic.num.partitions"])


def txn_timers(config: configuration.Config) -> TxnTimers:
    return TxnTimers(config["transaction.abort.timed.out.transaction.cleanup.interval.ms"],
                     config["transaction.remove.expired.transaction.cleanup.interval.ms"])
