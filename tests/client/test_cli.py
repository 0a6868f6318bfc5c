"""The client commands' flags, output formats and errors, run in-process against an in-process cluster."""

import io
import json
import sys

import pytest

from replog.cli import bench, consume
from replog.cli.bootstrap import bootstrap_address
from replog.cli.main import build_parser, main
from replog.cli.topics import describe_report, describe_text, parse_replica_assignment
from replog.client import ClientError, PartitionInfo, TopicDescription


def run(capsys, monkeypatch, *argv, stdin=b""):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- finding the cluster --------------------------------------------------------------------------


def args_of(*argv):
    return build_parser().parse_args(["topics", "list", *argv])


def test_bootstrap_flag_wins_over_the_environment():
    assert bootstrap_address(args_of("--bootstrap", "h:1"), env={"REPLOG_BOOTSTRAP": "e:2"}) == "h:1"
    assert bootstrap_address(args_of(), env={"REPLOG_BOOTSTRAP": "e:2, f:3"}) == "e:2,f:3"


def test_without_flag_or_environment_the_local_clusters_metadata_service_is_used(tmp_path):
    data_dir = tmp_path / ".replog"
    data_dir.mkdir()
    (data_dir / "cluster.json").write_text(json.dumps({
        "zookeeper": {}, "brokers": [], "controllers": [],
        "metadata": [{"id": 1, "address": "127.0.0.1:4567", "metrics_address": "127.0.0.1:1", "pid": None}],
    }))
    assert bootstrap_address(args_of("--data-dir", str(data_dir)), env={}) == "127.0.0.1:4567"


