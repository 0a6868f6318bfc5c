"""The client commands' flags, output formats and errors that need no cluster, run in-process.

Commands refuse flags that do not fit before they connect, so these run against an address where
nothing listens; what a command prints from a real cluster is tested in tests/integration/test_cli_client.py.
"""

import json
import time
from concurrent import futures

import grpc
import pytest

from replog.cli import bench, consume, groups, transactions
from replog.cli.bootstrap import bootstrap_address
from replog.cli.line_format import line_format
from replog.cli.main import build_parser, main
from replog.cli.record_format import record_format
from replog.cli.topics import describe_report, describe_text, parse_replica_assignment
from replog.client import (
    AbortTransactionSpec,
    ClientError,
    ConsumerRecord,
    GroupDescription,
    MemberDescription,
    OffsetAndMetadata,
    PartitionInfo,
    ProducerDescription,
    TimestampType,
    TopicDescription,
    TopicPartition,
    TransactionDescription,
)
from replog.core.txn.hanging import HangingTransaction, OpenTransaction

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


@pytest.mark.parametrize("argv", [
    ["topics", "list"],
    # Commands that ask a group's or a transactional id's coordinator give up as soon, not after 30 s.
    ["groups", "describe", "g"],
    ["groups", "delete", "g"],
    ["groups", "reset-offsets", "--group", "g", "--topic", "t", "--to-earliest", "--execute"],
    ["transactions", "describe", "x"],
])
def test_an_unreachable_cluster_is_one_sentence_at_once(capsys, argv):
    started = time.monotonic()
    code, _out, err = run(capsys, *argv, "--bootstrap", NOWHERE)
    assert code == 1 and "no metadata service answered" in err and "is the cluster running?" in err, err
    assert "Traceback" not in err and err.count("\n") == 1
    assert time.monotonic() - started < 10


def test_an_address_that_is_not_a_metadata_service_is_named(capsys):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))  # serves no API at all, as for Metadata
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        code, _out, err = run(capsys, "topics", "list", "--bootstrap", f"127.0.0.1:{port}")
    finally:
        server.stop(None)
    assert code == 1 and f"127.0.0.1:{port} is not a metadata service" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(("cluster_json", "says"), [
    (None, "no local cluster in"),
    ("{not json", "cannot read"),
    ('{"brokers": []}', "is not a replog cluster file"),
])
def test_a_data_dir_given_without_a_cluster_says_what_is_wrong_with_it(tmp_path, capsys, cluster_json, says):
    if cluster_json is not None:
        (tmp_path / "cluster.json").write_text(cluster_json)
    code, out, err = run(capsys, "topics", "list", "--data-dir", str(tmp_path))
    assert code == 1 and out == "" and err.startswith("replog: ") and says in err and str(tmp_path) in err, err
    assert err.count("\n") == 1


def test_a_command_config_whose_ca_file_does_not_load_is_named_before_connecting(tmp_path, capsys):
    (tmp_path / "ca.pem").write_text("not a certificate\n")
    (tmp_path / "client.properties").write_text(f"ssl.cafile={tmp_path / 'ca.pem'}\n")
    code, _out, err = run(capsys, "topics", "list", "--command-config", str(tmp_path / "client.properties"),
                          "--bootstrap", NOWHERE)
    assert code == 1 and f"the TLS files {tmp_path / 'ca.pem'} do not load" in err
    assert "no metadata service answered" not in err and err.count("\n") == 1


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


HUGE = "99999999999999999999"


