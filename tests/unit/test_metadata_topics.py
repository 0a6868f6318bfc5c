"""How the metadata service follows partition states: from the controller's notification of each
write, all at once, and from each state's own watch, which then only confirms them."""

from replog.core.topic_partition import TopicPartition
from replog.metadata.topics import TopicFollower
from replog.zk.records import LeaderAndIsr, StateChanges, TopicAssignment
from replog.zk.store import Watch, Watched

REPLICAS = (1, 2, 3)
ORDERS = [TopicPartition("orders", p) for p in range(3)]


class Store:
    """The watches TopicFollower sets, each handler kept for the test to call."""

    def __init__(self) -> None:
        self.handlers: dict[object, object] = {}

    def watch_topics_marked_for_deletion(self, handler) -> None:
        self.handlers["deletions"] = handler

    def watch_topic_names(self, handler) -> None:
        self.handlers["names"] = handler

    def watch_topic(self, name, handler) -> Watch:
        self.handlers[name] = handler
        return Watch()

    def watch_partition_state(self, partition, handler) -> Watch:
        self.handlers[partition] = handler
        return Watch()


def led_by(leader: int, partition_epoch: int) -> LeaderAndIsr:
    return LeaderAndIsr(leader, partition_epoch, (leader,), 1, partition_epoch)


def following_orders(created_zxid: int = 10) -> tuple[TopicFollower, Store, list[str]]:
    """A follower that has read topic `orders` whole: every partition led by broker 1."""
    store, dirty = Store(), []
    follower = TopicFollower(store, dirty.append)
    follower.start()
    store.handlers["deletions"]([])
    store.handlers["names"](["orders"])
    assignment = TopicAssignment("orders-id", {tp.partition: REPLICAS for tp in ORDERS})
    store.handlers["orders"](Watched(assignment, created_zxid, created_zxid))
    for tp in ORDERS:
        store.handlers[tp](Watched(led_by(1, 0), created_zxid, created_zxid))
    dirty.clear()
    return follower, store, dirty


def leaders(follower: TopicFollower) -> list[int]:
    return [p.leader for p in follower.image_of("orders").partitions]


def test_a_writes_states_arrive_together_and_their_own_watches_then_change_nothing():
    follower, store, dirty = following_orders()
    election = StateChanges({tp: led_by(2, 1) for tp in ORDERS[:2]})
    follower.on_state_changes(Watched(election, 5, 20))
    assert leaders(follower) == [2, 2, 1]
    assert dirty, "the topic is rebuilt for the notification"

    dirty.clear()
    for tp in ORDERS[:2]:
        store.handlers[tp](Watched(led_by(2, 1), 10, 20))  # the same write, through the state's watch
    store.handlers[ORDERS[0]](Watched(led_by(3, 0), 10, 15))  # an older write, delivered late
    assert dirty == [] and leaders(follower) == [2, 2, 1]

    store.handlers[ORDERS[2]](Watched(led_by(3, 1), 10, 30))  # a write the notification did not show
    assert leaders(follower) == [2, 2, 3]


def test_a_notification_older_than_the_topic_belongs_to_a_deleted_topic_of_that_name():
    follower, _, _ = following_orders(created_zxid=40)
    follower.on_state_changes(Watched(StateChanges({tp: led_by(2, 1) for tp in ORDERS}), 5, 30))
    follower.on_state_changes(Watched(StateChanges({TopicPartition("unknown", 0): led_by(2, 1)}), 5, 50))
    assert leaders(follower) == [1, 1, 1]