def test_no_cluster_anywhere_is_one_sentence_saying_what_to_do(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REPLOG_BOOTSTRAP", raising=False)
    code, out, err = run(capsys, monkeypatch, "topics", "list")
    assert code == 1 and out == ""
    assert err.startswith("replog: no cluster to talk to") and "--bootstrap" in err and "replog dev up" in err
    assert "Traceback" not in err


def test_a_bad_bootstrap_address_is_refused(capsys, monkeypatch):
    code, _out, err = run(capsys, monkeypatch, "topics", "list", "--bootstrap", "nohost")
    assert code == 1 and "'nohost' is not HOST:PORT" in err


def test_an_unreachable_cluster_is_one_sentence(capsys, monkeypatch):
    code, _out, err = run(capsys, monkeypatch, "topics", "list", "--bootstrap", "127.0.0.1:1")
    assert code == 1 and "no metadata service answered" in err and "Traceback" not in err
    assert err.count("\n") == 1


# -- topics -----------------------------------------------------------------------------------------


def test_replica_assignment_is_parsed_as_kafka_writes_it():
    assert parse_replica_assignment("0:1,1:2,2:0") == {0: [0, 1], 1: [1, 2], 2: [2, 0]}
    assert parse_replica_assignment("3") == {0: [3]}
    for bad in ("1:x", "1:1", "1:2,3", ""):
        with pytest.raises(Exception):
            parse_replica_assignment(bad)


def test_topics_create_describe_and_list(fake, capsys, monkeypatch):
    code, out, _err = run(capsys, monkeypatch, "topics", "create", "orders", "--partitions", "3",
                          "--replication-factor", "2", "--bootstrap", fake.bootstrap)
    assert (code, out) == (0, "Created topic orders.\n")
    code, out, _err = run(capsys, monkeypatch, "topics", "list", "--bootstrap", fake.bootstrap)
    assert (code, out) == (0, "orders\n")
    code, out, err = run(capsys, monkeypatch, "topics", "describe", "orders", "--bootstrap", fake.bootstrap)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("Topic: orders  TopicId: id-orders  PartitionCount: 3  ReplicationFactor: 2")
    assert lines[1] == "Topic: orders  Partition: 0  Leader: 1  Replicas: 1,2  Isr: 1,2"
    assert len(lines) == 4


def test_topics_describe_json_has_the_stable_shape(fake, capsys, monkeypatch):
    fake.state.create("a", 2, 3)
    code, out, _err = run(capsys, monkeypatch, "topics", "describe", "--json", "--bootstrap", fake.bootstrap)
    report = json.loads(out)
    assert code == 0 and list(report) == ["topics"]
    [topic] = report["topics"]
    assert list(topic) == ["name", "configs", "partitions"]
    assert topic["name"] == "a" and topic["configs"] == {}
    assert topic["partitions"][0] == {"partition": 0, "leader": 1, "leader_epoch": 0, "replicas": [1, 2, 3],
                                      "isr": [1, 2, 3]}


def test_creating_an_existing_topic_fails_unless_if_not_exists(fake, capsys, monkeypatch):
    fake.state.create("a", 1)
    code, _out, err = run(capsys, monkeypatch, "topics", "create", "a", "--partitions", "1",
                          "--bootstrap", fake.bootstrap)
    assert code == 1 and "TOPIC_ALREADY_EXISTS" in err and "Traceback" not in err
    code, out, err = run(capsys, monkeypatch, "topics", "create", "a", "--partitions", "1", "--if-not-exists",
                         "--bootstrap", fake.bootstrap)
    assert (code, out, err) == (0, "", "")


def test_describing_a_missing_topic_says_how_to_create_it(fake, capsys, monkeypatch):
    code, _out, err = run(capsys, monkeypatch, "topics", "describe", "nope", "--bootstrap", fake.bootstrap)
    assert code == 1 and "topic 'nope' does not exist" in err and "replog topics create nope" in err


def test_replica_assignment_and_counts_do_not_mix(fake, capsys, monkeypatch):
    code, _out, err = run(capsys, monkeypatch, "topics", "create", "a", "--partitions", "2",
                          "--replica-assignment", "1:2", "--bootstrap", fake.bootstrap)
    assert code == 1 and "not both" in err


def test_bad_flags_exit_with_usage_and_no_traceback(capsys, monkeypatch):
    with pytest.raises(SystemExit) as raised:
        run(capsys, monkeypatch, "topics", "create", "a", "--partitions", "zero")
    assert raised.value.code == 2
    assert "'zero' is not a whole number" in capsys.readouterr().err


def describe_fixture():
    healthy = PartitionInfo(0, 1, 4, (1, 2, 3), (1, 2, 3))
    lagging = PartitionInfo(1, 2, 1, (2, 3, 1), (2, 3))
    offline = PartitionInfo(2, -1, 2, (3, 1, 2), (3,), offline_replicas=(3,))
    return [TopicDescription("t", "id-t", False, (healthy, lagging, offline))]


def test_describe_filters_pick_under_replicated_and_unavailable_partitions():
    topics = describe_fixture()
    under = describe_report(topics, {}, under_replicated=True)
    assert [p["partition"] for p in under["topics"][0]["partitions"]] == [1, 2]
    unavailable = describe_report(topics, {}, unavailable=True)
    assert [p["partition"] for p in unavailable["topics"][0]["partitions"]] == [2]


def test_describe_text_is_kafkas_layout():
    topics = describe_fixture()
    text = describe_text(describe_report(topics, {"t": {"min.insync.replicas": "2", "a": "b"}}), topics)
    assert text.splitlines() == [
        "Topic: t  TopicId: id-t  PartitionCount: 3  ReplicationFactor: 3  Configs: a=b,min.insync.replicas=2",
        "Topic: t  Partition: 0  Leader: 1  Replicas: 1,2,3  Isr: 1,2,3",
        "Topic: t  Partition: 1  Leader: 2  Replicas: 2,3,1  Isr: 2,3",
        "Topic: t  Partition: 2  Leader: none  Replicas: 3,1,2  Isr: 3  Offline: 3",
    ]
    only = describe_text(describe_report(topics, {}, unavailable=True), topics, partitions_only=True)
    assert only == "Topic: t  Partition: 2  Leader: none  Replicas: 3,1,2  Isr: 3  Offline: 3\n"


# -- produce and consume ----------------------------------------------------------------------------


def test_produce_reports_the_offset_of_each_line_in_input_order(fake, capsys, monkeypatch):
    fake.state.create("t", 1)
    code, out, err = run(capsys, monkeypatch, "produce", "t", "--report-offsets", "--bootstrap", fake.bootstrap,
                         stdin=b"alpha\nbeta\r\n\ngamma")
    assert (code, err) == (0, "")
    assert out == "0\t0\talpha\n0\t1\tbeta\n0\t2\t\n0\t3\tgamma\n"


def test_produce_splits_keys_at_the_separator(fake, capsys, monkeypatch):
    fake.state.create("t", 10)
    code, out, _err = run(capsys, monkeypatch, "produce", "t", "--key-separator", ":", "--report-offsets",
                          "--bootstrap", fake.bootstrap, stdin=b"foobar:v1\nfoobar:v2:x\n")
    assert code == 0 and out == "6\t0\tfoobar:v1\n6\t1\tfoobar:v2:x\n"  # murmur2("foobar") lands on 6 of 10
    code, _out, err = run(capsys, monkeypatch, "produce", "t", "--key-separator", ":", "--bootstrap",
                          fake.bootstrap, stdin=b"k:v\nno separator\n")
    assert code == 1 and "line 2 has no key separator ':'" in err


def test_produce_to_a_missing_topic_fails_before_reading(fake, capsys, monkeypatch):
    code, _out, err = run(capsys, monkeypatch, "produce", "nope", "--bootstrap", fake.bootstrap, stdin=b"x\n")
    assert code == 1 and "topic 'nope' does not exist" in err


def test_consume_prints_values_or_offsets(fake, capsys, monkeypatch):
    fake.state.create("t", 2)
    run(capsys, monkeypatch, "produce", "t", "--bootstrap", fake.bootstrap, stdin=b"a\nb\nc\n")
    code, out, err = run(capsys, monkeypatch, "consume", "t", "--from-beginning", "--max-messages", "3",
                         "--bootstrap", fake.bootstrap)
    assert code == 0 and sorted(out.splitlines()) == ["a", "b", "c"]
    assert "Processed a total of 3 messages" in err
    code, out, _err = run(capsys, monkeypatch, "consume", "t", "--from-beginning", "--print-offsets",
                          "--timeout-ms", "500", "--bootstrap", fake.bootstrap)
    assert code == 0
    rows = [line.split("\t") for line in out.splitlines()]
    assert sorted(r[2] for r in rows) == ["a", "b", "c"]
    assert all(r[0] in ("0", "1") and r[1].isdigit() for r in rows)


def test_consume_from_a_partition_and_offset(fake, capsys, monkeypatch):
    fake.state.create("t", 1)
    run(capsys, monkeypatch, "produce", "t", "--bootstrap", fake.bootstrap, stdin=b"a\nb\nc\nd\n")
    code, out, _err = run(capsys, monkeypatch, "consume", "t", "--partition", "0", "--offset", "2",
                          "--timeout-ms", "300", "--print-offsets", "--bootstrap", fake.bootstrap)
    assert (code, out) == (0, "0\t2\tc\n0\t3\td\n")


def test_consume_times_out_quietly_when_nothing_arrives(fake, capsys, monkeypatch):
    fake.state.create("t", 1)
    code, out, err = run(capsys, monkeypatch, "consume", "t", "--timeout-ms", "200", "--bootstrap", fake.bootstrap)
    assert (code, out) == (0, "") and "Processed a total of 0 messages" in err


@pytest.mark.parametrize(("flags", "message"), [
    (["--group", "g"], "not supported yet"),
    (["--offset", "3"], "--offset needs --partition"),
    (["--partition", "0", "--offset", "x"], "--offset takes an offset"),
    (["--partition", "0", "--offset", "1", "--from-beginning"], "not both"),
    (["--partition", "5"], "partitions 0..0, not 5"),
    (["--max-messages", "0"], "at least 1"),
])
def test_consume_flags_that_do_not_fit_are_one_sentence(fake, capsys, monkeypatch, flags, message):
    fake.state.create("t", 1)
    code, _out, err = run(capsys, monkeypatch, "consume", "t", *flags, "--bootstrap", fake.bootstrap)
    assert code == 1 and message in err and "Traceback" not in err


def test_start_offset_reads_flags():
    parse = lambda *argv: consume.start_offset(build_parser().parse_args(["consume", "t", *argv]))
    assert parse() == "latest"
    assert parse("--from-beginning") == "earliest"
    assert parse("--partition", "1", "--offset", "7") == 7
    assert parse("--partition", "1", "--offset", "earliest") == "earliest"


# -- bench ------------------------------------------------------------------------------------------


def test_bench_percentiles_take_the_smallest_value_covering_the_share():
    latencies = [i * 1_000_000 for i in range(1, 1001)]  # 1..1000 ms
    assert bench.percentiles_ms(latencies) == {"p50_ms": 500.0, "p99_ms": 990.0, "p999_ms": 999.0,
                                              "max_ms": 1000.0}
    assert bench.percentiles_ms([3_000_000]) == {"p50_ms": 3.0, "p99_ms": 3.0, "p999_ms": 3.0, "max_ms": 3.0}


def test_bench_paces_records_on_a_fixed_schedule():
    assert bench.paced_counts(100, 10.0, started_s=0.0, now_s=0.0, sent=0) == 1
    assert bench.paced_counts(100, 10.0, started_s=0.0, now_s=1.05, sent=1) == 10
    assert bench.paced_counts(100, 10.0, started_s=0.0, now_s=100.0, sent=50) == 50
    assert bench.paced_counts(100, None, started_s=0.0, now_s=0.0, sent=95) == 5


@pytest.mark.parametrize("kind", ["produce", "consume", "e2e"])
def test_bench_json_has_the_figures_scripts_read(fake, capsys, monkeypatch, kind):
    extra = ["--rate", "2000"] if kind == "e2e" else []
    code, out, err = run(capsys, monkeypatch, "bench", kind, "--records", "2000", "--partitions", "2", "--json",
                         *extra, "--bootstrap", fake.bootstrap)
    assert code == 0, err
    result = json.loads(out)
    assert result["records_per_s"] > 0 and result["mb_per_s"] > 0
    assert result["records"] == 2000 and result["replication_factor"] == 3
    if kind == "e2e":
        assert 0 < result["p50_ms"] <= result["p99_ms"] <= result["p999_ms"] <= result["max_ms"]


def test_bench_refuses_an_e2e_record_too_small_for_its_timestamp(fake, capsys, monkeypatch):
    code, _out, err = run(capsys, monkeypatch, "bench", "e2e", "--record-size", "4", "--bootstrap", fake.bootstrap)
    assert code == 1 and "at least 8" in err


def test_bench_text_summary_names_the_setup():
    line = bench.summary({"kind": "e2e", "records": 10, "record_size": 100, "acks": "all", "partitions": 3,
                          "replication_factor": 3, "records_per_s": 1234.5, "mb_per_s": 0.12, "p50_ms": 1.0,
                          "p99_ms": 2.0, "p999_ms": 3.0, "max_ms": 4.0})
    assert line.startswith("e2e: 10 records of 100 bytes, acks=all, 3 partitions, replication factor 3: 1,234")
    assert "p99 2.0 ms" in line


def test_bench_rejects_nonsense_counts():
    args = build_parser().parse_args(["bench", "produce", "--records", "0"])
    with pytest.raises(ClientError):
        bench.check_args(args)


def test_consume_reports_its_count_when_interrupted(fake, capsys, monkeypatch):
    fake.state.create("t", 1)
    run(capsys, monkeypatch, "produce", "t", "--bootstrap", fake.bootstrap, stdin=b"a\nb\n")
    polls = []
    original = consume.Consumer.poll

    def poll_then_interrupt(self, timeout_ms=0):
        polls.append(timeout_ms)
        if len(polls) > 3:
            raise KeyboardInterrupt
        return original(self, timeout_ms)

    monkeypatch.setattr(consume.Consumer, "poll", poll_then_interrupt)
    code, out, err = run(capsys, monkeypatch, "consume", "t", "--from-beginning", "--bootstrap", fake.bootstrap)
    assert code == 130 and "Processed a total of" in err
