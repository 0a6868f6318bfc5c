"""Watching znodes: a value now and after every change, delivered on the loop.

A data watch reads the znode again after each change, tries a failed read again, and is
set again on the new session that follows an expiry (a new session has none of the old
one's watches). A children watch is kazoo's ChildrenWatch recipe.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from kazoo.exceptions import NoNodeError

from replog.zk.records import RecordError
from replog.zk.session import ZkSession

log = logging.getLogger(__name__)

T = TypeVar("T")

# After a failed watch read (connection lost), wait this long before reading again.
WATCH_RETRY_S = 0.2


@dataclasses.dataclass(frozen=True)
class Watched(Generic[T]):
    """A watched znode's value with the zxids that created and last changed it.

    ZooKeeper's zxids order every change in the cluster: a znode created after
    another has a larger created_zxid (znodes created in one multi share it),
    which tells a re-created topic's partition states from the old topic's.
    """

    value: T
    created_zxid: int
    modified_zxid: int
    # ZooKeeper's wall-clock time of the last change, in ms since the epoch (0: unknown).
    modified_ms: int = 0


class Watch:
    """A handle on a data watch; cancel() stops calls to its handler."""

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ZnodeWatches:
    """The data and children watches of one session."""

    def __init__(self, session: ZkSession) -> None:
        self._session = session
        self._data_watches: list[tuple[Watch, Callable[[], None]]] = []
        session.rearm_on_new_session(self._rearm_data_watches)

    def children(self, path: str, parse: Callable[[str], T], handler: Callable[[list[T]], None]) -> None:
        """Call handler on the loop with the znode's children, parsed and sorted, now and after each change."""

        def on_children(children: list[str]) -> None:
            self._session.dispatch(handler, sorted(parse(child) for child in children))

        self._session.client.ChildrenWatch(path, on_children)

    def data(self, path: str, decode: Callable[[bytes], T], handler: Callable[[Watched[T] | None], None]) -> Watch:
        """Call handler on the loop with the znode's value now and after every change (None: absent).

        Each change costs one asynchronous read, and kazoo pipelines them on the
        connection: a burst of changes (an election over a thousand partitions)
        is read back in one round of requests, not one round trip after another.
        """
        watch = Watch()
        client = self._session.client

        # Everything below runs on kazoo's threads and never blocks.
        def arm(_event: Any = None) -> None:
            if not watch.cancelled:
                client.get_async(path, watch=arm).rawlink(on_read)

        def on_read(result: Any) -> None:
            if watch.cancelled:
                return
            try:
                data, stat = result.get_nowait()
            except NoNodeError:
                self._session.dispatch(handler, None)
                client.exists_async(path, watch=arm).rawlink(on_exists)
                return
            except Exception:  # connection loss: the read is tried again once reconnected
                self._session.call_later(WATCH_RETRY_S, arm)
                return
            try:
                value = decode(data)
            except RecordError as error:
                log.error("ignoring %s: %s", path, error)
                return
            self._session.dispatch(handler, Watched(value, stat.czxid, stat.mzxid, stat.mtime))

        def on_exists(result: Any) -> None:
            try:
                stat = result.get_nowait()
            except Exception:
                self._session.call_later(WATCH_RETRY_S, arm)
                return
            if stat is not None:
                arm()  # created between the read and the existence check

        self._data_watches.append((watch, arm))
        arm()
        return watch

    def _rearm_data_watches(self) -> None:
        """A new session has none of the old one's watches: set every live one again."""
        self._data_watches = [(watch, arm) for watch, arm in self._data_watches if not watch.cancelled]
        for _, arm in self._data_watches:
            arm()
