"""The data source's options as a Spark user writes them: spark-sql-kafka's names, one clear error each."""

import pytest

pytest.importorskip("pyspark")

from replog.core.offset_ranges import EARLIEST, LATEST  # noqa: E402
from replog.core.topic_partition import TopicPartition  # noqa: E402
from replog.spark.options import OptionError, security_options, sink_options, source_options  # noqa: E402

BOOTSTRAP = {"bootstrap": "127.0.0.1:9094"}


def read(streaming=False, **options):
    return source_options({**BOOTSTRAP, **options}, streaming=streaming)


def test_defaults_are_spark_sql_kafkas():
    batch = read(subscribe="a, b,a")
    assert batch.subscription.topics == ("a", "b")
    assert batch.starting.kind == "earliest" and batch.ending.kind == "latest"
    assert batch.fail_on_data_loss and not batch.include_headers
    assert batch.isolation_level == "read_uncommitted"
    assert read(streaming=True, subscribe="a").starting.kind == "latest"


def test_option_names_are_case_insensitive_and_json_offsets_are_per_partition():
    options = source_options({"BOOTSTRAP": "h:1", "Subscribe": "t",
                              "startingoffsets": '{"t":{"0":23,"1":-2}}', "endingOffsets": '{"t":{"0":40}}'},
                             streaming=False)
    assert options.starting.offsets == {TopicPartition("t", 0): 23, TopicPartition("t", 1): EARLIEST}
    assert options.ending.for_partition(TopicPartition("t", 1), LATEST) == ("offset", LATEST)


def test_timestamps_win_over_offsets_as_in_spark_sql_kafka():
    options = read(subscribe="t", startingOffsets="earliest", startingTimestamp="1700000000000",
                   startingOffsetsByTimestamp='{"t":{"0":5}}')
    assert options.starting.for_partition(TopicPartition("t", 3), EARLIEST) == ("timestamp", 1700000000000)
    by_partition = read(subscribe="t", startingOffsetsByTimestamp='{"t":{"0":5}}')
    assert by_partition.starting.for_partition(TopicPartition("t", 0), EARLIEST) == ("timestamp", 5)
    assert by_partition.starting.for_partition(TopicPartition("t", 1), EARLIEST) == ("offset", EARLIEST)


def test_assign_and_admission_control():
    options = read(streaming=True, assign='{"t":[0,2]}', maxOffsetsPerTrigger="1000", minOffsetsPerTrigger="10",
                   maxTriggerDelay="30s", minPartitions="4")
    assert options.subscription.partitions == (TopicPartition("t", 0), TopicPartition("t", 2))
    assert (options.max_offsets_per_trigger, options.min_offsets_per_trigger) == (1000, 10)
    assert options.max_trigger_delay_ms == 30_000 and options.min_partitions == 4


