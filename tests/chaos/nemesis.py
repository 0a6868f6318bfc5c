"""The nemesis: the faults a chaos run injects, each one fault run in the report.

Every operation waits for the cluster's answer to its fault (a new leader, a new
controller, a shrunken ISR) with a deadline, then undoes the fault and waits
until the cluster serves acks=all writes again, so that the next fault starts
from a healthy cluster and a hang shows up as a failure here, not as a slow run.
"""

from __future__ import annotations

import time

from tests.chaos.cluster import FAILOVER_S_MAX, RECOVERY_S_MAX, SESSION_TIMEOUT_S, ChaosError, wait_for
from tests.chaos.harness import ChaosRun
from tests.chaos.netns import MEMBERS, PEER_KINDS
from tests.replicas import batches, tear_last_segment

BOUNCES = 5
DWELL_S = (0.5, 2.0)  # how long a fault stands before it is undone, drawn per fault
SPLIT_DWELL_S = 3.0  # how long two leaders coexist in a split


def _dwell(run: ChaosRun) -> None:
    time.sleep(run.rng.uniform(*DWELL_S))


def leader_of_some_partition(run: ChaosRun) -> tuple[int, int]:
    partition = run.rng.randrange(run.partitions)
    leader = wait_for(lambda: max(run.cluster.leader(run.topic, partition), 0), FAILOVER_S_MAX,
                      f"partition {partition} to have a leader")
    return partition, leader


def follower_of(run: ChaosRun, partition: int) -> int:
    info = run.cluster.partition(run.topic, partition)
    return run.rng.choice([r for r in info.isr if r != info.leader])


def recover(run: ChaosRun) -> None:
    run.cluster.wait_full_isr(run.topic)
    run.wait_progress("acks=all writes after recovery")


# -- process faults ------------------------------------------------------------------------------


def crash_leader(run: ChaosRun, signal: str) -> None:
    """SIGKILL or SIGTERM a partition leader; wait for the failover; start it again."""
    partition, victim = leader_of_some_partition(run)
    run.fault(f"SIG{signal} broker {victim}, leader of partition {partition}")
    run.cluster.signal("broker", victim, signal)
    successor = run.cluster.wait_led(run.topic, partition, not_by=victim)
    run.note(f"broker {successor} leads partition {partition}")
    run.wait_progress("acks=all writes with the leader down")
    _dwell(run)
    run.cluster.start("broker", victim)
    recover(run)


def crash_controller(run: ChaosRun, signal: str) -> None:
    """SIGKILL or SIGTERM the active controller; wait until the other takes over; start it again."""
    victim = run.cluster.wait_one_active_controller()
    run.fault(f"SIG{signal} controller {victim}, the active one")
    run.cluster.signal("controller", victim, signal)
    successor = wait_for(lambda: _other_active(run, victim), FAILOVER_S_MAX, "another controller to take over")
    run.note(f"controller {successor} is active")
    run.wait_progress("acks=all writes after the controller failover")
    _dwell(run)
    run.cluster.start("controller", victim)
    recover(run)


def _other_active(run: ChaosRun, victim: int) -> int | None:
    active = run.cluster.active_controller()
    return active if active not in (None, victim) else None


def bounce(run: ChaosRun, kind: str, signal: str, times: int = BOUNCES) -> None:
    """Stop and start at once, `times` in a row, each time whoever leads (partition or controller) now."""
    for round_ in range(1, times + 1):
        if kind == "broker":
            partition, victim = leader_of_some_partition(run)
            role = f"leader of partition {partition}"
        else:
            victim, role = run.cluster.wait_one_active_controller(), "the active controller"
        run.fault(f"bounce {round_}/{times}: SIG{signal} {kind} {victim} ({role}), started again at once")
        run.cluster.signal(kind, victim, signal)
        run.cluster.start(kind, victim)
        if kind == "broker":
            wait_for(lambda: all(p.leader >= 0 for p in run.cluster.partitions(run.topic)), FAILOVER_S_MAX,
                     "every partition to have a leader")
        else:
            run.cluster.wait_one_active_controller()
    recover(run)


