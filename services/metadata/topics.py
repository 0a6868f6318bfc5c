"""Following topics in ZooKeeper: a watch on the topic list, on each topic, and on each partition state.

Watch events only record what arrived and mark the topic dirty; the metadata
service turns all the dirty topics into one new image per burst of events.
The states a controller write changed also arrive together, from the partition
state notification it sets in the same multi; the watch of each state then only
confirms them (or brings one that a quick second write hid from the notification).

A topic marked for deletion (`/admin/delete_topics/<topic>`) leaves the image
at once, as Kafka's brokers drop it from their metadata caches, although its
znodes go only once its replicas are deleted. A topic deleted and created
again under the same name is a new topic (a new topic id): partition states
created before the current topic znode belong to the old one and are ignored,
so the image never mixes the two.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from replog.core.topic_partition import TopicPartition
from replog.metadata.image import TopicImage
from replog.zk.records import LeaderAndIsr, StateChanges, TopicAssignment
from replog.zk.store import MetadataStore, Watch, Watched


@dataclasses.dataclass
class _FollowedTopic:
    name: str
    topic_watch: Watch
    assignment: Watched[TopicAssignment] | None = None
    states: dict[int, Watched[LeaderAndIsr]] = dataclasses.field(default_factory=dict)
    state_watches: dict[int, Watch] = dataclasses.field(default_factory=dict)
    listed: bool = False  # in the image already (this incarnation of the topic)

    def cancel(self) -> None:
        self.topic_watch.cancel()
        for watch in self.state_watches.values():
            watch.cancel()

    def current_states(self) -> dict[int, LeaderAndIsr]:
        """The states that belong to the current topic znode, not to a deleted topic of the same name."""
        if self.assignment is None:
            return {}
        created = self.assignment.created_zxid
        return {p: s.value for p, s in self.states.items() if s.created_zxid >= created}


class TopicFollower:
    """The topics in ZooKeeper, as `TopicImage`s for the image."""

    def __init__(self, store: MetadataStore, on_dirty: Callable[[str], None]) -> None:
        self._store = store
        self._on_dirty = on_dirty
        self._topics: dict[str, _FollowedTopic] = {}
        self._being_deleted: frozenset[str] = frozenset()

    def start(self) -> None:
        self._store.watch_topics_marked_for_deletion(self._on_deletions)
        self._store.watch_topic_names(self._on_names)

    def image_of(self, name: str) -> TopicImage | None:
        """The topic as the image should show it; None while it is absent, being deleted, or not
        fully read.

        A new topic appears once the state of every partition has been read, so
        a client never sees half of a topic that was created whole.
        """
        topic = self._topics.get(name)
        if topic is None or topic.assignment is None or name in self._being_deleted:
            return None
        assignment = topic.assignment.value
        states = topic.current_states()
        if not topic.listed and not set(assignment.partitions) <= states.keys():
            return None
        topic.listed = True
        return TopicImage.build(name, assignment, states)

    def _on_deletions(self, names: list[str]) -> None:
        before, self._being_deleted = self._being_deleted, frozenset(names)
        for name in before ^ self._being_deleted:
            self._on_dirty(name)

    def _on_names(self, names: list[str]) -> None:
        for name in set(names) - self._topics.keys():
            watch = self._store.watch_topic(name, lambda assignment, name=name: self._on_assignment(name, assignment))
            self._topics[name] = _FollowedTopic(name, watch)
        for name in self._topics.keys() - set(names):
            self._topics.pop(name).cancel()
            self._on_dirty(name)

    def _on_assignment(self, name: str, assignment: Watched[TopicAssignment] | None) -> None:
        topic = self._topics.get(name)
        if topic is None:
            return
        previous = topic.assignment
        if assignment is None or previous is None or assignment.created_zxid != previous.created_zxid:
            topic.listed = False  # gone, or another incarnation: it must be read whole again
        topic.assignment = assignment
        partitions = set(assignment.value.partitions) if assignment else set()
        for partition in partitions - topic.state_watches.keys():
            tp = TopicPartition(name, partition)
            topic.state_watches[partition] = self._store.watch_partition_state(
                tp, lambda state, tp=tp: self._on_state(tp, state))
        for partition in topic.state_watches.keys() - partitions:
            topic.state_watches.pop(partition).cancel()
            topic.states.pop(partition, None)
        self._on_dirty(name)

    def on_state_changes(self, changes: Watched[StateChanges]) -> None:
        """The states one controller write set, all at once (ahead of their own watches).

        A state belongs to the topic as this follower knows it if the write came after that
        topic znode was created; a topic not known yet is read whole when it is.
        """
        for partition, state in changes.value.states.items():
            topic = self._topics.get(partition.topic)
            if topic is None or topic.assignment is None or topic.assignment.created_zxid >= changes.modified_zxid:
                continue
            self._on_state(partition, Watched(state, topic.assignment.created_zxid, changes.modified_zxid))

    def _on_state(self, partition: TopicPartition, state: Watched[LeaderAndIsr] | None) -> None:
        topic = self._topics.get(partition.topic)
        if topic is None or partition.partition not in topic.state_watches:
            return
        known = topic.states.get(partition.partition)
        if state is None:
            topic.states.pop(partition.partition, None)
        elif known is None or state.modified_zxid > known.modified_zxid:
            topic.states[partition.partition] = state
        else:
            return  # the notification brought this value already, or a newer one
        self._on_dirty(partition.topic)
