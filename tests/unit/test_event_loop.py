"""Which event loop a replog process runs on (replog/rpc/event_loop.py)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import pytest
import uvloop

from replog.client import Admin
from replog.client.errors import ClientError
from replog.rpc import event_loop
from replog.rpc.event_loop import EVENT_LOOP_ENV, EventLoopError, loop_factory


def kind(env: dict[str, str]) -> type:
    loop = loop_factory(env)()
    try:
        return type(loop)
    finally:
        loop.close()


def test_uvloop_unless_the_environment_asks_for_asyncios_own_loop():
    assert kind({}) is uvloop.Loop
    assert kind({EVENT_LOOP_ENV: "uvloop"}) is uvloop.Loop
    assert kind({EVENT_LOOP_ENV: "asyncio"}) is not uvloop.Loop
    assert issubclass(kind({EVENT_LOOP_ENV: "asyncio"}), asyncio.BaseEventLoop)


def test_a_name_that_is_no_event_loop_is_refused_in_words():
    with pytest.raises(EventLoopError, match="REPLOG_EVENT_LOOP=trio is not an event loop; use uvloop or asyncio"):
        loop_factory({EVENT_LOOP_ENV: "trio"})


def test_run_answers_on_the_chosen_loop():
    async def which() -> type:
        return type(asyncio.get_running_loop())

    assert event_loop.run(which()) is uvloop.Loop


def test_a_client_with_a_bad_choice_says_so_before_it_connects(monkeypatch):
    monkeypatch.setenv(EVENT_LOOP_ENV, "trio")
    with pytest.raises(ClientError, match="REPLOG_EVENT_LOOP=trio"):
        Admin("127.0.0.1:1")


def test_a_service_with_a_bad_choice_stops_with_one_sentence(tmp_path):
    properties = tmp_path / "metadata.properties"
    properties.write_text("zookeeper.connect=127.0.0.1:1\nlisteners=127.0.0.1:0\nmetrics.port=0\n")
    result = subprocess.run([sys.executable, "-m", "replog.metadata", str(properties)], capture_output=True,
                            text=True, timeout=60, env={**os.environ, EVENT_LOOP_ENV: "trio"})
    assert result.returncode != 0
    assert "REPLOG_EVENT_LOOP=trio is not an event loop" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_service_says_what_it_runs_in_replog_build_info():
    import prometheus_client

    from replog.rpc import build_info

    async def record() -> None:
        build_info.record("controller")

    event_loop.run(record())
    labels = next(sample.labels for metric in prometheus_client.REGISTRY.collect() for sample in metric.samples
                  if sample.name == "replog_build_info")
    assert labels["service"] == "controller" and labels["event_loop"] == "uvloop"
    assert labels["version"] == build_info.version() != "unknown"