@pytest.mark.parametrize("argv", [
    ["topics", "create", "t", "--partitions", "2147483648"],
    ["topics", "create", "t", "--replication-factor", HUGE],
    ["topics", "create", "t", "--replica-assignment", f"1:{HUGE}"],
    ["topics", "alter", "t", "--partitions", HUGE],
    ["leader-election", "--election-type", "preferred", "--topic", "t", "--partition", HUGE],
    ["leader-election", "--election-type", "preferred", "--topic", "t", "--partition", "-1"],
    ["reassign", "--topic", "t", "--partition", "0", "--replicas", f"1,{HUGE}"],
    ["delete-records", "--topic", "t", "--partition", "0", "--offset", HUGE],
    ["delete-records", "--topic", "t", "--partition", "0", "--offset", "-2"],
    ["transactions", "abort", "--topic", "t", "--partition", "0", "--start-offset", HUGE],
    ["producers", "--topic", "t", "--partition", HUGE],
    ["producers", "--topic", "t", "--partition", "-1"],
    ["transactions", "find-hanging", "--topic", "t", "--partition", "-1"],
    ["transactions", "find-hanging", "--topic", "t", "--max-transaction-timeout", "-1"],
    ["transactions", "abort", "--topic", "t", "--partition", "-3", "--start-offset", "4"],
    ["groups", "reset-offsets", "--group", "g", "--topic", "t", "--to-offset", HUGE, "--execute"],
    ["tokens", "create", "--principal", "User:a", "--secret-file", "s", "--lifetime-s", HUGE],
    ["transactions", "abort", "--topic", "t", "--partition", "0", "--producer-id", "1", "--producer-epoch", "40000",
     "--coordinator-epoch", "0"],
    ["groups", "reset-offsets", "--group", "g", "--topic", "t:99999999999", "--to-earliest"],
])
def test_numbers_the_wire_cannot_carry_are_refused_naming_the_option(capsys, argv):
    with pytest.raises(SystemExit) as raised:
        run(capsys, *argv, "--bootstrap", NOWHERE)
    err = capsys.readouterr().err
    assert raised.value.code == 2 and "Traceback" not in err
    assert "the most it can be" in err or "the least it can be" in err, err


@pytest.mark.parametrize(("argv", "message"), [
    (["consume", "t", "--partition", "0", "--offset", HUGE], "--offset: 99999999999999999999 is above"),
    (["get-offsets", "--topic", "t", "--time", HUGE], "--time: 99999999999999999999 is above 9223372036854775807"),
    (["get-offsets", "--topic", "t", "--partitions", "0,99999999999"], "--partitions: 99999999999 is above"),
    (["log-dirs", "describe", "--broker-list", "99999999999"], "--broker-list: 99999999999 is above"),
    (["bench", "produce", "--partitions", HUGE], "--partitions: 99999999999999999999 is above 2147483647"),
    (["bench", "produce", "--record-size", "50000000"], "more than the producer's max_request_size"),
])
def test_numbers_checked_by_the_command_are_one_sentence(capsys, argv, message):
    code, _out, err = run(capsys, *argv, "--bootstrap", NOWHERE)
    assert code == 1 and message in err and "Traceback" not in err and err.count("\n") == 1, err


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
    (["--offset", "3"], "--offset needs --partition"),
    (["--partition", "0", "--offset", "x"], "--offset takes an offset"),
    (["--partition", "0", "--offset", "1", "--from-beginning"], "not both"),
    (["--max-messages", "0"], "at least 1"),
    (["--property", "print.key"], "--property takes KEY=VALUE, got 'print.key'"),
    (["--property", "print.key=yes"], "--property print.key is true or false, not 'yes'"),
    (["--property", "print.color=true"], "--property 'print.color' is not one replog reads; those are: print."),
    (["--property", "print.value=false"], "nothing of a record would be printed"),
    (["--print-offsets", "--property", "print.key=true"], "give --print-offsets or --property, not both"),
])
def test_consume_flags_that_do_not_fit_are_one_sentence(capsys, flags, message):
    code, _out, err = run(capsys, "consume", "t", *flags, "--bootstrap", NOWHERE)
    assert code == 1 and message in err and "Traceback" not in err


