"""WatchMetadata deltas: what a stream is sent when the image changes."""

from replog.metadata import render
from replog.metadata.image import MetadataImage, TopicImage
from replog.zk.records import LeaderAndIsr, TopicAssignment
from replog.zk.store import BrokerRegistration

REPLICAS = (1, 2, 3)


def topic(name: str, leader: int) -> TopicImage:
    assignment = TopicAssignment(f"{name}-id", {0: REPLICAS, 1: REPLICAS})
    return TopicImage.build(name, assignment, {p: LeaderAndIsr(leader, 0, REPLICAS, 1, 0) for p in (0, 1)})


def brokers(*ids: int) -> dict[int, BrokerRegistration]:
    return {b: BrokerRegistration(b, "127.0.0.1", 9000 + b, None, 0, b) for b in ids}


def image(live=(1, 2, 3), **topics: TopicImage) -> MetadataImage:
    return MetadataImage(cluster_id="c").with_brokers(brokers(*live)).with_topics(topics)


def test_a_delta_carries_the_topics_whose_image_changed_and_the_removed_ones():
    orders, payments, audit = topic("orders", 1), topic("payments", 1), topic("audit", 1)
    before = image(orders=orders, payments=payments, audit=audit)
    after = before.with_topics({"orders": topic("orders", 2), "audit": None})
    message = render.delta(before, after, ())
    assert [t.name for t in message.changed_topics] == ["orders"]
    assert [p.leader for p in message.changed_topics[0].partitions] == [2, 2]
    assert list(message.removed_topics) == ["audit"]
    assert render.delta(before, after, ("payments",)) is None, "nothing the stream follows changed"


def test_a_broker_going_away_changes_every_topic_it_hosts():
    before = image(orders=topic("orders", 1), payments=topic("payments", 2))
    after = before.with_brokers(brokers(2, 3))
    message = render.delta(before, after, ())
    assert list(message.removed_broker_ids) == [1]
    rendered = {t.name: t.partitions[0] for t in message.changed_topics}
    assert rendered["orders"].leader == -1 and list(rendered["orders"].offline_replicas) == [1]
    assert rendered["payments"].leader == 2 and list(rendered["payments"].offline_replicas) == [1]