def pause(run: ChaosRun, kind: str, victim: int, role: str, seconds: float, *, leads: int | None = None) -> None:
    """SIGSTOP for `seconds`, then SIGCONT. Past the session timeout, ZooKeeper expires the session.

    `leads`: the partition the victim leads, whose failover is awaited when its session expires.
    """
    expires = seconds > SESSION_TIMEOUT_S
    run.fault(f"SIGSTOP {kind} {victim} ({role}) for {seconds:.1f} s"
              + (" (past its ZooKeeper session timeout)" if expires else ""))
    run.cluster.signal(kind, victim, "STOP")
    started = time.monotonic()
    try:
        if expires and leads is not None:
            successor = run.cluster.wait_led(run.topic, leads, not_by=victim)
            run.note(f"broker {successor} leads partition {leads} while broker {victim} is paused")
        elif expires and kind == "controller":
            successor = wait_for(lambda: _other_active(run, victim), FAILOVER_S_MAX,
                                 "another controller to take over")
            run.note(f"controller {successor} is active while controller {victim} is paused")
        time.sleep(max(0.0, seconds - (time.monotonic() - started)))
    finally:
        run.cluster.signal(kind, victim, "CONT")
    run.note(f"SIGCONT {kind} {victim}")
    recover(run)


def pause_leader(run: ChaosRun, seconds: float) -> None:
    partition, victim = leader_of_some_partition(run)
    pause(run, "broker", victim, f"leader of partition {partition}", seconds, leads=partition)


def pause_follower(run: ChaosRun, seconds: float) -> None:
    partition, _ = leader_of_some_partition(run)
    pause(run, "broker", follower_of(run, partition), f"follower of partition {partition}", seconds)


def pause_controller(run: ChaosRun, seconds: float) -> None:
    pause(run, "controller", run.cluster.wait_one_active_controller(), "the active controller", seconds)


def zombie_controller(run: ChaosRun) -> None:
    """Pause the active controller past its session, make the new one work, then let the old one wake.

    While the old controller sleeps, a leader is killed, so the new controller
    elects; the old one wakes with a stale epoch and must neither write nor be
    obeyed (its writes are fenced by /controller_epoch, its requests refused).
    """
    victim = run.cluster.wait_one_active_controller()
    run.fault(f"SIGSTOP controller {victim} (the active one) past its session timeout, a leader killed meanwhile")
    run.cluster.signal("controller", victim, "STOP")
    try:
        successor = wait_for(lambda: _other_active(run, victim), FAILOVER_S_MAX, "another controller to take over")
        run.note(f"controller {successor} is active")
        partition, leader = leader_of_some_partition(run)
        run.cluster.signal("broker", leader, "KILL")
        run.note(f"SIGKILL broker {leader}, leader of partition {partition}")
        run.cluster.wait_led(run.topic, partition, not_by=leader)
        run.cluster.start("broker", leader)
    finally:
        run.cluster.signal("controller", victim, "CONT")
    run.note(f"SIGCONT controller {victim}")
    recover(run)
    active = wait_for(run.cluster.active_controller, FAILOVER_S_MAX, "one active controller")
    if active != successor:
        raise ChaosError(f"controller {active} is active after controller {victim} woke; expected {successor}")


# -- network faults (the broker must be isolatable: ChaosCluster.isolatable) ---------------------


def cut_off_follower(run: ChaosRun, broker: int, kinds: frozenset[str]) -> None:
    """Cut a follower off from these kinds of peer until it leaves every ISR; heal until it is back in all.

    Cut from everything, its ZooKeeper session expires and the controller takes
    it out; cut from the other brokers only, the leader drops it after
    replica.lag.time.max.ms and proposes the smaller ISR itself.
    """
    relay = run.cluster.relays[broker]
    what = "everything" if kinds == PEER_KINDS else " and ".join(sorted(kinds))
    run.fault(f"broker {broker} (a follower) cut off from {what}")
    relay.cut(kinds)
    started = time.monotonic()
    try:
        wait_for(lambda: all(broker not in p.isr for p in run.cluster.partitions(run.topic)), FAILOVER_S_MAX,
                 f"broker {broker} to leave the ISR")
        run.note(f"broker {broker} left the ISR {time.monotonic() - started:.1f} s after the cut")
        run.wait_progress("acks=all writes without the follower")
    finally:
        relay.heal()
    healed = time.monotonic()
    run.cluster.wait_full_isr(run.topic)
    run.note(f"broker {broker} rejoined the ISR {time.monotonic() - healed:.1f} s after the heal")
    recover(run)


def split_leader(run: ChaosRun, broker: int, *, show_divergence: bool = False) -> list[str]:
    """Cut a leader off from ZooKeeper and every other member, while this test's clients still reach it.

    The rest of the cluster elects new leaders; the old one goes on answering the
    clients that still reach it until the partition heals (acks=1 writes it
    acknowledges then are lost; acks=all writes cannot be acknowledged). With
    show_divergence, returns how its log and its successor's differ on disk just
    before the heal.
    """
    relay = run.cluster.relays[broker]
    led = [p.partition for p in run.cluster.partitions(run.topic) if p.leader == broker]
    run.fault(f"broker {broker} (leader of partitions {led}) cut off from ZooKeeper and the other members, "
              "still reachable by the test's clients")
    relay.cut(MEMBERS)
    differences: list[str] = []
    try:
        successors = {p: run.cluster.wait_led(run.topic, p, not_by=broker) for p in led}
        run.note(f"new leaders {successors} while broker {broker} is cut off")
        time.sleep(SPLIT_DWELL_S)
        if show_divergence:
            differences = [d for p, new in successors.items() for d in _differences(run, p, broker, new)]
    finally:
        relay.heal()
    run.note(f"broker {broker} healed")
    recover(run)
    return differences


