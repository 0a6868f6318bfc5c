"""`replog bench failover`: how long a broker's partitions have no leader when it goes away.

On a local cluster (`replog dev`), the broker leading the most partitions of a
new topic is sent SIGKILL (or SIGTERM: a controlled shutdown); the figure is
the time until the metadata service shows every one of those partitions led
by another broker — what a client waits before it can write again. The bench
watches the topic through a WatchMetadata stream, as a long-lived client would,
and also reports how long each moved partition's new state took from the
controller's write in ZooKeeper (the state znode's mtime) to that stream.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import grpc

from replog.api.metadata.v1 import metadata_pb2, metadata_pb2_grpc
from replog.cli.percentiles import percentiles_ms
from replog.client import Admin, ClientError
from replog.dev import cluster as local
from replog.dev.processes import DevError, send_signal, wait_until
from replog.zk.records import NO_LEADER
from replog.zk.store import MetadataStore, StoreError, VersionedState

SETTLE_POLL_S = 0.5
MOVE_WAIT_S_MAX = 120.0
SETTLE_WAIT_S_MAX = 300.0
EXIT_WAIT_S_MAX = 60.0
STREAM_START_S_MAX = 10.0
METRICS_TIMEOUT_S = 5.0
ZOOKEEPER_TIMEOUT_MS = 10_000
REPLICA_LAG = re.compile(r'^replog_replica_lag_records\{([^}]*)\} (\S+)$', re.MULTILINE)
LABEL = re.compile(r'(\w+)="([^"]*)"')


def bench_failover(bootstrap: str, topic: str, args: argparse.Namespace) -> dict[str, float | int | str]:
    data_dir = args.data_dir or local.find_data_dir()
    try:
        cluster = local.Cluster.load(data_dir)
    except DevError as error:
        raise ClientError(f"bench failover stops a broker of a local cluster: {error}") from None
    with Admin(bootstrap) as admin:
        # Measure a settled cluster, as before a rolling restart: every replica in the ISR and
        # fetching. A new topic's ISR is full from the start, before any follower has fetched.
        if not _poll(lambda: _settled(admin, cluster, topic), SETTLE_WAIT_S_MAX):
            raise ClientError(f"{topic}'s followers did not all join the ISR and fetch within {SETTLE_WAIT_S_MAX:g} s")
        led = _leaders(admin, topic)
        victim, count = Counter(led.values()).most_common(1)[0]
        member = cluster.member("broker", victim)
        if member.pid is None or not member.alive:
            raise ClientError(f"broker {victim} is not running")
        victims = {p for p, leader in led.items() if leader == victim}
        with LeadershipStream(bootstrap.split(",")[0], topic, victim) as stream:
            started = time.monotonic()
            send_signal(member.pid, local.SIGNALS[args.signal])
            try:
                moved_at = stream.wait_moved(victims, MOVE_WAIT_S_MAX)
                # Read back before the broker returns: its return changes the states again.
                propagation = {} if moved_at is None else _propagation(
                    cluster.zookeeper_address, topic, {p: stream.moved[p] for p in victims})
            finally:
                _restart(cluster, member)
        if moved_at is None:
            raise ClientError(f"broker {victim}'s partitions had no new leader within {MOVE_WAIT_S_MAX:g} s")
        # A thousand partitions left behind would weigh on the next run; the deletion goes on alone.
        admin.delete_topics([topic], timeout_ms=0)
    return {"unavailable_s": round(moved_at - started, 3), "broker": victim, "leaderships_moved": count,
            "signal": args.signal, **propagation}


def _restart(cluster: local.Cluster, member: local.Member) -> None:
    wait_until(lambda: not member.alive, EXIT_WAIT_S_MAX)
    cluster.record_pid(member, None)
    local.start(cluster, "broker", member.id)


def _poll(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(SETTLE_POLL_S)
    return True


def _leaders(admin: Admin, topic: str) -> dict[int, int]:
    (description,) = admin.describe_topics([topic])
    return {p.partition: p.leader for p in description.partitions}


def _settled(admin: Admin, cluster: local.Cluster, topic: str) -> bool:
    """Every replica in the ISR, and every follower caught up with its leader by its own fetches
    (the leaders' replog_replica_lag_records is 0; a follower that has not fetched yet counts
    one more record than the leader has)."""
    (description,) = admin.describe_topics([topic])
    if any(p.leader == NO_LEADER or set(p.isr) != set(p.replicas) for p in description.partitions):
        return False
    lags: dict[tuple[int, int], float] = {}
    for leader in {p.leader for p in description.partitions}:
        lags.update(_replica_lags(cluster.member("broker", leader).metrics_address, topic))
    return all(lags.get((p.partition, replica)) == 0
               for p in description.partitions for replica in p.replicas if replica != p.leader)


def _replica_lags(metrics_address: str, topic: str) -> dict[tuple[int, int], float]:
    """(partition, follower) -> records behind, for the partitions of `topic` this broker leads."""
    try:
        with urllib.request.urlopen(f"http://{metrics_address}/metrics", timeout=METRICS_TIMEOUT_S) as response:
            body = response.read().decode()
    except OSError:
        return {}
    lags = {}
    for labels, value in REPLICA_LAG.findall(body):
        fields = dict(LABEL.findall(labels))
        if fields.get("topic") == topic:
            lags[(int(fields["partition"]), int(fields["replica"]))] = float(value)
    return lags


@dataclass(frozen=True)
class Seen:
    """A partition's new leadership as the stream first showed it, and when (Unix and monotonic s)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    wall_s: float
    monotonic_s: float