@pytest.mark.parametrize(("argv", "message"), [
    (["t", "--group", ""], "the group id must not be empty"),
    (["t", "--group", "g", "--partition", "0"], "--partition and --offset do not go with it"),
    (["--group", "g", "--include", "orders-("], "does not compile"),
    (["t", "--group", "g", "--include", "o.*"], "not both"),
    (["--group", "g"], "give the TOPIC to read, or --include REGEX"),
    (["t", "--include", "o.*"], "--include needs --group"),
    ([], "give the TOPIC to read"),
])
def test_consume_group_flags_that_do_not_fit_are_one_sentence(capsys, argv, message):
    code, _out, err = run(capsys, "consume", *argv, "--bootstrap", NOWHERE)
    assert code == 1 and message in err and "Traceback" not in err and err.count("\n") == 1


def test_records_print_as_kafka_console_consumers_properties_ask():
    record = ConsumerRecord("t", 3, 42, 1_700_000_000_000, b"k", b"v", (("h1", b"a"), ("h2", None)), 0)
    plain = ConsumerRecord("t", 3, 43, 1_700_000_000_001, None, None, (), 0, TimestampType.LOG_APPEND_TIME)

    def shown(*properties, print_offsets=False):
        chosen = record_format(list(properties), print_offsets)
        return chosen.render(record) + chosen.render(plain)

    assert shown() == b"v\nnull\n"
    assert shown(print_offsets=True) == b"3\t42\tv\n3\t43\tnull\n"
    assert shown("print.key=true") == b"k\tv\nnull\tnull\n"
    assert shown("print.timestamp=true", "print.partition=true", "print.offset=true", "print.headers=true",
                 "print.key=true", "key.separator=\\t|", "null.literal=-") == (
        b"CreateTime:1700000000000\t|Partition:3\t|Offset:42\t|h1:a,h2:-\t|k\t|v\n"
        b"LogAppendTime:1700000000001\t|Partition:3\t|Offset:43\t|NO_HEADERS\t|-\t|-\n")
    assert shown("print.value=false", "print.key=true", "line.separator=;") == b"k;null;"
    assert shown("print.headers=true", "print.value=false", "headers.separator=|", "headers.key.separator==") == (
        b"h1=a|h2=null\nNO_HEADERS\n")


def test_lines_read_as_kafka_console_producers_properties_ask():
    def read(line, *properties, key_separator=None):
        return line_format(list(properties), key_separator).parse(line, 1)

    assert read(b"a\tb") == (None, b"a\tb", ())
    assert read(b"k=v=w", key_separator="=") == (b"k", b"v=w", ())
    assert read(b"h1:a,h2:\tk\tv", "parse.headers=true", "parse.key=true") == (b"k", b"v", (("h1", b"a"), ("h2", b"")))
    assert read(b"\tk\tv", "parse.headers=true", "parse.key=true") == (b"k", b"v", ())
    assert read(b"h=NULL|NULL;NULL", "parse.headers=true", "parse.key=true", "headers.delimiter=|",
                "headers.key.separator==", "key.separator=;", "null.marker=NULL") == (None, None, (("h", None),))
    with pytest.raises(ClientError, match=r"line 1 has no headers delimiter '\\t'"):
        read(b"k v", "parse.headers=true")
    with pytest.raises(ClientError, match="line 1: header 'h1' has no key separator ':'"):
        read(b"h1\tv", "parse.headers=true")


@pytest.mark.parametrize(("flags", "message"), [
    (["--key-separator", ""], "--key-separator must not be empty"),
    (["--property", "key.separator="], "--property key.separator must not be empty"),
    (["--property", "parse.key"], "--property takes KEY=VALUE, got 'parse.key'"),
    (["--property", "parse.value=true"], "--property 'parse.value' is not one replog reads; those are: parse.key"),
    (["--property", "parse.headers=1"], "--property parse.headers is true or false, not '1'"),
])
def test_produce_flags_that_do_not_fit_are_one_sentence_before_any_connection(capsys, flags, message):
    code, _out, err = run(capsys, "produce", "t", *flags, "--bootstrap", NOWHERE)
    assert code == 1 and message in err and "cluster" not in err, err


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


