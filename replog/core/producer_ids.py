"""Producer ids, handed out in blocks that the brokers reserve one after another in ZooKeeper.

`/latest_producer_id_block` holds the last block any broker reserved, in Kafka's
JSON (`{"version": 1, "broker": 2, "block_start": "1000", "block_end": "1999"}`).
A broker that runs out takes the next block with a write conditional on the
znode's version, so two brokers never get the same block; the ids of a block a
broker reserved and did not use before it stopped are never used by anyone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

BLOCK_SIZE = 1_000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE
PRODUCER_ID_MAX = 2**63 - 1
ZNODE_VERSION = 1


class ProducerIdBlockError(ValueError):
    """The znode does not hold a block, or the ids are used up."""


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    broker_id: int
    first: int
    last: int

    def encode(self) -> bytes:
        return json.dumps({"version": ZNODE_VERSION, "broker": self.broker_id,
                           "block_start": str(self.first), "block_end": str(self.last)}).encode()

    @classmethod
    def decode(cls, data: bytes) -> ProducerIdBlock:
        try:
            fields = json.loads(data)
            block = cls(int(fields["broker"]), int(fields["block_start"]), int(fields["block_end"]))
        except (ValueError, KeyError, TypeError) as error:
            raise ProducerIdBlockError(f"/latest_producer_id_block does not hold a block: {data[:200]!r}") from error
        if not 0 <= block.first <= block.last:
            raise ProducerIdBlockError(f"/latest_producer_id_block holds an empty block: {data[:200]!r}")
        return block


def next_block(previous: ProducerIdBlock | None, broker_id: int, size: int = BLOCK_SIZE) -> ProducerIdBlock:
    """The block after `previous` (the first block, from 0, when there is none)."""
    first = 0 if previous is None else previous.last + 1
    if first > PRODUCER_ID_MAX - size + 1:
        raise ProducerIdBlockError(f"producer ids are used up: the last block ended at {previous.last}")
    return ProducerIdBlock(broker_id, first, first + size - 1)


class ProducerIds:
    """The ids of the block a broker holds, one at a time."""

    def __init__(self) -> None:
        self._next = 0
        self._last = -1

    def take(self) -> int | None:
        """The next unused id, or None when the block is used up (reserve another)."""
        if self._next > self._last:
            return None
        taken = self._next
        self._next += 1
        return taken

    def refill(self, block: ProducerIdBlock) -> None:
        self._next, self._last = block.first, block.last

    @property
    def remaining(self) -> int:
        return self._last - self._next + 1