class LeadershipStream:
    """A WatchMetadata stream on one topic, read in a thread: when each partition was first seen
    led by a live broker other than `old_leader`."""

    def __init__(self, address: str, topic: str, old_leader: int) -> None:
        self._topic = topic
        self._old_leader = old_leader
        self._channel = grpc.insecure_channel(address)
        self._call = metadata_pb2_grpc.MetadataServiceStub(self._channel).WatchMetadata(
            metadata_pb2.WatchMetadataRequest(topics=[topic]))
        self.moved: dict[int, Seen] = {}
        self._changed = threading.Condition()
        self._snapshot = threading.Event()
        self._thread = threading.Thread(target=self._read, name="bench-failover-stream", daemon=True)

    def __enter__(self) -> LeadershipStream:
        self._thread.start()
        if not self._snapshot.wait(STREAM_START_S_MAX):
            self.__exit__()
            raise ClientError(f"the metadata service sent no WatchMetadata snapshot within {STREAM_START_S_MAX:g} s")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._call.cancel()
        self._channel.close()

    def wait_moved(self, partitions: set[int], timeout_s: float) -> float | None:
        """The monotonic time at which the last of `partitions` was seen moved, or None at the timeout."""
        with self._changed:
            if not self._changed.wait_for(lambda: partitions <= self.moved.keys(), timeout_s):
                return None
            return max(self.moved[p].monotonic_s for p in partitions)

    def _read(self) -> None:
        try:
            for message in self._call:
                wall_s, monotonic_s = time.time(), time.monotonic()
                with self._changed:
                    for topic in message.changed_topics:
                        if topic.name == self._topic:
                            self._record(topic.partitions, wall_s, monotonic_s)
                    self._changed.notify_all()
                self._snapshot.set()
        except grpc.RpcError:
            pass  # cancelled when the bench is done, or the metadata service went away

    def _record(self, partitions, wall_s: float, monotonic_s: float) -> None:
        for p in partitions:
            if p.partition not in self.moved and p.leader not in (NO_LEADER, self._old_leader):
                self.moved[p.partition] = Seen(p.leader, p.leader_epoch, tuple(p.isr), wall_s, monotonic_s)


def _propagation(zookeeper: str, topic: str, seen: dict[int, Seen]) -> dict[str, float | int]:
    """From the controller's write of each moved partition's state (its znode's mtime) to the stream.

    A partition whose state changed again since the stream showed it (another write, another
    mtime) is left out; `propagation_partitions` says how many were measured.
    """
    states = asyncio.run(_read_states(zookeeper, topic))
    delays_ns = [int((shown.wall_s * 1000 - states[p].modified_ms) * 1e6) for p, shown in seen.items()
                 if p in states and _same_state(states[p], shown)]
    if not delays_ns:
        return {"propagation_partitions": 0}
    figures = {f"propagation_{name}": value for name, value in percentiles_ms(delays_ns).items()}
    return {**figures, "propagation_partitions": len(delays_ns)}


def _same_state(written: VersionedState, shown: Seen) -> bool:
    state = written.state
    return (state.leader, state.leader_epoch, tuple(state.isr)) == (shown.leader, shown.leader_epoch, shown.isr)


async def _read_states(zookeeper: str, topic: str) -> dict[int, VersionedState]:
    store = MetadataStore(zookeeper, session_timeout_ms=ZOOKEEPER_TIMEOUT_MS, connection_timeout_ms=ZOOKEEPER_TIMEOUT_MS)
    try:
        await store.start()
    except StoreError as error:
        raise ClientError(f"could not read {topic}'s partition states from ZooKeeper: {error}") from None
    try:
        snapshot = await store.read_topic(topic)
    finally:
        await store.stop()
    return snapshot.states if snapshot is not None else {}
