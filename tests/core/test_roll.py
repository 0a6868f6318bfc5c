"""The rolling-restart rule: given this cluster, which member goes next, and may it stop now."""

from replog.core.roll import (
    ClusterView,
    Member,
    MemberKind,
    PartitionView,
    hold_after_restart,
    hold_before_stop,
    never_writable_through_a_restart,
    roll_order,
)

BROKER = MemberKind.BROKER
CONTROLLER = MemberKind.CONTROLLER


def partition(name: str, replicas, isr, min_isr=2) -> PartitionView:
    topic, number = name.rsplit("-", 1)
    return PartitionView(topic, int(number), tuple(replicas), tuple(isr), min_isr)


def cluster(*partitions, brokers=(1, 2, 3), registered=None, controllers=(1, 2), active=1) -> ClusterView:
    return ClusterView(tuple(controllers), active, tuple(brokers),
                       frozenset(brokers if registered is None else registered), tuple(partitions))


def test_standby_controllers_go_first_the_active_one_last_then_the_brokers():
    order = roll_order(cluster(controllers=(1, 2, 3), active=2))
    assert order == (Member(CONTROLLER, 1), Member(CONTROLLER, 3), Member(CONTROLLER, 2),
                     Member(BROKER, 1), Member(BROKER, 2), Member(BROKER, 3))


def test_with_no_active_controller_every_controller_still_rolls():
    assert [m.id for m in roll_order(cluster(active=None)) if m.kind is CONTROLLER] == [1, 2]


def test_a_broker_with_no_under_replicated_partition_goes_before_one_that_hosts_some():
    view = cluster(partition("orders-0", (1, 2), (1,)), partition("orders-1", (3, 1), (3, 1)), brokers=(1, 2, 3))
    assert [m.id for m in roll_order(view) if m.kind is BROKER] == [3, 1, 2]


def test_a_partition_at_its_minimum_isr_holds_the_roll_and_is_named():
    view = cluster(partition("orders-0", (1, 2, 3), (1, 2), min_isr=2),
                   partition("orders-1", (2, 3, 1), (2, 3, 1), min_isr=2))
    hold = hold_before_stop(view, Member(BROKER, 1))
    assert hold is not None and [str(p) for p in hold.partitions] == ["orders-0"]
    assert "orders-0 (ISR 1,2, min.insync.replicas=2)" in str(hold)
    assert "below min.insync.replicas" in str(hold)


def test_a_broker_outside_the_isr_may_stop_it_takes_nothing_away():
    view = cluster(partition("orders-0", (1, 2, 3), (1, 2), min_isr=2))
    assert hold_before_stop(view, Member(BROKER, 3)) is None


def test_a_full_isr_above_the_minimum_lets_any_broker_stop():
    view = cluster(partition("orders-0", (1, 2, 3), (1, 2, 3), min_isr=2))
    assert all(hold_before_stop(view, Member(BROKER, b)) is None for b in (1, 2, 3))


def test_a_partition_already_below_its_minimum_holds_every_broker_that_hosts_it():
    view = cluster(partition("orders-0", (1, 2, 3), (1,), min_isr=2))
    assert hold_before_stop(view, Member(BROKER, 1)) is not None
    assert hold_before_stop(view, Member(BROKER, 2)) is not None  # its replica is what brings it back
    assert hold_before_stop(cluster(partition("orders-0", (1, 2), (1,)), brokers=(1, 2, 3)),
                            Member(BROKER, 3)) is None


def test_partitions_that_no_restart_can_keep_writable_are_reported_and_do_not_hold_the_roll():
    single = partition("logs-0", (1,), (1,), min_isr=1)
    tight = partition("audit-0", (1, 2), (1, 2), min_isr=2)
    view = cluster(single, tight)
    assert never_writable_through_a_restart(view) == (single, tight)
    assert hold_before_stop(view, Member(BROKER, 1)) is None


def test_controllers_are_never_held_by_partitions():
    view = cluster(partition("orders-0", (1, 2, 3), (1, 2), min_isr=2))
    assert hold_before_stop(view, Member(CONTROLLER, 1)) is None


def test_the_roll_goes_on_once_the_restarted_broker_is_registered_and_every_isr_is_full():
    restarted = Member(BROKER, 2)
    assert "not registered" in str(hold_after_restart(
        cluster(partition("orders-0", (1, 2, 3), (1, 3)), registered=(1, 3)), restarted))
    behind = hold_after_restart(cluster(partition("orders-0", (1, 2, 3), (1, 3))), restarted)
    assert behind is not None and [str(p) for p in behind.partitions] == ["orders-0"]
    assert hold_after_restart(cluster(partition("orders-0", (1, 2, 3), (1, 3, 2))), restarted) is None


def test_a_broker_gone_for_good_does_not_stall_the_roll():
    view = cluster(partition("orders-0", (1, 2, 4), (1, 2)), brokers=(1, 2, 3), registered=(1, 2, 3))
    assert hold_after_restart(view, Member(BROKER, 1)) is None


def test_a_restarted_controller_waits_for_an_active_controller():
    assert hold_after_restart(cluster(active=None), Member(CONTROLLER, 1)) is not None
    assert hold_after_restart(cluster(active=2), Member(CONTROLLER, 1)) is None


def test_a_long_list_of_holding_partitions_is_cut_short():
    view = cluster(*(partition(f"t-{n}", (1, 2, 3), (1, 2)) for n in range(8)))
    assert str(hold_before_stop(view, Member(BROKER, 1))).endswith("and 3 more")
