"""Rolling restarts: one loop over the pure rule of `replog.core.roll`, for every platform.

A platform (the local cluster of `replog dev`, or Kubernetes) only observes and acts: it says
which controllers and brokers there are and which controller is active, restarts one member
with SIGTERM (a broker's controlled shutdown runs) and says when the new process serves. The
partitions, their ISR and min.insync.replicas come from the cluster itself, through the
metadata service and the active controller, the same way on every platform.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from typing import Any, Protocol

from replog.client import Admin
from replog.core.roll import (
    ClusterView,
    Hold,
    Member,
    MemberKind,
    PartitionView,
    hold_after_restart,
    hold_before_stop,
    never_writable_through_a_restart,
    roll_order,
)
from replog.dev import cluster as local
from replog.dev.processes import DevError

POLL_INTERVAL_S = 1.0
WAIT_S_DEFAULT = 900.0
MIN_INSYNC_REPLICAS = "min.insync.replicas"


class RollError(DevError):
    """The roll cannot go on; the message says which member and what holds it."""


class Platform(Protocol):
    def observe(self) -> ClusterView: ...

    def restart(self, member: Member) -> None:
        """Stop the member with SIGTERM and start it again (or let its replacement start)."""

    def serving(self, member: Member) -> bool:
        """Whether the restarted member's new process serves (gRPC health SERVING)."""


Members = tuple[tuple[int, ...], int | None, tuple[int, ...]]  # controllers, the active one, brokers


def observe(admin: Admin, members: Callable[[str | None], Members]) -> ClusterView:
    """The cluster as the rule needs it; `members` maps the active controller's address to the
    platform's controllers, the active one's id and the brokers."""
    cluster = admin.cluster()
    controllers, active, brokers = members(cluster.controller_address)
    topics = list(cluster.topics.values())
    configs = admin.describe_configs([t.name for t in topics], overrides_only=False) if topics else {}
    partitions = tuple(
        PartitionView(topic.name, p.partition, tuple(p.replicas), tuple(p.isr),
                      int(configs.get(topic.name, {}).get(MIN_INSYNC_REPLICAS, "1")))
        for topic in topics for p in topic.partitions
    )
    return ClusterView(controllers, active, brokers, frozenset(cluster.brokers), partitions)


def roll(platform: Platform, *, dry_run: bool, wait_s_max: float = WAIT_S_DEFAULT,
         say: Callable[[str], None] = print, poll_interval_s: float = POLL_INTERVAL_S) -> list[Member]:
    """Restart every member, one at a time, by the rule; returns them in the order restarted."""
    view = platform.observe()
    order = roll_order(view)
    say("Plan: " + ", ".join(_label(m, view) for m in order))
    for partition in never_writable_through_a_restart(view):
        say(f"Note: {partition} has {len(partition.replicas)} replica(s) and min.insync.replicas="
            f"{partition.min_insync_replicas}: acks=all writes to it fail while any of its brokers restarts.")
    if dry_run:
        for member in order:
            hold = hold_before_stop(view, member)
            say(f"{member}: {'would wait: ' + hold.reason if hold else 'may restart now'}"
                + (f" ({', '.join(str(p) for p in hold.partitions)})" if hold and hold.partitions else ""))
        return []
    restarted = []
    for member in order:
        started_s = time.monotonic()
        _wait(platform, member, lambda v, m=member: hold_before_stop(v, m), wait_s_max, say, poll_interval_s)
        say(f"Restarting {member}")
        platform.restart(member)
        _wait_serving(platform, member, wait_s_max, poll_interval_s)
        _wait(platform, member, lambda v, m=member: hold_after_restart(v, m), wait_s_max, say, poll_interval_s)
        say(f"{member} is back, every ISR full ({time.monotonic() - started_s:.1f} s)")
        restarted.append(member)
    say(f"Rolled {len(restarted)} member(s).")
    return restarted


def _label(member: Member, view: ClusterView) -> str:
    active = member.kind is MemberKind.CONTROLLER and member.id == view.active_controller
    return f"{member} (active)" if active else str(member)


def _wait(platform: Platform, member: Member, hold_of: Callable[[ClusterView], Hold | None], wait_s_max: float,
          say: Callable[[str], None], poll_interval_s: float) -> None:
    """Until the rule lets the member go on; says what holds it whenever that changes."""
    deadline = time.monotonic() + wait_s_max
    said = None
    while True:
        hold = hold_of(platform.observe())
        if hold is None:
            return
        if str(hold) != said:
            say(f"Waiting: {hold}")
            said = str(hold)
        if time.monotonic() >= deadline:
            raise RollError(f"gave up after {wait_s_max:g} s: {hold}")
        time.sleep(poll_interval_s)


def _wait_serving(platform: Platform, member: Member, wait_s_max: float, poll_interval_s: float) -> None:
    deadline = time.monotonic() + wait_s_max
    while not platform.serving(member):
        if time.monotonic() >= deadline:
            raise RollError(f"{member} does not serve {wait_s_max:g} s after its restart")
        time.sleep(poll_interval_s)


# -- replog dev roll ---------------------------------------------------------------------------


class DevPlatform:
    """The processes of a local cluster: `replog dev kill --signal TERM`, then `replog dev start`."""

    def __init__(self, cluster: local.Cluster, admin: Admin) -> None:
        self._cluster = cluster
        self._admin = admin

    def observe(self) -> ClusterView:
        return observe(self._admin, self._members)

    def _members(self, controller_address: str | None) -> Members:
        controllers = self._cluster.members("controller")
        active = next((m.id for m in controllers if m.address == controller_address and m.alive), None)
        return (tuple(m.id for m in controllers), active, tuple(m.id for m in self._cluster.members("broker")))

    def restart(self, member: Member) -> None:
        process = self._cluster.member(member.kind.value, member.id)
        if process.alive:
            local.kill(self._cluster, member.kind.value, member.id, "TERM")
        local.start(self._cluster, member.kind.value, member.id)  # returns once it is SERVING

    def serving(self, member: Member) -> bool:
        return self._cluster.member(member.kind.value, member.id).alive


def add_dev_command(dev_commands: Any) -> None:
    parser = dev_commands.add_parser(
        "roll", help="restart every process, one at a time, never below min.insync.replicas",
        description="Restart the controllers (the active one last), then the brokers, one at a time. "
        "A broker stops (SIGTERM: controlled shutdown) only when no partition would fall below its "
        "min.insync.replicas without it; the next waits until it serves and every ISR is full again.")
    add_roll_arguments(parser)
    parser.add_argument("--data-dir", default=None,
                        help=f"the cluster's directory (default: the nearest {local.DEFAULT_DATA_DIR}/)")
    parser.set_defaults(handler=_dev_roll)


def add_roll_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="print the plan and what would wait, restart nothing")
    parser.add_argument("--timeout-s", type=_positive_seconds, default=WAIT_S_DEFAULT, metavar="S",
                        help=f"longest wait for one member, in seconds (default {WAIT_S_DEFAULT:g})")


def _positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < seconds < math.inf:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return seconds


def _dev_roll(args: argparse.Namespace) -> int:
    cluster = local.Cluster.load(args.data_dir or local.find_data_dir())
    bootstrap = ",".join(m.address for m in cluster.members("metadata"))
    with Admin(bootstrap) as admin:
        roll(DevPlatform(cluster, admin), dry_run=args.dry_run, wait_s_max=args.timeout_s)
    return 0
