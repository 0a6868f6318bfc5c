"""Consumer groups from the client's side, on a real local cluster (KIP-848): joining, sharing
partitions without ever two owners, handing them over on close, static members, commits, and the
admin's view of groups and their offsets.

`replog dev` runs groups with a 6 s session timeout and 500 ms heartbeats, so "at once" below means
well inside the session timeout: what a clean leave buys over a crash.
"""

import threading
import time

import pytest

from replog.client import (
    AdminError,
    ClientError,
    ClientTimeoutError,
    CommitFailedError,
    Consumer,
    GroupMembershipError,
    NewTopic,
    OffsetAndMetadata,
    Producer,
    TopicPartition,
)
from replog.core.errors import ErrorCode
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.slow

SESSION_TIMEOUT_S = 6  # group.consumer.session.timeout.ms of replog dev
WAIT_S = 20


def create(admin, name, partitions):
    admin.create_topics([NewTopic(name, partitions, 2)])
    return name


def produce(bootstrap, topic, count, partitions):
    """`count` records spread over the partitions, record i in partition i % partitions."""
    with Producer(bootstrap) as producer:
        for i in range(count):
            producer.send(topic, b"v%d" % i, partition=i % partitions)
        producer.flush(30)


def group_consumer(bootstrap, group, **configs):
    return Consumer(bootstrap, group_id=group, auto_offset_reset="earliest", **configs)


def poll_until(consumers, condition, what, timeout_s=WAIT_S):
    """Poll every consumer in turn until condition() holds; returns the records each poll gave."""
    records = {id(c): [] for c in consumers}

    def polled():
        for consumer in consumers:
            records[id(consumer)] += consumer.poll(50)
        return condition()

    wait_for(polled, timeout_s, what, interval_s=0)
    return [records[id(c)] for c in consumers]


class Owners:
    """Who holds each partition by the consumers' own callbacks. A partition assigned to one consumer
    while another still holds it is recorded as a double: the thing that must never happen."""

    def __init__(self):
        self._lock = threading.Lock()
        self.holders: dict[TopicPartition, str] = {}
        self.doubles: list[tuple[TopicPartition, str, str]] = []
        self.events: list[tuple[str, str, frozenset]] = []

    def callbacks(self, name):
        def assigned(partitions):
            with self._lock:
                self.events.append((name, "assigned", frozenset(partitions)))
                for tp in partitions:
                    if self.holders.get(tp, name) != name:
                        self.doubles.append((tp, self.holders[tp], name))
                    self.holders[tp] = name

        def revoked(partitions):
            with self._lock:
                self.events.append((name, "revoked", frozenset(partitions)))
                for tp in partitions:
                    if self.holders.get(tp) == name:
                        del self.holders[tp]

        def lost(partitions):
            revoked(partitions)
            with self._lock:
                self.events[-1] = (name, "lost", frozenset(partitions))

        return {"on_partitions_assigned": assigned, "on_partitions_revoked": revoked, "on_partitions_lost": lost}

    def held_by(self, name):
        with self._lock:
            return {tp for tp, holder in self.holders.items() if holder == name}

    def events_of(self, name):
        with self._lock:
            return [(kind, partitions) for who, kind, partitions in self.events if who == name]


def partitions_of(topic, count):
    return {TopicPartition(topic, p) for p in range(count)}


# -- membership --------------------------------------------------------------------------------------


def test_a_consumer_joins_its_group_and_reads_every_partition(admin, bootstrap):
    topic = create(admin, "join-and-read", 3)
    produce(bootstrap, topic, 30, 3)
    owners = Owners()
    with group_consumer(bootstrap, "joiners") as consumer:
        consumer.subscribe([topic], **owners.callbacks("c"))
        [records] = poll_until([consumer], lambda: len(owners.held_by("c")) == 3 and consumer.position(
            TopicPartition(topic, 0)) == 10 and all(consumer.position(tp) == 10 for tp in partitions_of(topic, 3)),
            "the consumer to read all 30 records")
        assert sorted(r.value for r in records) == sorted(b"v%d" % i for i in range(30))
        assert consumer.assignment() == partitions_of(topic, 3)
        assert owners.events_of("c") == [("assigned", frozenset(partitions_of(topic, 3)))]


