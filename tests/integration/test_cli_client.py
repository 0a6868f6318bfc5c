"""The client commands against a real local cluster: topics, produce, consume, bench."""

import glob
import json
import os
import signal
import subprocess
import threading

import pytest

from tests.integration.cluster import REPLOG, wait_for

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def env(cluster):
    """The environment of a user's shell that finds the cluster through REPLOG_BOOTSTRAP."""
    return {**os.environ, "REPLOG_BOOTSTRAP": cluster.status()["metadata"][0]["address"]}


@pytest.fixture(scope="module")
def replog(env):
    """Run `replog ...`; with stdin as bytes, stdout and stderr come back as bytes too."""

    def run(*args, stdin="", check=True):
        result = subprocess.run([*REPLOG, *args], input=stdin, capture_output=True, text=isinstance(stdin, str),
                                env=env, timeout=180)
        if check and result.returncode != 0:
            raise AssertionError(f"replog {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    return run


def test_topics_create_describe_and_list(replog):
    assert replog("topics", "create", "cli-a", "--partitions", "3", "--replication-factor", "3",
                  "--config", "min.insync.replicas=2").stdout == "Created topic cli-a.\n"
    assert "cli-a" in replog("topics", "list").stdout.split()
    text = replog("topics", "describe", "cli-a").stdout.splitlines()
    assert text[0].startswith("Topic: cli-a  TopicId: ") and "PartitionCount: 3  ReplicationFactor: 3" in text[0]
    assert [line.split("  ")[1] for line in text[1:]] == ["Partition: 0", "Partition: 1", "Partition: 2"]
    report = json.loads(replog("topics", "describe", "cli-a", "--json").stdout)
    assert list(report) == ["topics"]
    [topic] = report["topics"]
    assert list(topic) == ["name", "configs", "partitions"]
    assert topic["name"] == "cli-a"
    assert [sorted(p["replicas"]) for p in topic["partitions"]] == [[1, 2, 3]] * 3
    assert all(set(p) == {"partition", "leader", "leader_epoch", "replicas", "isr"} for p in topic["partitions"])


def test_topics_create_with_a_replica_assignment(replog):
    replog("topics", "create", "cli-assigned", "--replica-assignment", "1:2,2:3,3:1")
    report = json.loads(replog("topics", "describe", "cli-assigned", "--json").stdout)
    assert [p["replicas"] for p in report["topics"][0]["partitions"]] == [[1, 2], [2, 3], [3, 1]]
    assert [p["leader"] for p in report["topics"][0]["partitions"]] == [1, 2, 3]


def test_topic_errors_are_one_sentence(replog):
    replog("topics", "create", "cli-dup", "--partitions", "1", "--replication-factor", "1")
    again = replog("topics", "create", "cli-dup", "--partitions", "1", "--replication-factor", "1", check=False)
    assert again.returncode == 1 and "TOPIC_ALREADY_EXISTS" in again.stderr and "Traceback" not in again.stderr
    quiet = replog("topics", "create", "cli-dup", "--partitions", "1", "--replication-factor", "1", "--if-not-exists")
    assert (quiet.stdout, quiet.stderr) == ("", "")
    too_many = replog("topics", "create", "cli-rf", "--partitions", "1", "--replication-factor", "5", check=False)
    assert too_many.returncode == 1 and "INVALID_REPLICATION_FACTOR" in too_many.stderr
    missing = replog("topics", "describe", "cli-missing", check=False)
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    assert "replog topics create cli-missing" in missing.stderr, "the error says how to create it"


def test_produced_lines_come_back_from_consume(replog):
    replog("topics", "create", "cli-lines", "--partitions", "2", "--replication-factor", "3")
    lines = [f"line {i}" for i in range(200)]
    reported = replog("produce", "cli-lines", "--report-offsets", stdin="\n".join(lines) + "\n").stdout
    rows = [row.split("\t") for row in reported.splitlines()]
    assert [r[2] for r in rows] == lines
    consumed = replog("consume", "cli-lines", "--from-beginning", "--max-messages", "200", "--print-offsets")
    got = {(r.split("\t")[0], r.split("\t")[1]): r.split("\t")[2] for r in consumed.stdout.splitlines()}
    assert got == {(r[0], r[1]): r[2] for r in rows}
    assert "Processed a total of 200 messages" in consumed.stderr


def test_dump_log_reads_each_replica_as_its_broker_wrote_it(replog, cluster):
    """The topic stores gzip and the leader's time, whatever the producer sent: every replica holds the
    leader's batches, and the console consumer prints the leader's time."""
    replog("topics", "create", "cli-dump", "--partitions", "1", "--replication-factor", "3",
           "--config", "compression.type=gzip", "--config", "message.timestamp.type=LogAppendTime")
    lines = [f"dump {i}" for i in range(50)]
    replog("produce", "cli-dump", "--acks", "all", stdin="\n".join(lines) + "\n")
    for broker in cluster.status()["brokers"]:  # acks=all: every replica of the full ISR has appended them
        directory = os.path.join(broker["data_dir"], "cli-dump-0")
        printed = replog("dump-log", directory, "--print-data-log", "--index-sanity-check", "--json").stdout
        dumped = [json.loads(line) for line in printed.splitlines()]
        assert [entry["value"] for entry in dumped if entry["kind"] == "record"] == lines, broker["id"]
        assert not [entry for entry in dumped if entry["kind"] == "problem"]
        batches = [entry for entry in dumped if entry["kind"] == "batch"]
        assert {(b["compression"], b["timestamp_type"]) for b in batches} == {("gzip", "LogAppendTime")}
    appended_at = {b["max_timestamp"] for b in batches}
    shown = replog("consume", "cli-dump", "--from-beginning", "--max-messages", "50", "--property",
                   "print.timestamp=true").stdout.splitlines()
    assert {line.partition("\t")[0] for line in shown} == {f"LogAppendTime:{ms}" for ms in appended_at}

    replog("consume", "cli-dump", "--group", "dump-g", "--from-beginning", "--max-messages", "50")
    directories = glob.glob(os.path.join(cluster.status()["brokers"][0]["data_dir"], "__consumer_offsets-*"))
    printed = replog("dump-log", *directories, "--offsets-decoder", "--json").stdout
    commits = [entry["decoded"] for line in printed.splitlines() if (entry := json.loads(line))["kind"] == "record"
               and entry["decoded"]["type"] == "OFFSET_COMMIT" and entry["decoded"]["group_id"] == "dump-g"]
    assert commits and commits[-1]["topic"] == "cli-dump" and commits[-1]["value"]["offset"] == 50


def test_produce_takes_each_line_without_its_ending_as_one_record(replog):
    replog("topics", "create", "cli-endings", "--partitions", "1", "--replication-factor", "1")
    out = replog("produce", "cli-endings", "--report-offsets", stdin=b"alpha\nbeta\r\n\ngamma").stdout
    assert out == b"0\t0\talpha\n0\t1\tbeta\n0\t2\t\n0\t3\tgamma\n"


def test_produce_keys_pick_kafkas_partition_and_a_line_without_the_separator_fails(replog):
    replog("topics", "create", "cli-keyed", "--partitions", "10", "--replication-factor", "1")
    out = replog("produce", "cli-keyed", "--key-separator", ":", "--report-offsets",
                 stdin="foobar:v1\nfoobar:v2:x\n").stdout
    assert out == "6\t0\tfoobar:v1\n6\t1\tfoobar:v2:x\n", "murmur2 of 'foobar' picks partition 6 of 10"
    result = replog("produce", "cli-keyed", "--key-separator", ":", stdin="k:v\nno separator\n", check=False)
    assert result.returncode == 1 and "line 2 has no key separator ':'" in result.stderr


def test_keys_and_headers_go_round_the_console_properties(replog):
    replog("topics", "create", "cli-headers", "--partitions", "1", "--replication-factor", "1")
    lines = "trace:t-1,tenant:acme\tk1\tv1\n\tk2\tv2\n"
    replog("produce", "cli-headers", "--property", "parse.headers=true", "--property", "parse.key=true", stdin=lines)
    out = replog("consume", "cli-headers", "--from-beginning", "--max-messages", "2", "--property",
                 "print.headers=true", "--property", "print.key=true").stdout
    assert out == "trace:t-1,tenant:acme\tk1\tv1\nNO_HEADERS\tk2\tv2\n"


def test_consume_from_a_partition_and_offset_with_keys(replog):
    replog("topics", "create", "cli-keys", "--partitions", "1", "--replication-factor", "2")
    replog("produce", "cli-keys", "--key-separator", "=", "--acks", "1", stdin="a=1\nb=2\nc=3\n")
    out = replog("consume", "cli-keys", "--partition", "0", "--offset", "1", "--timeout-ms", "2000").stdout
    assert out == "2\n3\n"
    out = replog("consume", "cli-keys", "--from-beginning", "--max-messages", "3", "--property", "print.key=true",
                 "--property", "print.offset=true", "--property", "key.separator==").stdout
    assert out == "Offset:0=a=1\nOffset:1=b=2\nOffset:2=c=3\n"
    latest = replog("consume", "cli-keys", "--timeout-ms", "200")
    assert latest.stdout == "" and "Processed a total of 0 messages" in latest.stderr, "nothing new: a quiet exit"


def test_ctrl_c_stops_consume_and_reports_its_count(replog, env):
    replog("topics", "create", "cli-interrupted", "--partitions", "1", "--replication-factor", "1")
    replog("produce", "cli-interrupted", stdin="a\nb\n")
    lines = []
    with subprocess.Popen([*REPLOG, "consume", "cli-interrupted", "--from-beginning"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, env=env) as consume:

        def read_lines():
            for line in consume.stdout:
                lines.append(line)

        reader = threading.Thread(target=read_lines)
        reader.start()
        try:
            wait_for(lambda: len(lines) == 2, 30, "both records to be printed")
            consume.send_signal(signal.SIGINT)
            consume.wait(30)
        finally:
            consume.kill()
            reader.join(30)
        err = consume.stderr.read()
    assert lines == ["a\n", "b\n"]
    assert consume.returncode == 130 and "Processed a total of 2 messages" in err and "Traceback" not in err


def test_a_missing_topic_or_partition_is_one_sentence(replog):
    for command, stdin in (("consume", ""), ("produce", "x\n")):
        result = replog(command, "cli-nope", stdin=stdin, check=False)
        assert result.returncode == 1 and "topic 'cli-nope' does not exist" in result.stderr, command
    replog("topics", "create", "cli-one", "--partitions", "1", "--replication-factor", "1")
    result = replog("consume", "cli-one", "--partition", "5", check=False)
    assert result.returncode == 1 and "partitions 0..0, not 5" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("kind", ["produce", "consume", "e2e"])
def test_bench_prints_its_figures_as_json(replog, kind):
    rate = ["--rate", "5000"] if kind == "e2e" else []
    run = replog("bench", kind, "--records", "20000", "--json", *rate)
    result = json.loads(run.stdout)
    assert run.stderr == ""  # no warning from a client's connections left behind at exit
    assert result["records_per_s"] > 0 and result["mb_per_s"] > 0
    assert (result["records"], result["partitions"], result["replication_factor"]) == (20000, 3, 3)
    if kind == "e2e":
        assert 0 < result["p50_ms"] <= result["p99_ms"] <= result["p999_ms"]


def test_get_offsets_prints_each_partitions_offsets_and_refuses_what_is_not_there(replog):
    replog("topics", "create", "cli-offsets", "--partitions", "2", "--replication-factor", "2")
    replog("produce", "cli-offsets", "--acks", "all", "--key-separator", ":", stdin="a:1\nb:2\nc:3\nd:4\ne:5\n")
    latest = replog("get-offsets", "--topic", "cli-offsets").stdout.splitlines()
    counts = {line.rsplit(":", 1)[0]: int(line.rsplit(":", 1)[1]) for line in latest}
    assert set(counts) == {"cli-offsets:0", "cli-offsets:1"} and sum(counts.values()) == 5
    assert replog("get-offsets", "--topic", "cli-offsets", "--time", "-2", "--partitions", "1").stdout == \
        "cli-offsets:1:0\n"
    future = json.loads(replog("get-offsets", "--topic", "cli-offsets", "--time", "99999999999999", "--json").stdout)
    assert [entry["offset"] for entry in future["offsets"]] == [-1, -1]  # no record that late
    for args, said in ((("--partitions", "7"), "has partitions 0..1, not 7"),
                       (("--partitions", "one"), "--partitions takes partition numbers"),
                       (("--time", "yesterday"), "--time takes latest (-1), earliest (-2) or milliseconds")):
        result = replog("get-offsets", "--topic", "cli-offsets", *args, check=False)
        assert result.returncode == 1 and said in result.stderr and "Traceback" not in result.stderr, result
    result = replog("get-offsets", "--topic", "cli-nope", check=False)
    assert result.returncode == 1 and "topic 'cli-nope' does not exist" in result.stderr