@pytest.mark.parametrize("rate", ["nan", "inf", "0", "-5"])
def test_bench_refuses_a_rate_that_is_not_a_positive_number(capsys, rate):
    code, _out, err = run(capsys, "bench", "produce", "--records", "10", f"--rate={rate}", "--bootstrap", NOWHERE)
    assert code == 1 and err.startswith("replog: --rate must be a positive number") and err.count("\n") == 1


# -- rolling restarts -----------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [["dev", "roll"], ["k8s", "roll"]])
@pytest.mark.parametrize("seconds", ["-1", "0", "nan", "inf"])
def test_a_roll_refuses_a_timeout_that_is_not_a_positive_number_of_seconds(capsys, argv, seconds):
    with pytest.raises(SystemExit) as exited:
        main([*argv, f"--timeout-s={seconds}"])
    assert exited.value.code == 2
    assert f"'{seconds}' is not a positive number of seconds" in capsys.readouterr().err


# -- acls and tokens ------------------------------------------------------------------------------


@pytest.mark.parametrize("pattern_type", ["any", "match"])
def test_acls_add_refuses_a_pattern_type_that_only_selects(capsys, pattern_type):
    with pytest.raises(SystemExit) as exited:
        main(["acls", "add", "--topic", "orders", "--allow-principal", "User:alice",
              "--resource-pattern-type", pattern_type, "--authorizer-properties", f"zookeeper.connect={NOWHERE}"])
    assert exited.value.code == 2
    assert f"invalid choice: '{pattern_type}' (choose from" in capsys.readouterr().err


@pytest.mark.parametrize(("flags", "says"), [
    (["--allow-principal", "alice"], "alice"),
    (["--allow-principal", "User:alice", "--operation", "Scribble"], "'Scribble' is not an operation"),
    ([], "name who: --allow-principal or --deny-principal"),
    (["--allow-principal", "User:alice", "--allow-host", "app.example.com"],
     "host 'app.example.com' is not an IP address"),
])
def test_acls_add_refuses_bad_acls_before_asking_zookeeper(capsys, flags, says):
    started = time.monotonic()
    code, _out, err = run(capsys, "acls", "add", "--topic", "orders", *flags,
                          "--authorizer-properties", f"zookeeper.connect={NOWHERE}")
    assert code == 1 and says in err and "cannot reach ZooKeeper" not in err, err
    assert time.monotonic() - started < 5  # no connection attempt was waited for


def test_acls_refuse_authorizer_properties_that_are_not_key_value(capsys):
    code, _out, err = run(capsys, "acls", "list", "--authorizer-properties", f"zookeeper.connect{NOWHERE}")
    assert code == 1 and "--authorizer-properties takes KEY=VALUE" in err and err.count("\n") == 1


def test_tokens_create_refuses_a_secret_the_services_would_refuse(tmp_path, capsys):
    (tmp_path / "secret").write_text("short\n")
    code, out, err = run(capsys, "tokens", "create", "--principal", "User:alice", "--secret-file",
                         str(tmp_path / "secret"))
    assert code == 1 and out == "" and "holds fewer than 32 bytes" in err
    (tmp_path / "secret").write_text("s" * 32 + "\n")
    code, out, _err = run(capsys, "tokens", "create", "--principal", "User:alice", "--secret-file",
                          str(tmp_path / "secret"))
    assert code == 0 and out.count(".") == 2


# -- groups -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["groups", "describe", ""],
    ["groups", "delete", " "],
    ["groups", "reset-offsets", "--group", "", "--topic", "t", "--to-earliest"],
])
def test_an_empty_group_id_is_one_sentence(capsys, argv):
    code, _out, err = run(capsys, *argv, "--bootstrap", NOWHERE)
    assert code == 1 and err == "replog: the group id must not be empty\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["--topic", ":1", "--to-earliest"], "--topic takes TOPIC"),
    (["--topic", "t:x", "--to-earliest"], "not whole numbers"),
    (["--topic", "t", "--to-datetime", "yesterday"], "is not an ISO 8601 time"),
    (["--topic", "t", "--to-earliest", "--to-latest"], "not allowed with argument"),
    (["--topic", "t", "--to-earliest", "--dry-run", "--execute"], "not allowed with argument"),
])
def test_reset_offsets_flags_argparse_cannot_read_exit_2_with_the_reason(capsys, argv, message):
    with pytest.raises(SystemExit) as exited:
        main(["groups", "reset-offsets", "--group", "g", *argv])
    assert exited.value.code == 2 and message in capsys.readouterr().err


