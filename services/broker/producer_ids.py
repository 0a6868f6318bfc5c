"""Handing out producer ids (InitProducerId) from the blocks this broker reserves in ZooKeeper."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from replog.broker import metrics
from replog.core.producer_ids import ProducerIdBlock, ProducerIds

log = logging.getLogger("replog.broker")


class ProducerIdManager:
    def __init__(self, reserve: Callable[[], Awaitable[ProducerIdBlock]]) -> None:
        self._reserve = reserve
        self._ids = ProducerIds()
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        """A producer id nobody has had; reserves the next block when this one is used up."""
        async with self._lock:
            taken = self._ids.take()
            if taken is None:
                block = await self._reserve()
                log.info("producer ids %d to %d reserved for this broker", block.first, block.last)
                self._ids.refill(block)
                taken = self._ids.take()
            metrics.PRODUCER_IDS_ISSUED.inc()
            return taken
