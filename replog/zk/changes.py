"""Values read from ZooKeeper and kept fresh by change notifications, as Kafka's ACLs and entity
configs are: a writer changes the data, then adds a sequential znode under a changes folder; every
watcher of that folder reads the data again."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

T = TypeVar("T")

CHANGES_KEPT_MAX = 100  # notifications left in a changes folder; older ones are deleted


def notify_change(client: KazooClient, folder: str, prefix: str, data: bytes) -> None:
    """Add a change notification under `folder` and delete all but the newest CHANGES_KEPT_MAX
    (another writer may be deleting the same ones)."""
    client.create(f"{folder}/{prefix}", data, sequence=True, makepath=True)
    for stale in sorted(client.get_children(folder))[:-CHANGES_KEPT_MAX]:
        try:
            client.delete(f"{folder}/{stale}")
        except NoNodeError:
            pass


class ChangeWatcher(Generic[T]):
    """Keeps `value` equal to `read(client)`: read at start, read again whenever a notification
    appears under one of `folders`. The value is replaced whole, so readers on other threads
    always see one consistent value."""

    def __init__(self, client: KazooClient, read: Callable[[KazooClient], T], initial: T, folders: Sequence[str],
                 on_change: Callable[[T], None] | None = None) -> None:
        self.client = client
        self.value = initial
        self._read = read
        self._folders = tuple(folders)
        self._on_change = on_change
        self._lock = threading.Lock()

    def start(self, timeout_s: float) -> None:
        self.client.start(timeout_s)
        for folder in self._folders:
            self.client.ensure_path(folder)
        self.reload()
        for folder in self._folders:
            self.client.ChildrenWatch(folder, lambda _children: self.reload())

    def reload(self) -> None:
        with self._lock:
            value = self._read(self.client)
            self.value = value
        if self._on_change is not None:
            self._on_change(value)

    def stop(self) -> None:
        self.client.stop()
        self.client.close()