@pytest.mark.parametrize("options, says", [
    ({"subscribe": "t", "bootstrap": ""}, "option bootstrap is required"),
    ({"subscribe": "t", "bootstrap": "nohost"}, "not HOST:PORT"),
    ({"subscribe": "t", "assign": '{"t":[0]}'}, "exactly one of the options subscribe, subscribePattern and assign"),
    ({}, "exactly one of"),
    ({"assign": "[0, 1]"}, "option assign must be a JSON object"),
    ({"assign": '{"t": [-1]}'}, "needs a list of partition numbers"),
    ({"subscribePattern": "("}, "is not a regular expression"),
    ({"subscribe": "t", "startingOffsets": "{bad"}, "option startingOffsets is not valid JSON"),
    ({"subscribe": "t", "startingOffsets": '{"t":{"0":"x"}}'}, "must map a partition number to an integer"),
    ({"subscribe": "t", "startingOffsets": '{"t":{"0":-3}}'}, "is not an offset"),
    ({"subscribe": "t", "startingOffsets": "latest"}, "startingOffsets=latest would read nothing"),
    ({"subscribe": "t", "endingOffsets": "earliest"}, "endingOffsets=earliest would read nothing"),
    ({"subscribe": "t", "endingOffsets": '{"t":{"0":-2}}'}, "which a query cannot end at"),
    ({"subscribe": "t", "startingTimestamp": "yesterday"}, "must be a time in ms"),
    ({"subscribe": "t", "minPartitions": "0"}, "minPartitions must be a positive whole number"),
    ({"subscribe": "t", "failOnDataLoss": "yes"}, "failOnDataLoss must be true or false"),
    ({"subscribe": "t", "isolationLevel": "serializable"}, "isolationLevel must be read_uncommitted or read_committed"),
    ({"subscribe": "t", "startingOffset": "earliest"}, "unknown option 'startingoffset'"),
    ({"subscribe": "t", "maxTriggerDelay": "5m"}, "maxTriggerDelay only makes sense with minOffsetsPerTrigger"),
    # Numbers Python's isdigit() takes and int() does not, a JSON true taken for partition 1, and numbers
    # larger than an offset or a time can be.
    ({"subscribe": "t", "maxOffsetsPerTrigger": "\u00b2"}, "maxOffsetsPerTrigger must be a positive whole number"),
    ({"subscribe": "t", "startingTimestamp": "\u00b2"}, "must be a time in ms"),
    ({"subscribe": "t", "startingOffsets": '{"t":{"\u00b2":1}}'}, "must map a partition number to an integer"),
    ({"assign": '{"t":[true]}'}, "topic 't' needs a list of partition numbers"),
    ({"subscribe": "t", "startingTimestamp": "99999999999999999999"}, "must be a time in ms"),
    ({"subscribe": "t", "startingOffsetsByTimestamp": '{"t":{"0":99999999999999999999}}'}, "is not a time in ms"),
    ({"subscribe": "t", "startingOffsets": '{"t":{"0":99999999999999999999}}'}, "is not an offset"),
    ({"subscribe": "t", "startingTimestamp": "2000", "endingTimestamp": "1000"},
     "startingTimestamp 2000 is after endingTimestamp 1000"),
])
def test_bad_read_options_get_one_sentence(options, says):
    with pytest.raises(OptionError, match=says.replace("(", r"\(").replace("[", r"\[")):
        source_options({**BOOTSTRAP, **options} if "bootstrap" not in options else options, streaming=False)


def test_streams_refuse_ending_offsets():
    with pytest.raises(OptionError, match="endingOffsets is for batch reads only"):
        read(streaming=True, subscribe="t", endingOffsets="latest")


def test_filters_are_pushed_only_when_asked_and_only_in_batch_reads():
    assert not read(subscribe="t").push_filters
    assert read(subscribe="t", pushFilters="true").push_filters
    with pytest.raises(OptionError, match="pushFilters is for batch reads only"):
        read(streaming=True, subscribe="t", pushFilters="true")
    with pytest.raises(OptionError, match="pushFilters"):
        read(subscribe="t", pushFilters="maybe")


def test_sink_options():
    options = sink_options({**BOOTSTRAP, "topic": "out", "acks": "1"})
    assert (options.topic, options.acks, options.transactional) == ("out", 1, False)
    assert sink_options(BOOTSTRAP).acks == -1
    with pytest.raises(OptionError, match="acks must be all, 1 or 0"):
        sink_options({**BOOTSTRAP, "acks": "2"})
    with pytest.raises(OptionError, match="unknown option 'subscribe' for writing"):
        sink_options({**BOOTSTRAP, "subscribe": "t"})


