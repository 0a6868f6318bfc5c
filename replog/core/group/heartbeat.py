"""A group's members over time (KIP-848): joining, heartbeating, being fenced, leaving, timing out.

The heartbeat follows Kafka's coordinator: validate; find, join, replace (a
static member back under a new member id) or fence the member; record what
changed in its subscription; bump the group epoch when membership,
subscriptions or the subscribed topics' partitions moved; compute the target
assignment when the group epoch passed it; reconcile the member towards its
target (member.py); answer with its epoch and, when it changed, its
assignment. A member that sends nothing for the session timeout, or holds
partitions it must give up past its rebalance timeout, is removed.
"""

import re
from dataclasses import replace
from typing import TYPE_CHECKING

from ..errors import ErrorCode
from . import records as rec
from .assignor import MemberSubscription, assign
from .batch import Batch
from .group import ConsumerGroup, GroupEvent, GroupState, check_transition
from .member import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    LEAVE_STATIC_EPOCH,
    Member,
    MemberState,
    as_set,
    reconcile,
)
from .requests import (
    AssignmentChanged,
    GroupConfig,
    GroupEpochBumped,
    GroupStable,
    HeartbeatRequest,
    HeartbeatResponse,
    MemberJoined,
    MemberRemoved,
    Result,
    TopicsImage,
)

if TYPE_CHECKING:
    from .coordinator import GroupCoordinatorShard

GROUP_ID_LENGTH_MAX = 255
MEMBER_ID_LENGTH_MAX = 255


def refuse(error: ErrorCode, message: str, request: HeartbeatRequest) -> Result[HeartbeatResponse]:
    return Result(HeartbeatResponse(error, message, request.member_id, request.member_epoch))


def resolve_subscription(member: Member, topics: TopicsImage) -> frozenset[str]:
    """The topics a member subscribes to now: its names, and the existing topics its regex matches."""
    names = {name for name in member.subscribed_topic_names if name in topics}
    if member.subscribed_topic_regex:
        pattern = re.compile(member.subscribed_topic_regex)
        names |= {name for name in topics if pattern.fullmatch(name) and not name.startswith("__")}
    return frozenset(names)


