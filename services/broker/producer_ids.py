"""Handing out producer ids (InitProducerId) from the blocks this broker reserves in ZooKeeper."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from replog.broker import metrics
from replog.core.producer_ids import ProducerIdBlock, ProducerIds

log = logging.getLogger("replog.broker")


class ProducerIdManager:
    """The ids of this broker's block, for idempotent producers (`next_id`) and for the transaction
    coordinator's core, which takes them synchronously (`take`, after `ensure_available`)."""

    def __init__(self, reserve: Callable[[], Awaitable[ProducerIdBlock]]) -> None:
        self._reserve = reserve
        self._ids = ProducerIds()
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        """A producer id nobody has had; reserves the next block when this one is used up."""
        while True:
            await self.ensure_available()
            taken = self.take()
            if taken is not None:
                return taken

    async def ensure_available(self) -> None:
        """Reserve the next block if this one is used up (raises when ZooKeeper cannot give one)."""
        async with self._lock:
            if self._ids.remaining == 0:
                block = await self._reserve()
                log.info("producer ids %d to %d reserved for this broker", block.first, block.last)
                self._ids.refill(block)

    def take(self) -> int | None:
        """The next id of the block at hand; None when it is used up (await `ensure_available`)."""
        taken = self._ids.take()
        if taken is not None:
            metrics.PRODUCER_IDS_ISSUED.inc()
        return taken