def test_two_consumers_split_twelve_partitions_never_both_hold_one_and_a_closing_one_hands_over_at_once(
        admin, bootstrap):
    topic = create(admin, "split-twelve", 12)
    owners = Owners()
    first = group_consumer(bootstrap, "splitters")
    second = group_consumer(bootstrap, "splitters")
    try:
        first.subscribe([topic], **owners.callbacks("first"))
        poll_until([first], lambda: len(owners.held_by("first")) == 12, "the first consumer to hold all 12")
        second.subscribe([topic], **owners.callbacks("second"))
        poll_until([first, second], lambda: len(owners.held_by("first")) == len(owners.held_by("second")) == 6,
                   "the two consumers to hold 6 partitions each")
        assert owners.held_by("first") | owners.held_by("second") == partitions_of(topic, 12)
        assert first.assignment() == owners.held_by("first") and second.assignment() == owners.held_by("second")
        closed_at = time.monotonic()
        first.close()
        poll_until([second], lambda: len(owners.held_by("second")) == 12, "the second consumer to take over")
        assert time.monotonic() - closed_at < SESSION_TIMEOUT_S / 2  # a leave, not a session timeout
        assert [kind for kind, _ in owners.events_of("second")] == ["assigned", "assigned"]  # nothing taken away
        assert owners.events_of("first")[-1] == ("revoked", frozenset(owners.held_by("second") - set().union(
            *(ps for kind, ps in owners.events_of("second")[:1]))))  # close gives up what it held
    finally:
        first.close()
        second.close()
    assert owners.doubles == []


def test_a_static_member_restarted_within_the_session_timeout_keeps_its_partitions(admin, bootstrap):
    topic = create(admin, "static-restart", 12)
    owners = Owners()
    stay = group_consumer(bootstrap, "statics", group_instance_id="stay")
    bounce = group_consumer(bootstrap, "statics", group_instance_id="bounce")
    try:
        stay.subscribe([topic], **owners.callbacks("stay"))
        bounce.subscribe([topic], **owners.callbacks("bounce"))
        poll_until([stay, bounce], lambda: len(owners.held_by("stay")) == len(owners.held_by("bounce")) == 6,
                   "the two static members to hold 6 partitions each")
        held = owners.held_by("bounce")
        stay_events = len(owners.events_of("stay"))
        bounce.close()  # epoch -2: back soon under the same instance id
        bounce = group_consumer(bootstrap, "statics", group_instance_id="bounce")
        bounce.subscribe([topic], **owners.callbacks("bounce"))
        poll_until([stay, bounce], lambda: owners.held_by("bounce") == held, "the restarted member to hold its 6")
        assert bounce.assignment() == held
        # The other member saw nothing move.
        assert owners.events_of("stay")[stay_events:] == [] and owners.held_by("stay") == partitions_of(
            topic, 12) - held
    finally:
        stay.close()
        bounce.close()
    assert owners.doubles == []


def test_a_regex_subscription_takes_matching_topics_and_one_created_later(admin, bootstrap):
    create(admin, "pattern-a", 2)
    create(admin, "pattern-b", 1)
    create(admin, "other-pattern", 1)
    with group_consumer(bootstrap, "patterns") as consumer:
        consumer.subscribe("pattern-.*")
        expected = partitions_of("pattern-a", 2) | partitions_of("pattern-b", 1)
        poll_until([consumer], lambda: consumer.assignment() == expected, "the partitions of pattern-a and pattern-b")
        create(admin, "pattern-c", 1)
        poll_until([consumer], lambda: consumer.assignment() == expected | {TopicPartition("pattern-c", 0)},
                   "the new topic pattern-c to be assigned")


# -- commits -------------------------------------------------------------------------------------------


def test_commits_survive_the_consumer_and_a_new_one_resumes_from_them(admin, bootstrap):
    topic = create(admin, "resume", 1)
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, 20, 1)
    with group_consumer(bootstrap, "resumers", enable_auto_commit=False) as consumer:
        consumer.subscribe([topic])
        poll_until([consumer], lambda: consumer.assignment() == {tp} and consumer.position(tp) == 20,
                   "the first consumer to read all 20")
        assert consumer.commit({tp: 12}) == {tp: OffsetAndMetadata(12)}
        assert consumer.committed([tp]) == {tp: OffsetAndMetadata(12)}
    assert admin.list_group_offsets("resumers") == {tp: OffsetAndMetadata(12)}
    with group_consumer(bootstrap, "resumers", enable_auto_commit=False) as consumer:
        consumer.subscribe([topic])
        [records] = poll_until([consumer], lambda: consumer.assignment() == {tp} and consumer.position(tp) == 20,
                               "the second consumer to read the rest")
        assert [r.offset for r in records] == list(range(12, 20))


