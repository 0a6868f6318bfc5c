"""`replog bench failover`: how long a broker's partitions have no leader when it goes away.

On a local cluster (`replog dev`), the broker leading the most partitions of a
new topic is sent SIGKILL (or SIGTERM: a controlled shutdown); the figure is
the time until the metadata service shows every one of those partitions led
by another broker — what a client waits before it can write again.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from replog.client import Admin, ClientError
from replog.dev import cluster as local
from replog.dev.processes import DevError
from replog.dev.processes import send_signal, wait_until

POLL_INTERVAL_S = 0.02
MOVE_WAIT_S_MAX = 120.0
SETTLE_WAIT_S_MAX = 300.0
EXIT_WAIT_S_MAX = 60.0


def bench_failover(bootstrap: str, topic: str, args: argparse.Namespace) -> dict[str, float | int | str]:
    data_dir = args.data_dir or local.find_data_dir()
    try:
        cluster = local.Cluster.load(data_dir)
    except DevError as error:
        raise ClientError(f"bench failover stops a broker of a local cluster: {error}") from None
    with Admin(bootstrap) as admin:
        # Measure a settled cluster: every replica open and in sync, as before a rolling restart.
        if not wait_until(lambda: _in_sync(admin, topic), SETTLE_WAIT_S_MAX):
            raise ClientError(f"{topic}'s replicas did not all join the ISR within {SETTLE_WAIT_S_MAX:g} s")
        led = _leaders(admin, topic)
        victim, count = Counter(led.values()).most_common(1)[0]
        member = cluster.member("broker", victim)
        if member.pid is None or not member.alive:
            raise ClientError(f"broker {victim} is not running")
        victims = {p for p, leader in led.items() if leader == victim}
        started = time.monotonic()
        send_signal(member.pid, local.SIGNALS[args.signal])
        moved = wait_until(lambda: _moved(admin, topic, victims, victim), MOVE_WAIT_S_MAX)
        unavailable_s = time.monotonic() - started
    if not moved:
        raise ClientError(f"broker {victim}'s partitions had no new leader within {MOVE_WAIT_S_MAX:g} s")
    wait_until(lambda: not member.alive, EXIT_WAIT_S_MAX)
    cluster.record_pid(member, None)
    local.start(cluster, "broker", victim)
    return {"unavailable_s": round(unavailable_s, 3), "broker": victim, "leaderships_moved": count,
            "signal": args.signal}


def _leaders(admin: Admin, topic: str) -> dict[int, int]:
    (description,) = admin.describe_topics([topic])
    return {p.partition: p.leader for p in description.partitions}


def _in_sync(admin: Admin, topic: str) -> bool:
    (description,) = admin.describe_topics([topic])
    return all(set(p.isr) == set(p.replicas) for p in description.partitions)


def _moved(admin: Admin, topic: str, partitions: set[int], old_leader: int) -> bool:
    leaders = _leaders(admin, topic)
    return all(leaders[p] not in (-1, old_leader) for p in partitions)
