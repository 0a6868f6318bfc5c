"""Which partition of `__transaction_state` holds a transactional id, and so which broker
coordinates it: the leader of partition abs(java_string_hash(id)) % transaction.state.log.num.partitions,
as in Kafka."""

from ..key_placement import partition_for

TRANSACTION_STATE_TOPIC = "__transaction_state"
TRANSACTION_STATE_PARTITIONS_DEFAULT = 50  # transaction.state.log.num.partitions


def partition_for_transactional_id(transactional_id: str,
                                   partition_count: int = TRANSACTION_STATE_PARTITIONS_DEFAULT) -> int:
    return partition_for(transactional_id, partition_count)