class Membership:
    """The heartbeat path and the members' timers, over the shard's groups."""

    def __init__(self, shard: "GroupCoordinatorShard", config: GroupConfig) -> None:
        self._shard = shard
        self.config = config
        self._session_deadlines: dict[tuple[str, str], int] = {}
        self._rebalance_deadlines: dict[tuple[str, str], int] = {}

    def start_sessions(self, group: ConsumerGroup, now_ms: int) -> None:
        """After loading: every member gets a full session from now (Kafka does the same)."""
        for member_id in group.members:
            self._session_deadlines[(group.group_id, member_id)] = now_ms + self.config.session_timeout_ms

    def expire(self, now_ms: int, wall_ms: int, batch: Batch) -> None:
        """Remove members whose session or rebalance timed out."""
        expired = [(key, "its session timed out") for key, deadline in self._session_deadlines.items()
                   if deadline <= now_ms]
        expired += [(key, "it did not give up its revoked partitions within its rebalance timeout")
                    for key, deadline in self._rebalance_deadlines.items() if deadline <= now_ms]
        for (group_id, member_id), reason in expired:
            group = self._shard.groups.get(group_id)
            if group is not None and member_id in group.members:
                self._remove_member(group, member_id, reason, batch, wall_ms)
            else:
                self._forget_timers(group_id, member_id)

    def heartbeat(self, request: HeartbeatRequest, topics: TopicsImage, now_ms: int,
                  wall_ms: int) -> Result[HeartbeatResponse]:
        problem = self._check_request(request)
        if problem is not None:
            return problem
        if request.member_epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
            return self._leave(request, now_ms, wall_ms)
        group = self._shard.groups.get(request.group_id)
        member, replacing, refusal = self._find_member(group, request)
        if refusal is not None:
            return refusal
        batch = Batch(self._shard)
        state_before = group.state if group is not None else GroupState.EMPTY
        if group is None:
            batch.write(rec.group_metadata(request.group_id, rec.GroupMetadataValue(0)))
            group = self._shard.groups[request.group_id]
        joining = request.member_epoch == JOIN_EPOCH
        updated = self._updated_member(member, replacing, request)
        bump_reasons = []
        if member is None and replacing is None:
            bump_reasons.append(f"member {request.member_id} joined")
            batch.events.append(MemberJoined(group.group_id, request.member_id, request.instance_id))
        elif _subscription(member or replacing) != _subscription(updated):
            bump_reasons.append(f"member {request.member_id} changed its subscription")
        if replacing is not None:
            self._replace_static_member(group, replacing, updated, batch)
        elif member != updated:
            batch.write(rec.member_metadata(group.group_id, updated.member_id, _metadata_value(updated)))
        if member is not None and member.left_for_now:
            # A static member back under its own member id: its epoch and partitions are still there.
            back = group.members[member.member_id].with_epoch(member.previous_member_epoch)
            batch.write(rec.current_member_assignment(group.group_id, back.member_id, _assignment_value(back)))
        bump_reasons += self._refresh_subscriptions(group, topics, batch)
        if bump_reasons:
            self._bump_epoch(group, "; ".join(bump_reasons), batch, state_before)
        if group.group_epoch > group.assignment_epoch:
            self._compute_target(group, topics, batch)
        member = group.members[request.member_id]
        before = member
        reconciled = reconcile(member, group.assignment_epoch, group.target.get(member.member_id, {}),
                               request.owned, group.owner_of)
        self._record_assignment(group, before, reconciled, batch)
        self._arm_timers(group.group_id, reconciled, now_ms)
        self._note_stable(group, state_before, batch)
        send_assignment = joining or request.owned is not None or reconciled.assigned != before.assigned
        response = HeartbeatResponse(
            ErrorCode.NONE, "", reconciled.member_id, reconciled.member_epoch, self._interval_for(reconciled),
            reconciled.assigned if send_assignment else None,
        )
        return batch.result(response)

    def _interval_for(self, member: Member) -> int:
        """The heartbeat interval a member is told. One that waits for partitions other members are still
        giving up asks again ten times as often, so that a rebalance is not drawn out by a whole interval
        between their release and its next heartbeat."""
        if member.state is MemberState.UNRELEASED_PARTITIONS:
            return max(self.config.heartbeat_interval_ms // 10, 1)
        return self.config.heartbeat_interval_ms

    def _check_request(self, request: HeartbeatRequest) -> Result[HeartbeatResponse] | None:
        if not request.group_id or len(request.group_id) > GROUP_ID_LENGTH_MAX:
            return refuse(ErrorCode.INVALID_GROUP_ID,
                          f"a group id has 1 to {GROUP_ID_LENGTH_MAX} characters, not {len(request.group_id)}", request)
        if not request.member_id or len(request.member_id) > MEMBER_ID_LENGTH_MAX:
            return refuse(ErrorCode.INVALID_REQUEST, "the member id must be set: a UUID the client makes once "
                                                     "(KIP-1082)", request)
        if request.member_epoch < LEAVE_STATIC_EPOCH:
            return refuse(ErrorCode.INVALID_REQUEST, f"member epoch {request.member_epoch} is not an epoch", request)
        if request.member_epoch == LEAVE_STATIC_EPOCH and request.instance_id is None:
            return refuse(ErrorCode.INVALID_REQUEST, "only a static member (with an instance id) leaves with epoch -2",
                          request)
        if request.rebalance_timeout_ms < 0:
            return refuse(ErrorCode.INVALID_REQUEST, "the rebalance timeout must not be negative", request)
        if request.server_assignor is not None and request.server_assignor not in self.config.assignors:
            return refuse(ErrorCode.UNSUPPORTED_ASSIGNOR,
                          f"server assignor {request.server_assignor!r} is not one of "
                          f"{', '.join(self.config.assignors)}", request)
        if request.subscribed_topic_regex:
            try:
                re.compile(request.subscribed_topic_regex)
            except re.error as error:
                return refuse(ErrorCode.INVALID_SUBSCRIPTION_REGEX,
                              f"the subscription regex {request.subscribed_topic_regex!r} does not compile: {error}",
                              request)
        if request.member_epoch == JOIN_EPOCH and request.subscribed_topic_names is None \
                and request.subscribed_topic_regex is None:
            return refuse(ErrorCode.INVALID_REQUEST, "a member joining sends its subscription (topic names or a "
                                                     "regex)", request)
        return None

    def _find_member(self, group: ConsumerGroup | None,
                     request: HeartbeatRequest) -> tuple[Member | None, Member | None, Result | None]:
        """(the member, the static member it replaces, a refusal)."""
        member = group.members.get(request.member_id) if group is not None else None
        if request.member_epoch == JOIN_EPOCH:
            replacing = None
            if request.instance_id is not None and group is not None:
                holder_id = group.static_members.get(request.instance_id)
                if holder_id is not None and holder_id != request.member_id:
                    holder = group.members[holder_id]
                    if not holder.left_for_now:
                        return None, None, refuse(
                            ErrorCode.UNRELEASED_INSTANCE_ID,
                            f"instance id {request.instance_id!r} is held by member {holder_id}, which has not left",
                            request)
                    replacing = holder
            if member is None and replacing is None and group is not None \
                    and len(group.members) >= self.config.max_size:
                return None, None, refuse(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                          f"group {group.group_id} has {len(group.members)} members, the most "
                                          "group.consumer.max.size allows", request)
            return member, replacing, None
        if member is None:
            return None, None, refuse(ErrorCode.UNKNOWN_MEMBER_ID,
                                      f"member {request.member_id} is not in group {request.group_id}; rejoin with "
                                      "epoch 0 and a new member id", request)
        if request.instance_id is not None and member.instance_id != request.instance_id:
            return None, None, refuse(ErrorCode.FENCED_INSTANCE_ID,
                                      f"member {request.member_id} has instance id {member.instance_id!r}, not "
                                      f"{request.instance_id!r}", request)
        if not _epoch_is_current(member, request):
            return None, None, refuse(ErrorCode.FENCED_MEMBER_EPOCH,
                                      f"member epoch {request.member_epoch} is not the member's epoch "
                                      f"{member.member_epoch}; give up every partition and rejoin with epoch 0",
                                      request)
        return member, None, None

    def _updated_member(self, member: Member | None, replacing: Member | None, request: HeartbeatRequest) -> Member:
        base = member or (replace(replacing, member_id=request.member_id) if replacing is not None
                          else Member(request.member_id))
        rebalance_timeout = request.rebalance_timeout_ms or base.rebalance_timeout_ms \
            or self.config.default_rebalance_timeout_ms
        regex = base.subscribed_topic_regex if request.subscribed_topic_regex is None \
            else (request.subscribed_topic_regex or None)
        return replace(
            base,
            instance_id=request.instance_id if request.instance_id is not None else base.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else base.rack_id,
            client_id=request.client_id or base.client_id,
            client_host=request.client_host or base.client_host,
            subscribed_topic_names=(tuple(sorted(set(request.subscribed_topic_names)))
                                    if request.subscribed_topic_names is not None else base.subscribed_topic_names),
            subscribed_topic_regex=regex,
            rebalance_timeout_ms=rebalance_timeout,
            server_assignor=request.server_assignor if request.server_assignor is not None else base.server_assignor,
        )

    def _replace_static_member(self, group: ConsumerGroup, old: Member, new: Member, batch: Batch) -> None:
        """A static member back under a new member id takes its old place: same epoch, same partitions,
        same target; the group epoch does not move, so nobody else is disturbed (KIP-345)."""
        target = group.target.get(old.member_id)
        self._remove_records(group, old.member_id, batch)
        batch.write(rec.member_metadata(group.group_id, new.member_id, _metadata_value(new)))
        if target is not None:
            batch.write(rec.target_assignment_member(group.group_id, new.member_id,
                                                     rec.TargetAssignmentMemberValue(target)))
        epoch = old.previous_member_epoch if old.left_for_now else old.member_epoch
        back = replace(new, member_epoch=epoch, previous_member_epoch=old.previous_member_epoch)
        batch.write(rec.current_member_assignment(group.group_id, new.member_id, _assignment_value(back)))
        self._forget_timers(group.group_id, old.member_id)
        batch.events.append(MemberJoined(group.group_id, new.member_id, new.instance_id))

    def _refresh_subscriptions(self, group: ConsumerGroup, topics: TopicsImage, batch: Batch) -> list[str]:
        """The partition counts of the topics the group subscribes to; a change moves the group epoch."""
        subscribed: set[str] = set()
        for member in group.members.values():
            subscribed |= resolve_subscription(member, topics)
        counts = {topic: topics[topic] for topic in sorted(subscribed)}
        if counts == dict(group.subscription_counts):
            return []
        batch.write(rec.group_subscriptions(group.group_id, rec.GroupSubscriptionsValue(counts)))
        return ["the subscribed topics' partitions changed"]

    def _bump_epoch(self, group: ConsumerGroup, reason: str, batch: Batch, state_before: GroupState) -> None:
        batch.write(rec.group_metadata(group.group_id, rec.GroupMetadataValue(group.group_epoch + 1)))
        event = GroupEvent.MEMBER_JOINED if state_before is GroupState.EMPTY else GroupEvent.EPOCH_BUMPED
        if group.members:
            check_transition(state_before, event, group.state)
        batch.events.append(GroupEpochBumped(group.group_id, group.group_epoch, reason))

    def _compute_target(self, group: ConsumerGroup, topics: TopicsImage, batch: Batch) -> None:
        before = group.state
        subscriptions = {
            member_id: MemberSubscription(member_id, member.instance_id, member.rack_id,
                                          resolve_subscription(member, topics))
            for member_id, member in group.members.items()
        }
        counts = {topic: count for topic, count in group.subscription_counts.items()}
        target = assign(group.preferred_assignor(self.config.assignors[0]), subscriptions, counts, group.target)
        for member_id in sorted(target):
            partitions = {topic: frozenset(indexes) for topic, indexes in target[member_id].items() if indexes}
            if dict(group.target.get(member_id, {})) != partitions or member_id not in group.target:
                batch.write(rec.target_assignment_member(group.group_id, member_id,
                                                         rec.TargetAssignmentMemberValue(partitions)))
        batch.write(rec.target_assignment_metadata(group.group_id,
                                                   rec.TargetAssignmentMetadataValue(group.group_epoch)))
        check_transition(before, GroupEvent.TARGET_COMPUTED, group.state)

    def _record_assignment(self, group: ConsumerGroup, before: Member, after: Member, batch: Batch) -> None:
        if (before.member_epoch, before.state, before.assigned, before.pending_revocation) == (
                after.member_epoch, after.state, after.assigned, after.pending_revocation):
            return
        state_before = group.state
        batch.write(rec.current_member_assignment(group.group_id, after.member_id, _assignment_value(after)))
        check_transition(state_before, GroupEvent.MEMBER_RECONCILED, group.state)
        owned_before, owned_after = as_set(before.assigned), as_set(after.assigned)
        revoking_before, revoking_after = as_set(before.pending_revocation), as_set(after.pending_revocation)
        gained = frozenset(owned_after - owned_before - revoking_before)
        released = frozenset((owned_before | revoking_before) - owned_after - revoking_after)
        revoking = frozenset(revoking_after - revoking_before)
        if gained or released or revoking:
            batch.events.append(AssignmentChanged(group.group_id, after.member_id, after.member_epoch, gained,
                                                  revoking, released))

    def _note_stable(self, group: ConsumerGroup, state_before: GroupState, batch: Batch) -> None:
        if group.state is GroupState.STABLE and state_before is not GroupState.STABLE:
            batch.events.append(GroupStable(group.group_id, group.group_epoch))

    # -- leaving, timing out ------------------------------------------------------------------

    def _leave(self, request: HeartbeatRequest, now_ms: int, wall_ms: int) -> Result[HeartbeatResponse]:
        group = self._shard.groups.get(request.group_id)
        member = group.members.get(request.member_id) if group is not None else None
        response = HeartbeatResponse(ErrorCode.NONE, "", request.member_id, request.member_epoch,
                                     self.config.heartbeat_interval_ms)
        if member is None:
            return Result(response)  # already gone: leaving twice is no error
        batch = Batch(self._shard)
        if request.member_epoch == LEAVE_STATIC_EPOCH:
            # Its partitions wait for it under its instance id until its session times out.
            away = member.with_epoch(LEAVE_STATIC_EPOCH)
            batch.write(rec.current_member_assignment(group.group_id, member.member_id, _assignment_value(away)))
            batch.events.append(MemberRemoved(group.group_id, member.member_id,
                                              f"static member {member.instance_id} left for now"))
            self._session_deadlines[(group.group_id, member.member_id)] = now_ms + self.config.session_timeout_ms
        else:
            self._remove_member(group, member.member_id, "it left the group", batch, wall_ms)
        return batch.result(response)

    def _remove_member(self, group: ConsumerGroup, member_id: str, reason: str, batch: Batch, wall_ms: int) -> None:
        state_before = group.state
        self._remove_records(group, member_id, batch)
        self._forget_timers(group.group_id, member_id)
        batch.events.append(MemberRemoved(group.group_id, member_id, reason))
        if not group.members:
            check_transition(state_before, GroupEvent.LAST_MEMBER_LEFT, group.state)
            group.empty_since_ms = wall_ms
        if group.subscription_counts and not group.members:
            batch.write(rec.group_subscriptions(group.group_id, rec.GroupSubscriptionsValue({})))
        self._bump_epoch(group, f"member {member_id} was removed: {reason}", batch, state_before)

    def _remove_records(self, group: ConsumerGroup, member_id: str, batch: Batch) -> None:
        batch.write(rec.current_member_assignment(group.group_id, member_id, None))
        batch.write(rec.target_assignment_member(group.group_id, member_id, None))
        batch.write(rec.member_metadata(group.group_id, member_id, None))

    def _arm_timers(self, group_id: str, member: Member, now_ms: int) -> None:
        key = (group_id, member.member_id)
        self._session_deadlines[key] = now_ms + self.config.session_timeout_ms
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            self._rebalance_deadlines.setdefault(key, now_ms + member.rebalance_timeout_ms)
        else:
            self._rebalance_deadlines.pop(key, None)

    def _forget_timers(self, group_id: str, member_id: str) -> None:
        self._session_deadlines.pop((group_id, member_id), None)
        self._rebalance_deadlines.pop((group_id, member_id), None)


def _epoch_is_current(member: Member, request: HeartbeatRequest) -> bool:
    """Kafka's fencing: the member's epoch, or its previous one when the answer that moved it was lost
    (then it may own only partitions it still has)."""
    if request.member_epoch == member.member_epoch:
        return True
    if member.left_for_now:
        return False
    if request.member_epoch != member.previous_member_epoch:
        return False
    owned = as_set(request.owned) if request.owned is not None else set()
    return owned <= as_set(member.assigned)


def _subscription(member: Member) -> tuple:
    return member.subscribed_topic_names, member.subscribed_topic_regex


def _metadata_value(member: Member) -> rec.MemberMetadataValue:
    return rec.MemberMetadataValue(member.instance_id, member.rack_id, member.client_id, member.client_host,
                                   member.subscribed_topic_names, member.subscribed_topic_regex,
                                   member.rebalance_timeout_ms, member.server_assignor)


def _assignment_value(member: Member) -> rec.CurrentMemberAssignmentValue:
    return rec.CurrentMemberAssignmentValue(member.member_epoch, member.previous_member_epoch, int(member.state),
                                            member.assigned, member.pending_revocation)