def test_reset_targets_follow_kafka_and_stay_within_the_log():
    tp = TopicPartition("t", 0)
    bounds = groups.LogBounds(earliest=10, latest=50, at_time=30)
    assert groups.reset_target("to_earliest", None, 20, bounds, tp) == (10, None)
    assert groups.reset_target("to_latest", None, 20, bounds, tp) == (50, None)
    assert groups.reset_target("to_datetime", None, 20, bounds, tp) == (30, None)
    assert groups.reset_target("to_datetime", None, 20, groups.LogBounds(10, 50, -1), tp) == (50, None)
    assert groups.reset_target("to_offset", 25, None, bounds, tp) == (25, None)
    assert groups.reset_target("to_offset", 99, None, bounds, tp) == (50, "new offset 99 is past the end of t-0; "
                                                                          "it is set to 50")
    assert groups.reset_target("shift_by", -15, 20, bounds, tp) == (10, "new offset 5 is before the start of t-0; "
                                                                        "it is set to 10")
    assert groups.reset_target("shift_by", 5, 20, bounds, tp) == (25, None)
    with pytest.raises(ClientError, match="no committed offset"):
        groups.reset_target("shift_by", 5, None, bounds, tp)


def test_to_offset_0_is_a_reset_to_offset_0():
    args = build_parser().parse_args(["groups", "reset-offsets", "--group", "g", "--topic", "t", "--to-offset", "0"])
    assert groups.reset_kind(args) == "to_offset"


def test_topic_selections_and_times_are_read_as_kafka_writes_them():
    assert groups.parse_topic_partitions("orders") == groups.TopicSelection("orders", None)
    assert groups.parse_topic_partitions("orders:2,0,2") == groups.TopicSelection("orders", (0, 2))
    assert groups.parse_datetime("1970-01-01T00:00:01Z") == 1_000
    assert groups.parse_datetime("1970-01-01T01:00:02+01:00") == 2_000


def described_fixture():
    t0, t1, t2 = (TopicPartition("t", p) for p in range(3))
    member = MemberDescription("m-1", "i-1", None, "client-1", "127.0.0.1", 4, "Stable", ("t",), None,
                               frozenset({t0, t1}), frozenset({t0, t1}))
    description = GroupDescription("g", "Stable", 4, 4, "uniform", (member,), 2, "127.0.0.1:9102")
    committed = {t0: OffsetAndMetadata(5), t2: OffsetAndMetadata(7)}
    return description, committed, {t0: 8, t1: 3, t2: 7}


def test_describe_json_is_exactly_the_designs_shape():
    report = groups.describe_report(*described_fixture())
    assert report == {
        "group": "g", "state": "Stable", "group_epoch": 4, "assignor": "uniform",
        "members": [{"member_id": "m-1", "instance_id": "i-1", "client_id": "client-1", "host": "127.0.0.1",
                     "member_epoch": 4, "assignment": [{"topic": "t", "partition": 0}, {"topic": "t", "partition": 1}]}],
        "offsets": [
            {"topic": "t", "partition": 0, "current_offset": 5, "log_end_offset": 8, "lag": 3, "member_id": "m-1"},
            {"topic": "t", "partition": 1, "current_offset": None, "log_end_offset": 3, "lag": None, "member_id": "m-1"},
            {"topic": "t", "partition": 2, "current_offset": 7, "log_end_offset": 7, "lag": 0, "member_id": None},
        ],
    }


