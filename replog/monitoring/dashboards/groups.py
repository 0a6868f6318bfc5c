"""The consumer groups dashboard: lag per group and topic (and per partition), members, state,
rebalances, and offset commits."""

from __future__ import annotations

from replog.monitoring.dashboards.board import RATE, Board, q, quantiles, rate

GROUP = 'group=~"$group"'
TOPIC = 'topic=~"$topic"'
STATES = {1: ("empty", "blue"), 2: ("assigning", "orange"), 3: ("reconciling", "yellow"), 4: ("stable", "green")}


def build() -> Board:
    board = Board("replog-consumer-groups", "replog / Consumer groups",
                  "Served by the broker that coordinates each group. Lag is a partition's high watermark "
                  "minus the group's committed offset.")
    board.add_variable("group", "Group", "replog_consumergroup_members")
    board.add_variable("topic", "Topic", "replog_consumergroup_lag", GROUP)
    board.row("Lag")
    board.timeseries("Lag per group and topic", "Records the group has not committed yet, summed over partitions.",
                     [(f"sum by (group, topic) ({q('replog_consumergroup_lag', GROUP, TOPIC)})",
                       "{{group}} {{topic}}")], width=12)
    board.timeseries("Lag per partition", "The same per partition: a partition that stays behind points at its member.",
                     [(f"max by (group, topic, partition) ({q('replog_consumergroup_lag', GROUP, TOPIC)})",
                       "{{group}} {{topic}}-{{partition}}")], width=12)
    board.row("Members")
    board.timeseries("Members", "Members of each group.",
                     [(f"max by (group) ({q('replog_consumergroup_members', GROUP)})", "{{group}}")])
    board.states("State", "Each group's state (GROUPS.md).",
                 f"max by (group) ({q('replog_consumergroup_state', GROUP)})", "{{group}}", STATES, width=16)
    board.timeseries("Rebalances", "New group epochs per interval: a member joined or left, or subscriptions changed.",
                     [(f"sum by (group) (increase({q('replog_group_rebalances_total', GROUP)}[{RATE}]))", "{{group}}")],
                     width=12)
    board.timeseries("Rebalance duration", "From a new group epoch until every member owns its target assignment.",
                     quantiles("replog_group_rebalance_seconds", ""), unit="s", width=12)
    board.row("Commits")
    board.timeseries("Commits", "OffsetCommit requests answered per second, by coordinating broker.",
                     [(f"sum by (instance) ({rate('replog_group_commit_seconds_count')})", "{{instance}}")],
                     unit="reqps", width=12)
    board.timeseries("Commit latency", "From an OffsetCommit's arrival until it is replicated and answered.",
                     quantiles("replog_group_commit_seconds", ""), unit="s", width=12)
    return board
