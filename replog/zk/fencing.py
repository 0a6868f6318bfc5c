"""The controller's lease and the fenced multi that every controller write is (DESIGN §7).

A controller write is one ZooKeeper multi that begins with a check of /controller_epoch at the
version the controller won, so a controller that was paused and replaced cannot write anything.
`commit` turns the ways such a multi fails into exceptions: fenced (ControllerFencedError), cut
off mid-way (WriteOutcomeUnknown); `raise_failure` names any other failed operation.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kazoo.exceptions import (
    BadVersionError,
    KazooException,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    RuntimeInconsistency,
)

from replog.zk import paths
from replog.zk.errors import ControllerFencedError, StaleVersionError, StoreError, WriteOutcomeUnknown
from replog.zk.session import ZkSession

# ZooKeeper refuses requests above jute.maxbuffer (1 MiB by default); a partition state
# write is about 200 bytes, and each of its two copies in notifications about 100, so this
# many operations keep a multi far below it.
MULTI_OPS_MAX = 1000


@dataclasses.dataclass(frozen=True)
class ControllerLease:
    """Proof of having won a controller election: the epoch and the znode version that fence it."""

    controller_id: int
    epoch: int
    epoch_zk_version: int


def fenced_transaction(session: ZkSession, lease: ControllerLease) -> Any:
    """A multi whose first operation checks that /controller_epoch is still at the lease's version."""
    txn = session.client.transaction()
    txn.check(paths.CONTROLLER_EPOCH, version=lease.epoch_zk_version)
    return txn


async def commit(session: ZkSession, txn: Any) -> list[Any]:
    """Commit a transaction whose first operation is the controller epoch check."""
    try:
        results = await session.call(txn.commit_async)
    except KazooException as error:
        raise WriteOutcomeUnknown(
            f"ZooKeeper connection failed during a write ({type(error).__name__}); "
            "its outcome is unknown") from None
    if isinstance(results[0], Exception) and not isinstance(results[0], RolledBackError):
        raise ControllerFencedError(
            f"/controller_epoch is no longer at the version this controller won "
            f"({type(results[0]).__name__}): another controller was elected")
    return results


def first_failure(results: list[Any]) -> tuple[int, Exception] | None:
    """The operation that made a multi fail, and its error; None when the multi was applied.

    ZooKeeper marks the operations before the failing one RolledBack and those
    after it RuntimeInconsistency.
    """
    for index, result in enumerate(results):
        if isinstance(result, Exception) and not isinstance(result, (RolledBackError, RuntimeInconsistency)):
            return index, result
    return None


def raise_failure(results: list[Any], what: str) -> None:
    """Raise StaleVersionError when the multi found a znode changed, gone or already there,
    StoreError when it failed otherwise; nothing when it was applied."""
    failure = first_failure(results)
    if failure is None:
        return
    index, error = failure
    if isinstance(error, (BadVersionError, NoNodeError, NodeExistsError)):
        raise StaleVersionError(f"{what} failed: {type(error).__name__} at operation {index}; "
                                "ZooKeeper changed since it was read")
    raise StoreError(f"{what} failed: {type(error).__name__} at operation {index}")