def test_auto_commit_commits_what_earlier_polls_returned_and_never_more(admin, bootstrap):
    topic = create(admin, "auto-commit", 1)
    tp = TopicPartition(topic, 0)
    produce(bootstrap, topic, 50, 1)
    consumer = group_consumer(bootstrap, "auto-committers", max_poll_records=5, auto_commit_interval_ms=100)
    try:
        consumer.subscribe([topic])
        [first] = poll_until([consumer], lambda: consumer.assignment() == {tp} and consumer.position(tp) == 5,
                             "the first poll's 5 records")
        assert [r.offset for r in first] == list(range(5))
        assert [r.offset for r in consumer.poll(5_000)] == list(range(5, 10))
        # Records 5..9 are still being worked on: only 0..4 count as done, though all 50 are fetched.
        wait_for(lambda: consumer.committed([tp])[tp] is not None, WAIT_S, "an automatic commit")
        assert consumer.committed([tp])[tp].offset == 5
    finally:
        consumer.close()
    assert admin.list_group_offsets("auto-committers")[tp].offset == 10  # close commits what poll() returned


def test_a_consumer_outside_the_group_commits_only_while_the_group_is_empty(admin, bootstrap):
    topic = create(admin, "simple-commits", 2)
    tp = TopicPartition(topic, 0)
    with group_consumer(bootstrap, "simple", enable_auto_commit=False) as outsider:
        outsider.assign([tp])
        outsider.commit({tp: 3})  # member epoch -1: no membership needed while the group is empty
        assert outsider.committed([tp]) == {tp: OffsetAndMetadata(3)}
        with group_consumer(bootstrap, "simple", enable_auto_commit=False) as another:
            another.assign([tp])
            assert another.position(tp) == 3  # a consumer with a group id starts at the committed offset
        with group_consumer(bootstrap, "simple") as member:
            member.subscribe([topic])
            poll_until([member], lambda: len(member.assignment()) == 2, "the member to join")
            with pytest.raises(CommitFailedError) as refused:
                outsider.commit({tp: 4})
            assert refused.value.error_code is ErrorCode.UNKNOWN_MEMBER_ID
            with pytest.raises(AdminError, match="has active members") as altered:
                admin.alter_group_offsets("simple", {tp: 0})
            assert altered.value.error_code is ErrorCode.UNKNOWN_MEMBER_ID
    admin.alter_group_offsets("simple", {tp: 1})
    assert admin.list_group_offsets("simple", [tp]) == {tp: OffsetAndMetadata(1)}


def test_a_commit_for_a_partition_that_does_not_exist_fails_clearly(admin, bootstrap):
    topic = create(admin, "no-such-partition", 1)
    with group_consumer(bootstrap, "bad-commits", enable_auto_commit=False) as consumer:
        with pytest.raises(CommitFailedError, match=f"{topic}-7") as failed:
            consumer.commit({TopicPartition(topic, 7): 1})
        assert failed.value.error_code is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# -- the admin's view ------------------------------------------------------------------------------------


