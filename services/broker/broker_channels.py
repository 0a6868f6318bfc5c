"""gRPC channels from this broker to the other brokers, one per address, shared by what asks them
(consumer group lag, transaction markers, transaction verification)."""

from __future__ import annotations

import grpc

from replog.rpc import channels
from replog.rpc.server import channel_options


class BrokerChannels:
    def __init__(self, message_bytes_max: int) -> None:
        self._options = channel_options(message_bytes_max)
        self._channels: dict[str, grpc.aio.Channel] = {}

    def get(self, address: str) -> grpc.aio.Channel:
        channel = self._channels.get(address)
        if channel is None:
            channel = self._channels[address] = channels.aio_channel(address, self._options)
        return channel

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()
