"""The client commands against a real local cluster: topics, produce, consume, bench."""

import json
import os
import subprocess

import pytest

from tests.integration.cluster import REPLOG

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def replog(cluster):
    """Run `replog ...` finding the cluster the way a user's shell would: through REPLOG_BOOTSTRAP."""
    env = {**os.environ, "REPLOG_BOOTSTRAP": cluster.status()["metadata"][0]["address"]}

    def run(*args, stdin="", check=True):
        result = subprocess.run([*REPLOG, *args], input=stdin, capture_output=True, text=True, env=env,
                                timeout=180)
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
    [topic] = report["topics"]
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
    replog("topics", "create", "cli-dup", "--partitions", "1", "--replication-factor", "1", "--if-not-exists")
    too_many = replog("topics", "create", "cli-rf", "--partitions", "1", "--replication-factor", "5", check=False)
    assert too_many.returncode == 1 and "INVALID_REPLICATION_FACTOR" in too_many.stderr
    missing = replog("topics", "describe", "cli-missing", check=False)
    assert missing.returncode == 1 and "does not exist" in missing.stderr


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


def test_consume_from_a_partition_and_offset_with_keys(replog):
    replog("topics", "create", "cli-keys", "--partitions", "1", "--replication-factor", "2")
    replog("produce", "cli-keys", "--key-separator", "=", "--acks", "1", stdin="a=1\nb=2\nc=3\n")
    out = replog("consume", "cli-keys", "--partition", "0", "--offset", "1", "--timeout-ms", "2000").stdout
    assert out == "2\n3\n"


def test_consuming_a_missing_topic_says_so(replog):
    result = replog("consume", "cli-nope", "--timeout-ms", "100", check=False)
    assert result.returncode == 1 and "topic 'cli-nope' does not exist" in result.stderr


@pytest.mark.parametrize("kind", ["produce", "consume", "e2e"])
def test_bench_prints_its_figures_as_json(replog, kind):
    rate = ["--rate", "5000"] if kind == "e2e" else []
    result = json.loads(replog("bench", kind, "--records", "20000", "--json", *rate).stdout)
    assert result["records_per_s"] > 0 and result["mb_per_s"] > 0
    if kind == "e2e":
        assert 0 < result["p50_ms"] <= result["p99_ms"] <= result["p999_ms"]
