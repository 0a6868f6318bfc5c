"""`replog consume --group` and `replog groups` against a real local cluster, as a user runs them."""

import json
import time

import pytest

from replog.client import Consumer, NewTopic, OffsetAndMetadata, Producer, TopicPartition
from tests.integration.cluster import wait_for

pytestmark = pytest.mark.slow

WAIT_S = 20


@pytest.fixture(scope="module")
def topic(admin, bootstrap):
    """A topic of 2 partitions with 10 records in each (values p<partition>-<i>)."""
    name = "cli-groups"
    admin.create_topics([NewTopic(name, 2, 2)])
    with Producer(bootstrap) as producer:
        for p in range(2):
            producer.send_many(name, [b"p%d-%d" % (p, i) for i in range(10)], partition=p).result(30)
    return name


def printed(result):
    """(partition, offset) of each line `consume --print-offsets` printed."""
    return [tuple(int(x) for x in line.split("\t")[:2]) for line in result.stdout.splitlines()]


def member_of(bootstrap, group, topic_name):
    consumer = Consumer(bootstrap, group_id=group, client_id="cli-test-member", enable_auto_commit=False)
    consumer.subscribe([topic_name])

    def joined():
        consumer.poll(50)  # callbacks and records come through poll()
        return len(consumer.assignment()) == 2

    wait_for(joined, WAIT_S, "the member to join")
    return consumer


def test_consume_with_a_group_commits_what_it_printed_and_the_next_run_goes_on_from_there(cluster, topic):
    first = cluster("consume", topic, "--group", "cli-readers", "--from-beginning", "--max-messages", "12",
                    "--print-offsets")
    second = cluster("consume", topic, "--group", "cli-readers", "--from-beginning", "--timeout-ms", "3000",
                     "--print-offsets")
    assert len(printed(first)) == 12 and "Processed a total of 12 messages" in first.stderr
    everything = sorted(printed(first) + printed(second))
    assert everything == [(p, o) for p in range(2) for o in range(10)]  # each record once, across both runs


def test_groups_list_and_describe_show_an_empty_group_with_its_offsets_and_lag(cluster, topic, admin):
    admin.alter_group_offsets("cli-described", {TopicPartition(topic, 0): 4, TopicPartition(topic, 1): 10})
    listing = json.loads(cluster("groups", "list", "--json").stdout)
    assert {"group": "cli-described", "state": "Empty", "type": ""} in listing["groups"]
    assert "cli-described" in cluster("groups", "list").stdout.splitlines()
    report = json.loads(cluster("groups", "describe", "cli-described", "--json").stdout)
    assert report == {"groups": [{
        "group": "cli-described", "state": "Empty", "group_epoch": 0, "assignor": "", "members": [],
        "offsets": [
            {"topic": topic, "partition": 0, "current_offset": 4, "log_end_offset": 10, "lag": 6, "member_id": None},
            {"topic": topic, "partition": 1, "current_offset": 10, "log_end_offset": 10, "lag": 0,
             "member_id": None},
        ],
    }]}
    text = cluster("groups", "describe", "cli-described").stdout.splitlines()
    assert text[0] == "Consumer group 'cli-described' has no active members."
    assert text[2].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                               "HOST", "CLIENT-ID"]
    assert text[3].split() == ["cli-described", topic, "0", "4", "10", "6", "-", "-", "-"]
    assert cluster("groups", "delete", "cli-described").stdout == (
        "Deletion of requested consumer groups ('cli-described') was successful.\n")