def test_describe_text_is_kafka_consumer_groups_layout():
    description, committed, log_ends = described_fixture()
    lines = groups.offsets_text(groups.describe_report(description, committed, log_ends), description).splitlines()
    assert lines[0] == ""
    assert lines[1].split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                                "CONSUMER-ID", "HOST", "CLIENT-ID"]
    assert [line.split() for line in lines[2:]] == [
        ["g", "t", "0", "5", "8", "3", "m-1", "127.0.0.1", "client-1"],
        ["g", "t", "1", "-", "3", "-", "m-1", "127.0.0.1", "client-1"],
        ["g", "t", "2", "7", "7", "0", "-", "-", "-"],
    ]
    assert len({line.index("CURRENT-OFFSET") for line in lines[1:2]}) == 1
    assert lines[2].index("5") == lines[1].index("CURRENT-OFFSET")  # columns line up
    members = groups.members_text(description).splitlines()
    assert members[2].split() == ["g", "m-1", "i-1", "127.0.0.1", "client-1", "2", "4", "t(0,1)", "4", "t(0,1)"]
    state = groups.state_text(description).splitlines()
    assert state[1].split()[:3] == ["GROUP", "COORDINATOR", "(ID)"]
    assert state[2].split() == ["g", "127.0.0.1:9102", "(2)", "uniform", "Stable", "4", "4", "1"]


# -- transactions and producers ---------------------------------------------------------------------


def test_a_transaction_is_described_with_its_duration_and_partitions_as_kafka_transactions_shows_it():
    description = TransactionDescription("writer", "Ongoing", 7, 2, 60_000, 1_000, (TopicPartition("t", 1),), 3)
    report = transactions.describe_report(description, now_ms=3_500)
    assert report == {"transactional_id": "writer", "coordinator_id": 3, "state": "Ongoing", "producer_id": 7,
                      "producer_epoch": 2, "transaction_timeout_ms": 60_000, "transaction_start_time_ms": 1_000,
                      "transaction_duration_ms": 2_500, "partitions": [{"topic": "t", "partition": 1}]}
    header, row = transactions.describe_text(report).splitlines()
    assert header.split() == list(transactions.DESCRIBE_HEADER)
    assert row.split() == ["3", "writer", "7", "2", "Ongoing", "60000", "1970-01-01T00:00:01.000+00:00", "2500",
                           "t-1"]
    idle = TransactionDescription("writer", "CompleteCommit", 7, 3, 60_000, -1, (), 3)
    assert transactions.describe_report(idle, now_ms=5)["transaction_duration_ms"] is None
    assert transactions.describe_text(transactions.describe_report(idle, now_ms=5)).split()[-3:] == ["-", "-", "-"]


def test_producers_show_null_for_what_the_leader_does_not_know():
    report = transactions.producers_report(TopicPartition("t", 0), [ProducerDescription(5, 1, -1, -1, 0, -1)])
    assert report == {"topic": "t", "partition": 0, "producers": [{
        "producer_id": 5, "producer_epoch": 1, "coordinator_epoch": 0, "last_sequence": None,
        "last_timestamp_ms": None, "current_transaction_start_offset": None}]}


def test_transaction_commands_refuse_bad_input_before_connecting(capsys):
    code, _out, err = run(capsys, "transactions", "describe", " ", "--bootstrap", NOWHERE)
    assert code == 1 and "must not be empty" in err
    with pytest.raises(SystemExit) as raised:
        run(capsys, "consume", "t", "--isolation-level", "serializable")
    assert raised.value.code == 2
    assert "invalid choice: 'serializable'" in capsys.readouterr().err


def test_hanging_transactions_are_reported_with_null_for_what_is_unknown():
    tp = TopicPartition("t", 2)
    found = [HangingTransaction(OpenTransaction(tp, 9, 0, -1, 40, 1_000), None),
             HangingTransaction(OpenTransaction(tp, 7, 3, 5, 12, -1), "writer")]
    assert transactions.hanging_report(found, now_ms=61_000) == {"hanging_transactions": [
        {"topic": "t", "partition": 2, "producer_id": 9, "producer_epoch": 0, "coordinator_epoch": None,
         "start_offset": 40, "last_timestamp_ms": 1_000, "duration_ms": 60_000, "transactional_id": None},
        {"topic": "t", "partition": 2, "producer_id": 7, "producer_epoch": 3, "coordinator_epoch": 5,
         "start_offset": 12, "last_timestamp_ms": None, "duration_ms": None, "transactional_id": "writer"}]}
    spec = AbortTransactionSpec(tp, 9, 0, -1)
    assert transactions.abort_report(spec, 40) == {
        "topic": "t", "partition": 2, "producer_id": 9, "producer_epoch": 0, "coordinator_epoch": None,
        "start_offset": 40, "marker_producer_epoch": 1, "marker_coordinator_epoch": 0}