def test_transactional_sink_options():
    options = sink_options({**BOOTSTRAP, "topic": "out", "transactional": "true", "transactionTimeoutMs": "120000"})
    assert (options.transactional, options.acks, options.transaction_timeout_ms) == (True, -1, 120_000)
    assert sink_options({**BOOTSTRAP, "transactional": "true"}).transaction_timeout_ms == 900_000
    with pytest.raises(OptionError, match="transactional=true writes with acks=all; leave out acks=1"):
        sink_options({**BOOTSTRAP, "transactional": "true", "acks": "1"})
    with pytest.raises(OptionError, match="transactionTimeoutMs only makes sense with transactional=true"):
        sink_options({**BOOTSTRAP, "transactionTimeoutMs": "1000"})
    with pytest.raises(OptionError, match="option transactionTimeoutMs must be a positive whole number"):
        sink_options({**BOOTSTRAP, "transactional": "true", "transactionTimeoutMs": "soon"})
    with pytest.raises(OptionError, match="option transactionTimeoutMs must be at most 2147483647"):
        sink_options({**BOOTSTRAP, "transactional": "true", "transactionTimeoutMs": "99999999999"})


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    """A CA with a client certificate of its own, and a second client's key that is not that certificate's."""
    from replog.security.dev_ca import Authority

    folder = tmp_path_factory.mktemp("tls")
    authority = Authority.create(str(folder / "ca"))
    client, other = authority.issue(str(folder), "spark"), authority.issue(str(folder), "other")
    return {"cafile": authority.cafile, "certfile": client.certfile, "keyfile": client.keyfile,
            "other_keyfile": other.keyfile, "missing": str(folder / "missing.pem"), "folder": str(folder)}


def test_the_ssl_options_reach_every_client_as_replogs_client_security(certificates, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("a-token\n")
    given = {"SSL.CAFILE": certificates["cafile"], "ssl.certfile": certificates["certfile"],
             "ssl.keyfile": certificates["keyfile"], "ssl.serverName": "broker.replog",
             "bearerTokenFile": str(token_file)}
    for options in (read(subscribe="t", **given), sink_options({**BOOTSTRAP, **given})):
        security = options.security.client_security()
        assert (security.cafile, security.certfile, security.keyfile, security.server_name) == (
            certificates["cafile"], certificates["certfile"], certificates["keyfile"], "broker.replog")
        assert security.token() == "a-token", "the file is read at each call"
    assert read(subscribe="t").security.client_security() is None, "no options: REPLOG_SSL_* as every client"
    assert sink_options({**BOOTSTRAP, "ssl.cafile": certificates["cafile"],
                         "bearerToken": "t"}).security.client_security().token == "t"


def test_client_properties_become_the_ssl_options():
    properties = {"ssl.cafile": "ca.pem", "ssl.server.name": "b", "bearer.token.file": "t", "ssl.keyfile": "",
                  "bootstrap.servers": "x"}
    assert security_options(properties) == {"ssl.cafile": "ca.pem", "ssl.serverName": "b", "bearerTokenFile": "t"}


@pytest.mark.parametrize("options, says", [
    ({"ssl.cafile": "missing"}, "option ssl.cafile names {missing}, which does not exist here on the driver "
                                "(the file must be at that path on the driver and on every executor)"),
    ({"ssl.cafile": "cafile", "ssl.certfile": "certfile"},
     "a client certificate needs both ssl.certfile and ssl.keyfile"),
    ({"ssl.certfile": "certfile", "ssl.keyfile": "keyfile"},
     "a client certificate or a bearer token is sent only over TLS: set ssl.cafile"),
    ({"ssl.cafile": "cafile", "ssl.certfile": "certfile", "ssl.keyfile": "other_keyfile"},
     "the TLS files {cafile}, {certfile}, {other_keyfile} do not load"),
    ({"ssl.cafile": "keyfile"}, "the TLS files {keyfile} do not load"),
    ({"ssl.serverName": "broker"}, "option ssl.serverName is for TLS: set ssl.cafile too"),
    ({"ssl.cafile": "cafile", "bearerToken": "t", "bearerTokenFile": "cafile"},
     "give bearerToken or bearerTokenFile, not both"),
    ({"ssl.cafile": "cafile", "bearerTokenFile": "folder"},
     "option bearerTokenFile names {folder}, which is not a file"),
])
def test_bad_ssl_options_get_one_sentence_on_the_driver(certificates, options, says):
    given = {name: certificates.get(value, value) for name, value in options.items()}
    for check in (lambda: read(subscribe="t", **given), lambda: sink_options({**BOOTSTRAP, **given})):
        with pytest.raises(OptionError) as failure:
            check()
        assert str(failure.value).startswith(says.format(**certificates))
