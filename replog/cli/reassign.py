"""`replog reassign`, as kafka-reassign-partitions: move partitions to other replicas, and watch it happen.

One partition on the command line is what an operator types most (--topic, --partition, --replicas).
For many there are Kafka's JSON plans: --generate proposes one that spreads topics over a broker list
(after brokers join or before they leave), --execute starts its moves, --verify says whether they are
done, --cancel stops them. With --wait the command follows the moves until they are done: the replicas
being added catch up and join the ISR, then the controller drops the replicas that leave.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from replog.cli.bootstrap import add_cluster_arguments, command_admin
from replog.cli.json_files import entries, file_error, is_whole, partition_entries
from replog.cli.names import topic_name
from replog.cli.numbers import INT32_MAX, PARTITION, first_out_of_range
from replog.client import Admin, AdminError, TopicPartition
from replog.client.types import PartitionInfo
from replog.core.errors import ErrorCode
from replog.core.rebalance import RebalanceError, balanced_assignment, moved_replicas

POLL_S = 0.5
PLAN_OPTION, TOPICS_OPTION = "--reassignment-json-file", "--topics-to-move-json-file"
PLAN_SHAPE = '{"version": 1, "partitions": [{"topic": "T", "partition": 0, "replicas": [1, 2, 3]}]}'
TOPICS_SHAPE = '{"version": 1, "topics": [{"topic": "T"}]}'


def add_commands(commands: Any) -> None:
    parser = commands.add_parser(
        "reassign", help="move partitions to other replicas (kafka-reassign-partitions)",
        description="Move partitions to other replicas, as kafka-reassign-partitions does. One partition: "
        "--topic T --partition P --replicas 1,2,3. Many: --generate proposes a plan spreading topics over "
        "--broker-list that keeps every replica it can where it is (the moves adding or removing brokers "
        "needs); --execute starts a plan's moves, --verify says whether they are done, --cancel stops them.")
    parser.add_argument("--topic", type=topic_name, help="with --partition: the partition to move or cancel")
    parser.add_argument("--partition", type=PARTITION)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--replicas", type=_broker_ids, metavar="1,2,3",
                      help="the broker ids of --topic/--partition's new replicas, preferred leader first")
    mode.add_argument("--generate", action="store_true",
                      help=f"print the current assignment of the topics in {TOPICS_OPTION} and a plan that "
                      f"spreads them over --broker-list, moving as few replicas as it can")
    mode.add_argument("--execute", action="store_true", help=f"start the moves of {PLAN_OPTION}")
    mode.add_argument("--verify", action="store_true",
                      help=f"say whether each move of {PLAN_OPTION} is done; exit 1 while one is not")
    mode.add_argument("--cancel", action="store_true",
                      help=f"cancel the move in progress of --topic/--partition, or those of {PLAN_OPTION}: "
                      f"their partitions go back to their original replicas")
    parser.add_argument(PLAN_OPTION, metavar="FILE", help=f"a plan, as --generate prints it: {PLAN_SHAPE}")
    parser.add_argument(TOPICS_OPTION, metavar="FILE", help=f"the topics --generate spreads: {TOPICS_SHAPE}")
    parser.add_argument("--broker-list", type=_broker_ids, metavar="1,2,3",
                        help="with --generate: the brokers to spread the topics over")
    parser.add_argument("--wait", action="store_true", help="show progress until the moves are done")
    add_cluster_arguments(parser)
    parser.set_defaults(handler=_reassign)


def _broker_ids(text: str) -> list[int]:
    try:
        ids = [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of broker ids such as 1,2,3") from None
    problem = first_out_of_range(ids, 0, INT32_MAX)
    if problem:
        raise argparse.ArgumentTypeError(f"a broker id in {text!r}: {problem}")
    if len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"{text!r} names a broker twice")
    return ids


def _reassign(args: argparse.Namespace) -> int:
    plan_file, topics_file = args.reassignment_json_file, args.topics_to_move_json_file
    one = args.topic is not None or args.partition is not None
    if one and (args.topic is None or args.partition is None):
        raise _usage("--topic and --partition go together")
    if args.generate:
        if topics_file is None or args.broker_list is None:
            raise _usage(f"--generate needs {TOPICS_OPTION} FILE and --broker-list 1,2,3")
        _refuse_extra(args, one=one, plan=plan_file, wait=args.wait)
        topics = _read_topics(topics_file)
        with command_admin(args) as admin:
            return _generate(admin, topics, args.broker_list)
    if topics_file is not None or args.broker_list is not None:
        raise _usage(f"{TOPICS_OPTION} and --broker-list go with --generate")
    if args.replicas is not None or (args.cancel and one):
        if not one:
            raise _usage("--replicas needs --topic T --partition P")
        _refuse_extra(args, plan=plan_file)
        with command_admin(args) as admin:
            return _one(admin, TopicPartition(args.topic, args.partition), None if args.cancel else args.replicas,
                        args.wait)
    if plan_file is None:
        raise _usage(f"{'--cancel' if args.cancel else '--execute' if args.execute else '--verify'} needs "
                     f"{PLAN_OPTION} FILE" + (" (or --topic T --partition P)" if args.cancel else ""))
    _refuse_extra(args, one=one)
    plan = _read_plan(plan_file)
    with command_admin(args) as admin:
        if args.verify:
            return _verify(admin, plan)
        if args.cancel:
            return _cancel(admin, plan)
        return _execute(admin, plan, args.wait)


def _usage(problem: str) -> AdminError:
    return AdminError(problem, ErrorCode.INVALID_REQUEST)


def _refuse_extra(args: argparse.Namespace, **given: Any) -> None:
    names = {"one": "--topic/--partition", "plan": PLAN_OPTION, "wait": "--wait"}
    extra = [names[name] for name, value in given.items() if value]
    if extra:
        raise _usage(f"{' and '.join(extra)} do not go with {_mode(args)}")


def _mode(args: argparse.Namespace) -> str:
    return next(f"--{name}" for name in ("replicas", "generate", "execute", "verify", "cancel")
                if getattr(args, name) not in (None, False))


# -- one partition ---------------------------------------------------------------------------------


def _one(admin: Admin, partition: TopicPartition, replicas: list[int] | None, wait: bool) -> int:
    before = _partition(admin, partition)
    prior = admin.list_partition_reassignments([partition]).get(partition)
    admin.alter_partition_reassignments({partition: replicas})
    ongoing = admin.list_partition_reassignments([partition]).get(partition)
    if replicas is None:
        # A cancel puts back the replicas the partition had before: what it has less what it was
        # adding (read from the controller now; the metadata service may not show it yet).
        original = [r for r in prior.replicas if r not in prior.adding_replicas] if prior else before.replicas
        print(f"Cancelled the reassignment of {partition}: its replicas are {_ids(original)} again.")
    elif ongoing is None:
        print(f"Reassignment of {partition} to {_ids(replicas)} is complete.")
    else:
        adding, removing = _ids(ongoing.adding_replicas) or "none", _ids(ongoing.removing_replicas) or "none"
        print(f"Reassignment of {partition} from {_ids(before.replicas)} to {_ids(replicas)} started: "
              f"adding {adding}, removing {removing}.")
        if wait:
            _follow(admin, partition)
    if wait:
        now = _partition(admin, partition)
        print(f"Topic: {partition.topic}  Partition: {partition.partition}  Leader: {now.leader}  "
              f"Replicas: {_ids(now.replicas)}  Isr: {_ids(now.isr)}")
    return 0


# -- plans -------------------------------------------------------------------------------------------


def _generate(admin: Admin, topics: list[str], broker_list: list[int]) -> int:
    cluster = admin.cluster()
    missing = [b for b in broker_list if b not in cluster.brokers]
    if missing:
        live = ", ".join(str(b) for b in sorted(cluster.brokers)) or "none"
        raise AdminError(f"--broker-list names broker {missing[0]}, which is not live (live brokers: {live})",
                         ErrorCode.BROKER_NOT_AVAILABLE)
    current = _assignment(admin, topics)
    try:
        proposed = balanced_assignment(current, {b: cluster.racks.get(b) for b in broker_list})
    except RebalanceError as error:
        raise AdminError(f"no plan over brokers {_ids(broker_list)}: {error}", ErrorCode.INVALID_REPLICATION_FACTOR) \
            from None
    changed = {tp: replicas for tp, replicas in proposed.items() if tuple(current[tp]) != replicas}
    print(f"{len(changed)} of {len(current)} partitions change; {moved_replicas(current, proposed)} replicas move "
          f"to other brokers.\n")
    print(f"Current partition replica assignment\n{_plan_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{_plan_json(changed)}")
    return 0


def _execute(admin: Admin, plan: Mapping[TopicPartition, list[int]], wait: bool) -> int:
    current = _assignment(admin, sorted({tp.topic for tp in plan}), plan)
    print(f"Current partition replica assignment\n\n{_plan_json(current)}\n\n"
          f"Save this to use as the {PLAN_OPTION} option during rollback")
    admin.alter_partition_reassignments(plan)
    print(f"Successfully started partition reassignments for {','.join(str(tp) for tp in plan)}")
    if wait:
        _follow_all(admin, list(plan))
        return _verify(admin, plan)
    return 0


def _verify(admin: Admin, plan: Mapping[TopicPartition, list[int]]) -> int:
    ongoing = admin.list_partition_reassignments(list(plan))
    current = _assignment(admin, sorted({tp.topic for tp in plan}), plan)
    print("Status of partition reassignment:")
    done = True
    for tp, target in plan.items():
        if tp in ongoing:
            print(f"Reassignment of partition {tp} is still in progress.")
            done = False
        elif list(current[tp]) == list(target):
            print(f"Reassignment of partition {tp} is completed.")
        else:
            print(f"There is no active reassignment of partition {tp}, but its replicas are {_ids(current[tp])}, "
                  f"not {_ids(target)}.")
            done = False
    return 0 if done else 1


def _cancel(admin: Admin, plan: Mapping[TopicPartition, list[int]]) -> int:
    ongoing = admin.list_partition_reassignments(list(plan))
    moving = [tp for tp in plan if tp in ongoing]
    if moving:
        admin.alter_partition_reassignments({tp: None for tp in moving})
        print(f"Successfully cancelled partition reassignments for {','.join(str(tp) for tp in moving)}")
    idle = [tp for tp in plan if tp not in ongoing]
    if idle:
        print(f"None in progress for {','.join(str(tp) for tp in idle)}")
    return 0


def _assignment(admin: Admin, topics: Sequence[str],
                only: Mapping[TopicPartition, Any] | None = None) -> dict[TopicPartition, tuple[int, ...]]:
    """The replicas of every partition of `topics` (of those in `only` when given); AdminError names a
    partition the cluster does not have."""
    found = {TopicPartition(d.name, p.partition): p.replicas for d in admin.describe_topics(list(topics))
             for p in d.partitions}
    if only is None:
        return found
    for tp in only:
        if tp not in found:
            raise AdminError(f"{tp} does not exist", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, tp.topic)
    return {tp: found[tp] for tp in only}


def _plan_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    return json.dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
        for tp, replicas in sorted(assignment.items())]})


def _read_plan(path: str) -> dict[TopicPartition, list[int]]:
    """A plan: each partition's target replicas; log_dirs may only say "any" (replog moves replicas
    between brokers, not between one broker's log dirs)."""
    plan = {}
    for index, tp, entry in partition_entries(PLAN_OPTION, path, PLAN_SHAPE, required=("replicas",),
                                              optional=("log_dirs",)):
        replicas, log_dirs = entry["replicas"], entry.get("log_dirs")
        if (not isinstance(replicas, list) or not replicas or not all(map(is_whole, replicas))
                or first_out_of_range(replicas, 0, INT32_MAX) or len(set(replicas)) != len(replicas)):
            raise file_error(PLAN_OPTION, path, f"partitions[{index}]'s replicas must be a list of distinct broker "
                             f"ids, not {json.dumps(replicas)}")
        if log_dirs is not None and log_dirs != ["any"] * len(replicas):
            raise file_error(PLAN_OPTION, path, f"partitions[{index}]'s log_dirs may only be \"any\" for each "
                             f"replica, not {json.dumps(log_dirs)}")
        plan[tp] = replicas
    return plan


