"""Reserving the next block of producer ids in `/latest_producer_id_block` (replog/core/producer_ids.py)."""

from __future__ import annotations

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from replog.core.producer_ids import ProducerIdBlock, next_block
from replog.zk import paths
from replog.zk.session import ZkSession

ATTEMPTS_MAX = 100  # other brokers reserving at the same moment: read again and retry


async def reserve_producer_id_block(session: ZkSession, broker_id: int) -> ProducerIdBlock:
    """The block after the latest one, written only if nobody wrote a block since we read it."""
    client = session.client
    for _ in range(ATTEMPTS_MAX):
        try:
            data, stat = await session.call(client.get_async, paths.LATEST_PRODUCER_ID_BLOCK)
        except NoNodeError:
            block = next_block(None, broker_id)
            try:
                await session.call(client.create_async, paths.LATEST_PRODUCER_ID_BLOCK, block.encode())
            except NodeExistsError:
                continue
            return block
        block = next_block(ProducerIdBlock.decode(data) if data else None, broker_id)
        try:
            await session.call(client.set_async, paths.LATEST_PRODUCER_ID_BLOCK, block.encode(), stat.version)
        except BadVersionError:
            continue
        return block
    raise RuntimeError(f"no producer id block after {ATTEMPTS_MAX} attempts: other brokers kept taking them")
