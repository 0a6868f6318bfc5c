"""The client commands' flags, output formats and errors that need no cluster, run in-process.

Commands refuse flags that do not fit before they connect, so these run against an address where
nothing listens; what a command prints from a real cluster is tested in tests/integration/test_cli_client.py.
"""

import json

import pytest

from replog.cli import bench, consume
from replog.cli.bootstrap import bootstrap_address
from replog.cli.main import build_parser, main
from replog.cli.topics import describe_report, describe_text, parse_replica_assignment
from replog.client import ClientError, PartitionInfo, TopicDescription


NOWHERE = "127.0.0.1:1"


def run(capsys, *argv):
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
    code, out, err = run(capsys, "topics", "list")
    assert code == 1 and out == ""
    assert err.startswith("replog: no cluster to talk to") and "--bootstrap" in err and "replog dev up" in err
    assert "Traceback" not in err


def test_a_bad_bootstrap_address_is_refused(capsys):
    code, _out, err = run(capsys, "topics", "list", "--bootstrap", "nohost")
    assert code == 1 and "'nohost' is not HOST:PORT" in err


def test_an_unreachable_cluster_is_one_sentence(capsys):
    code, _out, err = run(capsys, "topics", "list", "--bootstrap", NOWHERE)
    assert code == 1 and "no metadata service answered" in err and "Traceback" not in err
    assert err.count("\n") == 1


# -- topics -----------------------------------------------------------------------------------------


def test_replica_assignment_is_parsed_as_kafka_writes_it():
    assert parse_replica_assignment("0:1,1:2,2:0") == {0: [0, 1], 1: [1, 2], 2: [2, 0]}
    assert parse_replica_assignment("3") == {0: [3]}
    for bad in ("1:x", "1:1", "1:2,3", ""):
        with pytest.raises(Exception):
            parse_replica_assignment(bad)


def test_replica_assignment_and_counts_do_not_mix(capsys):
    code, _out, err = run(capsys, "topics", "create", "a", "--partitions", "2",
                          "--replica-assignment", "1:2", "--bootstrap", NOWHERE)
    assert code == 1 and "not both" in err


def test_bad_flags_exit_with_usage_and_no_traceback(capsys):
    with pytest.raises(SystemExit) as raised:
        run(capsys, "topics", "create", "a", "--partitions", "zero")
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


@pytest.mark.parametrize(("flags", "message"), [
    (["--group", "g"], "not supported yet"),
    (["--offset", "3"], "--offset needs --partition"),
    (["--partition", "0", "--offset", "x"], "--offset takes an offset"),
    (["--partition", "0", "--offset", "1", "--from-beginning"], "not both"),
    (["--max-messages", "0"], "at least 1"),
])
def test_consume_flags_that_do_not_fit_are_one_sentence(capsys, flags, message):
    code, _out, err = run(capsys, "consume", "t", *flags, "--bootstrap", NOWHERE)
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


def test_bench_refuses_an_e2e_record_too_small_for_its_timestamp(capsys):
    code, _out, err = run(capsys, "bench", "e2e", "--record-size", "4", "--bootstrap", NOWHERE)
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