def test_the_admin_lists_describes_and_deletes_groups_and_their_offsets(admin, bootstrap):
    topic = create(admin, "described", 2)
    member = group_consumer(bootstrap, "described-group", client_id="the-client")
    try:
        member.subscribe([topic])
        poll_until([member], lambda: len(member.assignment()) == 2, "the member to hold both partitions")
        member.commit({TopicPartition(topic, 0): 1})
        wait_for(lambda: admin.describe_groups(["described-group"])[0].state == "Stable", WAIT_S, "a stable group")
        assert ("described-group", "Stable", "consumer") in {(g.group_id, g.state, g.type) for g in admin.list_groups()}
        assert "described-group" in {g.group_id for g in admin.list_groups(["stable"])}
        assert "described-group" not in {g.group_id for g in admin.list_groups(["Empty"])}
        [group] = admin.describe_groups(["described-group"])
        assert group.assignor == "uniform" and group.group_epoch == group.assignment_epoch  # stable: caught up
        [m] = group.members
        assert (m.client_id, m.host, m.state, m.subscribed_topics) == ("the-client", "127.0.0.1", "Stable", (topic,))
        assert m.assignment == m.target_assignment == partitions_of(topic, 2) and m.member_epoch == group.group_epoch
        with pytest.raises(AdminError, match="has active members") as refused:
            admin.delete_groups(["described-group"])
        assert refused.value.error_code is ErrorCode.NON_EMPTY_GROUP
        with pytest.raises(AdminError) as subscribed:
            admin.delete_group_offsets("described-group", [TopicPartition(topic, 0)])
        assert subscribed.value.error_code is ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
    finally:
        member.close()
    assert admin.describe_groups(["described-group"])[0].members == ()
    admin.delete_group_offsets("described-group", [TopicPartition(topic, 0)])
    assert TopicPartition(topic, 0) not in admin.list_group_offsets("described-group")
    admin.delete_groups(["described-group"])
    with pytest.raises(AdminError, match="'described-group' does not exist") as gone:
        admin.describe_groups(["described-group"])
    assert gone.value.error_code is ErrorCode.GROUP_ID_NOT_FOUND


def test_bad_group_requests_are_one_clear_error(admin):
    with pytest.raises(AdminError, match="must not be empty"):
        admin.describe_groups([""])
    with pytest.raises(AdminError, match="'never-was' does not exist"):
        admin.delete_groups(["never-was"])
    with pytest.raises(ClientError, match="group state"):
        admin.list_groups(["Sleeping"])


# -- fencing -----------------------------------------------------------------------------------------


def test_a_second_consumer_with_the_same_instance_id_is_refused_and_the_first_keeps_its_partitions(admin, bootstrap):
    topic = create(admin, "instance-twins", 2)
    with group_consumer(bootstrap, "twins", group_instance_id="twin") as first, \
            group_consumer(bootstrap, "twins", group_instance_id="twin") as second:
        first.subscribe([topic])
        poll_until([first], lambda: len(first.assignment()) == 2, "the first twin to join")
        second.subscribe([topic])

        def keep_polling():
            second.poll(50)
            return False

        with pytest.raises(GroupMembershipError, match="UNRELEASED_INSTANCE_ID") as refused:
            wait_for(keep_polling, WAIT_S, "the second twin to be refused")
        assert refused.value.error_code is ErrorCode.UNRELEASED_INSTANCE_ID
        first.poll(0)
        assert first.assignment() == partitions_of(topic, 2) and second.assignment() == set()


def test_a_member_cut_off_past_its_session_timeout_loses_its_partitions_and_joins_again(admin, bootstrap,
                                                                                         monkeypatch):
    topic = create(admin, "cut-off", 4)
    produce(bootstrap, topic, 40, 4)
    owners = Owners()
    cut, other = group_consumer(bootstrap, "cut-offs"), group_consumer(bootstrap, "cut-offs")
    try:
        cut.subscribe([topic], **owners.callbacks("cut"))
        other.subscribe([topic], **owners.callbacks("other"))
        poll_until([cut, other], lambda: len(owners.held_by("cut")) == len(owners.held_by("other")) == 2,
                   "two partitions each")
        coordinators = cut._member._coordinators  # the member's line to its coordinator
        real_call = coordinators.call
        silenced = threading.Event()

        async def unanswered(group_id, method, *args):
            if method == "ConsumerGroupHeartbeat" and not silenced.is_set():
                raise ClientTimeoutError("the coordinator is out of reach")
            return await real_call(group_id, method, *args)

        monkeypatch.setattr(coordinators, "call", unanswered)
        poll_until([cut, other], lambda: len(owners.held_by("other")) == 4, "the other member to take over all 4",
                   timeout_s=SESSION_TIMEOUT_S * 3)
        silenced.set()  # the coordinator answers again: the cut-off member hears it was removed
        poll_until([cut, other], lambda: len(owners.held_by("cut")) == len(owners.held_by("other")) == 2,
                   "the cut-off member to get two partitions again", timeout_s=SESSION_TIMEOUT_S * 3)
        assert [kind for kind, _ in owners.events_of("cut")][-2:] == ["lost", "assigned"]
    finally:
        cut.close()
        other.close()