@pytest.mark.parametrize("argv, says", [
    (("find-hanging",), "find-hanging needs --topic or --broker-id"),
    (("find-hanging", "--partition", "1"), "--partition needs --topic"),
    (("abort", "--topic", "t", "--partition", "0"), "either by --start-offset or by --producer-id"),
    (("abort", "--topic", "t", "--partition", "0", "--start-offset", "4", "--producer-id", "1"),
     "either by --start-offset or by --producer-id"),
    (("abort", "--topic", "t", "--partition", "0", "--producer-id", "1", "--coordinator-epoch", "0"),
     "--producer-epoch missing"),
])
def test_hanging_transaction_commands_refuse_bad_input_before_connecting(capsys, argv, says):
    code, _out, err = run(capsys, "transactions", *argv, "--bootstrap", NOWHERE)
    assert code == 1 and says in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("argv", [
    ["alter", "--entity-type", "users", "--entity-name", "", "--add-config", "producer_byte_rate=100"],
    ["describe", "--entity-type", "clients", "--entity-name", " "],
    ["alter", "--entity-type", "topics", "--entity-name", "", "--add-config", "retention.ms=1"],
])
def test_an_empty_entity_name_is_refused_before_anything_is_written(capsys, argv):
    code, _out, err = run(capsys, "configs", *argv, "--zookeeper", NOWHERE, "--bootstrap", NOWHERE)
    assert code == 1 and "--entity-name must not be empty" in err and err.count("\n") == 1, err


@pytest.mark.parametrize(("argv", "says"), [
    (["acls", "list", "--authorizer-properties", f"zookeeper.connect={NOWHERE}"],
     f"cannot reach ZooKeeper at {NOWHERE}: nothing accepts connections there; is the cluster running?"),
    (["configs", "describe", "--entity-type", "users", "--entity-name", "a", "--zookeeper", NOWHERE],
     "nothing accepts connections there"),
    (["configs", "describe", "--entity-type", "users", "--entity-name", "a", "--zookeeper", "garbage"],
     "the ZooKeeper 'garbage' is not host:port[,host:port...][/chroot]"),
    (["acls", "list", "--authorizer-properties", "zookeeper.connect=nosuchhost.invalid:2181"],
     "nosuchhost.invalid does not resolve"),
])
def test_commands_on_zookeeper_refuse_an_address_where_nothing_listens_at_once(capsys, argv, says):
    started = time.monotonic()
    code, _out, err = run(capsys, *argv)
    assert code == 1 and says in err and err.count("\n") == 1, err
    assert time.monotonic() - started < 5  # not kazoo's 10 s connection timeout


@pytest.mark.parametrize(("argv", "says"), [
    (["topics", "describe", ""], "argument topic: a topic name must not be empty"),
    (["produce", ""], "argument topic: a topic name must not be empty"),
    (["topics", "create", "a/b"], "the topic name 'a/b' has a character other than ASCII letters"),
    (["consume", "x" * 300], "a topic name is at most 249 characters; this one has 300"),
    (["get-offsets", "--topic", ".."], "the topic name '..' is not allowed"),
])
def test_an_illegal_topic_name_is_refused_before_connecting(capsys, argv, says):
    with pytest.raises(SystemExit) as raised:
        run(capsys, *argv, "--bootstrap", NOWHERE)
    err = capsys.readouterr().err
    assert raised.value.code == 2 and says in err and "x" * 300 not in err, err