def _read_topics(path: str) -> list[str]:
    topics = []
    for index, entry in enumerate(entries(TOPICS_OPTION, path, "topics", TOPICS_SHAPE)):
        if not isinstance(entry, dict) or set(entry) != {"topic"} or not isinstance(entry["topic"], str):
            raise file_error(TOPICS_OPTION, path, f"topics[{index}] must be {{\"topic\": NAME}}, not "
                             f"{json.dumps(entry)}")
        if entry["topic"] not in topics:
            topics.append(entry["topic"])
    return topics


# -- following ---------------------------------------------------------------------------------------


def _follow_all(admin: Admin, partitions: list[TopicPartition]) -> None:
    """Print a line whenever the count of finished moves changes, until none is in progress."""
    started = time.monotonic()
    shown = None
    while True:
        ongoing = admin.list_partition_reassignments(partitions)
        line = f"{len(partitions) - len(ongoing)} of {len(partitions)} partitions moved"
        if ongoing:
            line += f"; in progress: {','.join(str(tp) for tp in sorted(ongoing)[:5])}" + (
                ", ..." if len(ongoing) > 5 else "")
        if line != shown:
            print(f"[{time.monotonic() - started:6.1f} s] {line}", flush=True)
            shown = line
        if not ongoing:
            return
        time.sleep(POLL_S)