def test_describe_shows_the_members_and_the_state_of_an_active_group(cluster, topic, bootstrap):
    member = member_of(bootstrap, "cli-active", topic)
    try:
        wait_for(lambda: json.loads(cluster("groups", "describe", "cli-active", "--json").stdout)["groups"][0][
            "state"] == "Stable", WAIT_S, "a stable group")
        [group] = json.loads(cluster("groups", "describe", "cli-active", "--json").stdout)["groups"]
        [m] = group["members"]
        assert (m["client_id"], m["host"], m["instance_id"]) == ("cli-test-member", "127.0.0.1", None)
        assert m["assignment"] == [{"topic": topic, "partition": 0}, {"topic": topic, "partition": 1}]
        assert [row["member_id"] for row in group["offsets"]] == [m["member_id"]] * 2
        members = cluster("groups", "describe", "cli-active", "--members").stdout.splitlines()
        assert members[2].split()[:6] == ["cli-active", m["member_id"], "-", "127.0.0.1", "cli-test-member", "2"]
        state = cluster("groups", "describe", "cli-active", "--state").stdout.splitlines()
        assert state[2].split()[3:] == ["uniform", "Stable", str(group["group_epoch"]), str(group["group_epoch"]),
                                        "1"]
        refused = cluster("groups", "reset-offsets", "--group", "cli-active", "--topic", topic, "--to-earliest",
                          "--execute", check=False)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert "only be reset while group 'cli-active' is inactive, but it is Stable" in refused.stderr
        deleting = cluster("groups", "delete", "cli-active", check=False)
        assert deleting.returncode == 1 and "has active members" in deleting.stderr
    finally:
        member.close()


def test_reset_offsets_is_a_dry_run_until_execute_and_an_empty_group_can_be_deleted(cluster, topic, admin):
    tp0, tp1 = TopicPartition(topic, 0), TopicPartition(topic, 1)
    admin.alter_group_offsets("cli-reset", {tp0: 5, tp1: 5})
    dry = cluster("groups", "reset-offsets", "--group", "cli-reset", "--topic", f"{topic}:0", "--shift-by", "-2",
                  "--json")
    assert json.loads(dry.stdout) == {"group": "cli-reset", "executed": False, "offsets": [
        {"topic": topic, "partition": 0, "current_offset": 5, "new_offset": 3}]}
    assert "add --execute" in dry.stderr and admin.list_group_offsets("cli-reset")[tp0] == OffsetAndMetadata(5)
    executed = cluster("groups", "reset-offsets", "--group", "cli-reset", "--topic", topic, "--to-offset", "99",
                       "--execute")
    assert [line.split() for line in executed.stdout.splitlines()[1:]] == [
        ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"], ["cli-reset", topic, "0", "10"], ["cli-reset", topic, "1", "10"]]
    assert "past the end" in executed.stderr  # Kafka's clamp, said
    assert admin.list_group_offsets("cli-reset") == {tp0: OffsetAndMetadata(10), tp1: OffsetAndMetadata(10)}
    cluster("groups", "reset-offsets", "--group", "cli-reset", "--topic", topic, "--to-earliest", "--execute")
    assert admin.list_group_offsets("cli-reset") == {tp0: OffsetAndMetadata(0), tp1: OffsetAndMetadata(0)}
    future = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(time.time() + 3600))
    cluster("groups", "reset-offsets", "--group", "cli-reset", "--topic", f"{topic}:1", "--to-datetime", future,
            "--execute")
    assert admin.list_group_offsets("cli-reset")[tp1] == OffsetAndMetadata(10)  # nothing that late: the end
    assert json.loads(cluster("groups", "delete", "cli-reset", "--json").stdout) == {"deleted": ["cli-reset"]}
    assert "cli-reset" not in cluster("groups", "list").stdout.splitlines()


@pytest.mark.parametrize(("argv", "message"), [
    (["groups", "describe", "never-was"], "group 'never-was' does not exist; see `replog groups list`"),
    (["groups", "delete", "never-was"], "group 'never-was' does not exist"),
    (["groups", "reset-offsets", "--group", "g", "--topic", "cli-groups:7", "--to-earliest"],
     "topic 'cli-groups' has partitions 0..1, not 7"),
    (["groups", "reset-offsets", "--group", "g", "--topic", "no-such-topic", "--to-earliest"],
     "topic 'no-such-topic' does not exist"),
    (["consume", "no-such-topic", "--group", "g"], "topic 'no-such-topic' does not exist"),
    (["consume", "--group", "g", "--include", "cli-("], "does not compile"),
])
def test_bad_input_is_one_sentence_and_a_non_zero_exit(cluster, topic, argv, message):
    result = cluster(*argv, check=False)
    assert result.returncode == 1 and message in result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