def _differences(run: ChaosRun, partition: int, old: int, new: int) -> list[str]:
    mine = batches(run.partition_dir(old, partition))
    theirs = batches(run.partition_dir(new, partition))
    for index, (a, b) in enumerate(zip(mine, theirs)):
        if a != b:
            return [f"partition {partition}: brokers {old} and {new} differ from batch {index} (offset "
                    f"{a.base_offset}, leader epochs {a.leader_epoch} and {b.leader_epoch})"]
    if len(mine) > len(theirs):
        return [f"partition {partition}: broker {old} holds {len(mine) - len(theirs)} batches broker {new} lacks"]
    return []


# -- disk faults ---------------------------------------------------------------------------------


def tear_follower_tail(run: ChaosRun) -> None:
    """kill -9 a follower and cut its last segments at a random byte (lost unflushed pages); restart it."""
    partition, _ = leader_of_some_partition(run)
    victim = follower_of(run, partition)
    # A tail to lose: every replica on the victim has replicated something (a fault right
    # after the topic's creation would otherwise find empty logs).
    wait_for(lambda: all(batches(run.partition_dir(victim, each)) for each in range(run.partitions)),
             RECOVERY_S_MAX, f"broker {victim} to hold records of every partition")
    run.fault(f"SIGKILL broker {victim} (a follower of partition {partition}), its segment tails torn")
    run.cluster.signal("broker", victim, "KILL")
    for each in range(run.partitions):
        directory = run.partition_dir(victim, each)
        path, before, after = tear_last_segment(directory, run.rng)
        run.note(f"tore {path.rsplit('/', 2)[-2]}/{path.rsplit('/', 1)[-1]}: {before} -> {after} bytes")
    run.cluster.start("broker", victim)
    recover(run)


def wait_reader_caught_up(run: ChaosRun, partition: int, timeout_s: float = RECOVERY_S_MAX) -> None:
    """Wait until the live reader has returned every acknowledged record of the partition."""
    assert run.reader is not None

    def caught_up() -> bool:
        acked = [offset for w in run.writers for offset in w.acknowledged_offsets(partition)]
        read = run.reader.history.records[partition]
        return bool(acked) and bool(read) and read[-1][0] >= max(acked)

    wait_for(caught_up, timeout_s, f"the reader to return every acknowledged record of partition {partition}")


def move_leadership_back(run: ChaosRun, broker: int) -> None:
    """SIGTERM the leaders that replaced `broker` (its replicas come first), so that it leads again."""
    leaders = sorted({p.leader for p in run.cluster.partitions(run.topic)} - {broker})
    for leader in leaders:
        run.fault(f"SIGTERM broker {leader} so that broker {broker}, first in replica order, leads again")
        run.cluster.signal("broker", leader, "TERM")
        wait_for(lambda: all(p.leader == broker for p in run.cluster.partitions(run.topic)), FAILOVER_S_MAX,
                 f"broker {broker} to lead every partition")
        run.cluster.start("broker", leader)
    recover(run)


def unclean_election(run: ChaosRun, *, leader: int, follower: int) -> None:
    """The follower dies; the leader takes writes alone and dies too; the stale follower is elected."""
    run.fault(f"SIGKILL broker {follower} (the follower)")
    run.cluster.signal("broker", follower, "KILL")
    wait_for(lambda: run.cluster.partition(run.topic).isr == (leader,), FAILOVER_S_MAX,
             f"the ISR to shrink to broker {leader}")
    run.wait_progress(f"writes acknowledged by broker {leader} alone")
    wait_reader_caught_up(run, 0)
    run.fault(f"SIGKILL broker {leader} (the leader, the only ISR member); broker {follower} started, "
              "the only live replica")
    run.cluster.signal("broker", leader, "KILL")
    run.cluster.start("broker", follower)
    wait_for(lambda: run.cluster.leader(run.topic) == follower, FAILOVER_S_MAX,
             f"broker {follower} to be elected uncleanly")
    run.note(f"broker {follower} leads, elected from outside the ISR")
    run.wait_progress(f"writes acknowledged by broker {follower}")