def test_an_empty_bootstrap_is_refused_rather_than_ignored(capsys):
    code, _out, err = run(capsys, "topics", "list", "--bootstrap", "")
    assert code == 1 and "--bootstrap is empty" in err


@pytest.mark.parametrize("when", ["0001-01-01", "1900-01-01T00:00:00Z"])
def test_a_reset_to_a_time_before_1970_is_refused_as_such(capsys, when):
    with pytest.raises(SystemExit):
        run(capsys, "groups", "reset-offsets", "--group", "g", "--topic", "t", "--to-datetime", when,
            "--bootstrap", NOWHERE)
    assert "is before 1970-01-01T00:00:00Z" in capsys.readouterr().err


@pytest.mark.parametrize("names", [["--topic", "*"], ["--topic", "*", "--topic", "orders"], ["--cluster"]])
def test_a_prefixed_acl_on_every_topic_says_why_it_is_refused(capsys, names):
    code, _out, err = run(capsys, "acls", "add", *names, "--resource-pattern-type", "prefixed",
                          "--allow-principal", "User:bob", "--authorizer-properties", f"zookeeper.connect={NOWHERE}")
    assert code == 1 and "a prefixed pattern cannot be '*'" in err and "literal" in err, err


def test_keys_a_command_config_holds_that_replog_does_not_read_are_named(capsys, tmp_path):
    properties = tmp_path / "client.properties"
    properties.write_text("ssl.ca.file=/ca.pem\nsecurity.protocol=SSL\n")
    code, _out, err = run(capsys, "topics", "list", "--bootstrap", NOWHERE, "--command-config", str(properties))
    assert code == 1
    assert err.splitlines()[0] == (
        f"replog: warning: --command-config {properties}: security.protocol, ssl.ca.file are not read; replog's "
        "client reads ssl.cafile, ssl.certfile, ssl.keyfile, ssl.server.name, bearer.token, bearer.token.file")


def test_reassign_flags_that_do_not_fit_and_bad_plans_are_one_sentence(capsys, tmp_path):
    plan, topics = tmp_path / "plan.json", tmp_path / "topics.json"
    topics.write_text('{"topics": ["t"]}')
    refused = [
        (None, ["--topic", "t", "--replicas", "1,2"], "--topic and --partition go together"),
        (None, ["--replicas", "1,2"], "--replicas needs --topic T --partition P"),
        (None, ["--generate", "--broker-list", "1,2"],
         "--generate needs --topics-to-move-json-file FILE and --broker-list"),
        (None, ["--execute"], "--execute needs --reassignment-json-file FILE"),
        (None, ["--cancel"], "--cancel needs --reassignment-json-file FILE (or --topic T --partition P)"),
        (None, ["--verify", "--broker-list", "1"], "--topics-to-move-json-file and --broker-list go with --generate"),
        (None, ["--execute", "--reassignment-json-file", str(plan), "--topic", "t", "--partition", "0"],
         "--topic/--partition do not go with --execute"),
        (None, ["--execute", "--reassignment-json-file", str(tmp_path / "none.json")],
         "cannot read --reassignment-json-file"),
        (None, ["--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "1,2"],
         'topics[0] must be {"topic": NAME}, not "t"'),
        ('{"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]}', ["--verify"],
         "partitions[0]'s replicas must be a list of distinct broker ids, not [1, 1]"),
        ('{"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": ["/data"]}]}', ["--execute"],
         'partitions[0]\'s log_dirs may only be "any"'),
        ('{"partitions": [{"topic": "t", "partition": 0}]}', ["--execute"],
         'partitions[0] must have "topic", "partition", "replicas" (and may have "log_dirs")'),
    ]
    for text, argv, message in refused:
        if text is not None:
            plan.write_text(text)
            argv = [*argv, "--reassignment-json-file", str(plan)]
        code, _out, err = run(capsys, "reassign", *argv, "--bootstrap", NOWHERE)
        assert code == 1 and message in err and "Traceback" not in err and err.count("\n") == 1, (argv, err)
