"""Configuration: Kafka's names, four sources, and one clear sentence for every mistake."""

import subprocess
import sys

import pytest

from replog import config
from replog.broker.service import SETTINGS as BROKER_SETTINGS


def load(env=None, overrides=None, file_path=None):
    return config.load("broker", BROKER_SETTINGS, env=env or {}, overrides=overrides or {}, file_path=file_path)


def test_later_sources_win_and_each_value_says_where_it_came_from(tmp_path):
    properties = tmp_path / "server.properties"
    properties.write_text("# a comment\nbroker.id=1\nzookeeper.connect=zk:2181\nbroker.rack: r1\n")
    loaded = load(
        file_path=str(properties),
        env={"REPLOG_BROKER_ID": "2", "REPLOG_UNRELATED": "ignored"},
        overrides={"broker.id": "3"},
    )
    assert loaded["broker.id"] == 3 and loaded.source("broker.id") == "--override"
    assert loaded["broker.rack"] == "r1" and "server.properties" in loaded.source("broker.rack")
    assert loaded["zookeeper.session.timeout.ms"] == 18_000 and loaded.source("zookeeper.session.timeout.ms") == "default"
    assert loaded["listeners"] == config.HostPort("127.0.0.1", 9092)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"zookeeper.connect": "zk:2181"}, "broker setting broker.id is required"),
        ({"broker.id": "one", "zookeeper.connect": "zk:2181"}, "invalid value 'one' for broker.id"),
        ({"broker.id": "-1", "zookeeper.connect": "zk:2181"}, "expected at least 0"),
        ({"broker.id": "1", "zookeeper.connect": "zk"}, "invalid value 'zk' for zookeeper.connect"),
        ({"broker.id": "1", "zookeeper.connect": "zk:1/a//b"}, "the chroot /a//b has an empty name"),
        ({"broker.id": "1", "zookeeper.connect": "zk:1/replog/"}, "the chroot /replog/ has an empty name"),
        ({"broker.id": "1", "zookeeper.connect": "zk:1", "listeners": "host:99999"}, "port from 0 to 65535"),
        ({"broker.id": "1", "zookeeper.connect": "zk:1", "log.dir": "/x"}, "unknown broker setting 'log.dir'"),
        ({"broker.id": "1", "zookeeper.connect": "zk:1", "advertised.listeners": "broker-1"},
         "invalid value 'broker-1' for advertised.listeners"),
    ],
)
def test_a_bad_value_is_named_with_what_is_wrong(overrides, message):
    with pytest.raises(config.ConfigError, match=message.replace("(", r"\(")):
        load(overrides=overrides)


def test_a_malformed_properties_line_is_reported_with_its_number(tmp_path):
    properties = tmp_path / "bad.properties"
    properties.write_text("broker.id=1\njust words\n")
    with pytest.raises(config.ConfigError, match="line 2 is not key=value"):
        load(file_path=str(properties))


def test_a_properties_file_in_another_encoding_is_named_with_the_line(tmp_path):
    properties = tmp_path / "latin1.properties"
    properties.write_bytes("broker.id=1\nbroker.rack=caf\u00e9\n".encode("latin-1"))
    with pytest.raises(config.ConfigError, match="latin1.properties line 2 is not UTF-8 text"):
        load(file_path=str(properties))


@pytest.mark.parametrize("service", ["broker", "controller", "metadata"])
def test_a_service_with_bad_config_exits_with_one_sentence_and_no_traceback(service):
    result = subprocess.run(
        [sys.executable, "-m", f"replog.{service}", "--override", "zookeeper.connect=nowhere"],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"replog {service}: ") and result.stderr.count("\n") == 1