def _follow(admin: Admin, partition: TopicPartition) -> None:
    """Print a line whenever the ISR or the replica sets change, until the reassignment is gone."""
    started = time.monotonic()
    shown = None
    while True:
        ongoing = admin.list_partition_reassignments([partition]).get(partition)
        if ongoing is None:
            print(f"[{time.monotonic() - started:6.1f} s] done")
            return
        now = _partition(admin, partition)
        behind = [b for b in ongoing.adding_replicas if b not in now.isr]
        line = (f"{len(ongoing.adding_replicas) - len(behind)} of {len(ongoing.adding_replicas)} new replicas "
                f"in sync; leader {now.leader}, ISR {_ids(now.isr)}; catching up: {_ids(behind) or 'none'}")
        if line != shown:
            print(f"[{time.monotonic() - started:6.1f} s] {line}", flush=True)
            shown = line
        time.sleep(POLL_S)


def _partition(admin: Admin, partition: TopicPartition) -> PartitionInfo:
    (topic,) = admin.describe_topics([partition.topic])
    for info in topic.partitions:
        if info.partition == partition.partition:
            return info
    raise AdminError(f"topic {partition.topic!r} has no partition {partition.partition}",
                     ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, partition.topic)


def _ids(ids: tuple[int, ...] | list[int]) -> str:
    return ",".join(str(i) for i in ids)
