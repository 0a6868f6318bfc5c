"""Broker registration: the ephemeral /brokers/ids/<id> znodes and who is live."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
from collections.abc import Callable

from kazoo.exceptions import NodeExistsError, NoNodeError

from replog.zk import paths
from replog.zk.errors import StoreError
from replog.zk.session import ZkSession
from replog.zk.watches import ZnodeWatches

log = logging.getLogger(__name__)

# While a previous incarnation's znode is still there, try to register again this often.
REGISTRATION_RETRY_S = 0.2


@dataclasses.dataclass(frozen=True)
class BrokerRegistration:
    broker_id: int
    host: str
    port: int
    rack: str | None
    metrics_port: int
    broker_epoch: int  # the czxid of the ephemeral znode: it grows with every registration

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "version": 1,
                "host": self.host,
                "port": self.port,
                "endpoints": [f"PLAINTEXT://{self.host}:{self.port}"],
                "rack": self.rack,
                "metrics_port": self.metrics_port,
            }
        ).encode()

    @classmethod
    def from_json(cls, broker_id: int, data: bytes, czxid: int) -> BrokerRegistration:
        fields = json.loads(data)
        return cls(broker_id, fields["host"], fields["port"], fields.get("rack"),
                   fields.get("metrics_port", 0), czxid)


class BrokerRegistry:
    """Registers this process's broker and reads and watches the registered ones."""

    def __init__(self, session: ZkSession, watches: ZnodeWatches) -> None:
        self._session = session
        self._watches = watches

    async def register_broker(self, registration: BrokerRegistration, *, wait_s: float) -> int:
        """Create the ephemeral /brokers/ids/<id>; returns the broker epoch (its czxid).

        A previous incarnation's znode may outlive it by up to a session timeout
        (kill -9 then restart): wait up to wait_s for it to expire rather than fail.
        """
        path = paths.broker(registration.broker_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait_s
        # The deadline ends the wait; the count only bounds the loop, and is never the first to run out.
        attempts_max = int(wait_s / REGISTRATION_RETRY_S) + 2
        for attempt in range(attempts_max):
            broker_epoch = await self._create_or_reclaim(path, registration)
            if broker_epoch is not None:
                return broker_epoch
            if loop.time() > deadline:
                break
            if attempt == 0:
                log.info("waiting for the previous registration %s to expire", path)
            await asyncio.sleep(REGISTRATION_RETRY_S)
        raise StoreError(
            f"broker id {registration.broker_id} is registered by another live "
            f"process ({path} exists); is a second broker running with this id?")

    async def _create_or_reclaim(self, path: str, registration: BrokerRegistration) -> int | None:
        """The broker epoch once the znode is ours (created now, or by this session before);
        None while another session holds it."""
        client = self._session.client
        try:
            _, stat = await self._session.call(client.create_async, path, registration.to_json(),
                                               ephemeral=True, include_data=True)
            return stat.czxid
        except NodeExistsError:
            owner = await self._ephemeral_owner(path)
            if owner is None or owner != self._session.session_id:
                return None
            _, stat = await self._session.call(client.get_async, path)
            return stat.czxid

    async def _ephemeral_owner(self, path: str) -> int | None:
        try:
            stat = await self._session.call(self._session.client.exists_async, path)
        except NoNodeError:
            return None
        return stat.ephemeralOwner if stat else None

    async def live_broker_ids(self) -> list[int]:
        """The registered broker ids, read after this session's server caught up with the leader (sync)."""
        client = self._session.client
        await self._session.call(client.sync_async, paths.BROKER_IDS)
        return sorted(int(child) for child in await self._session.call(client.get_children_async, paths.BROKER_IDS))

    async def live_brokers(self) -> dict[int, BrokerRegistration]:
        client = self._session.client
        ids = await self._session.call(client.get_children_async, paths.BROKER_IDS)
        brokers: dict[int, BrokerRegistration] = {}
        for child in ids:
            try:
                data, stat = await self._session.call(client.get_async, paths.broker(int(child)))
            except NoNodeError:
                continue  # it went away between the two reads
            brokers[int(child)] = BrokerRegistration.from_json(int(child), data, stat.czxid)
        return brokers

    def watch_broker_ids(self, handler: Callable[[list[int]], None]) -> None:
        """Call handler on the loop with the live broker ids now and after every change."""
        self._watches.children(paths.BROKER_IDS, int, handler)
