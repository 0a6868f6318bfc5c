"""The controller election: /controller, /controller_epoch, and the lease that fences (DESIGN §7)."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import BadVersionError, KazooException, NoNodeError, RolledBackError

from replog.zk import paths
from replog.zk.fencing import ControllerLease, fenced_transaction
from replog.zk.session import ZkSession

log = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class ControllerInfo:
    """The active controller as /controller records it."""

    controller_id: int
    host: str
    port: int

    @classmethod
    def from_json(cls, data: bytes) -> ControllerInfo:
        fields = json.loads(data)
        return cls(fields["brokerid"], fields.get("host", ""), fields.get("port", 0))


class ControllerElection:
    """Standing for controller, resigning, and learning who the controller is."""

    def __init__(self, session: ZkSession) -> None:
        self._session = session

    async def elect_controller(self, controller_id: int, host: str, port: int) -> ControllerLease | None:
        """Try to become controller: one multi creating /controller and bumping /controller_epoch.

        The bump is conditional on the epoch znode's version, so two candidates
        cannot both win, and every later write is checked against the version
        this returns (DESIGN §7).
        """
        epoch, version = await self.read_controller_epoch() or (0, None)
        payload = json.dumps({"version": 1, "brokerid": controller_id, "host": host, "port": port}).encode()
        txn = self._session.client.transaction()
        txn.create(paths.CONTROLLER, payload, ephemeral=True)
        if version is None:
            txn.create(paths.CONTROLLER_EPOCH, str(epoch + 1).encode())
        else:
            txn.set_data(paths.CONTROLLER_EPOCH, str(epoch + 1).encode(), version=version)
        results = await self._session.call(txn.commit_async)
        if any(isinstance(r, Exception) for r in results):
            failures = [type(r).__name__ for r in results if isinstance(r, Exception)
                        and not isinstance(r, RolledBackError)]
            log.debug("controller election lost: %s", ", ".join(failures))
            return None
        new_version = 0 if version is None else results[1].version
        return ControllerLease(controller_id, epoch + 1, new_version)

    async def read_controller_epoch(self) -> tuple[int, int] | None:
        """The controller epoch and the version of /controller_epoch (what a lease holds), or None."""
        try:
            data, stat = await self._session.call(self._session.client.get_async, paths.CONTROLLER_EPOCH)
        except NoNodeError:
            return None
        return int(data), stat.version

    def watch_controller(self, handler: Callable[[ControllerInfo | None], None]) -> None:
        """Call handler on the loop with the active controller (None when there is none)."""

        def on_data(data: bytes | None, _stat: Any) -> None:
            self._session.dispatch(handler, ControllerInfo.from_json(data) if data else None)

        self._session.client.DataWatch(paths.CONTROLLER, on_data)

    async def resign_controller(self, lease: ControllerLease) -> None:
        """Delete /controller if it is still ours (fenced by the epoch version)."""
        txn = fenced_transaction(self._session, lease)
        txn.delete(paths.CONTROLLER)
        try:
            await self._session.call(txn.commit_async)
        except (KazooException, BadVersionError) as error:
            log.info("controller znode not removed: %s", error)
