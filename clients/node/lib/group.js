'use strict';
// The consumer's group on the wire (KIP-848, docs/API.md "A consumer group member"): find the
// coordinator, heartbeat on a timer while the application polls, carry out the answers' changes
// through the consumer, and commit offsets with the member's id and epoch. It mirrors
// replog/client/group_member.py.

const { randomUUID } = require('node:crypto');
const { sleep } = require('./cluster');
const { COORDINATOR_MOVED, Coordinators } = require('./coordinator');
const { ReplogError, errorName } = require('./errors');
const { Membership, partitionKey, splitKey } = require('./membership');

function byTopic(keys) {
  const topics = new Map();
  for (const key of keys) {
    const { topic, partition } = splitKey(key);
    if (!topics.has(topic)) topics.set(topic, []);
    topics.get(topic).push(partition);
  }
  return [...topics].sort().map(([topic, partitions]) => ({ topic, partitions: partitions.sort((a, b) => a - b) }));
}

/** OffsetCommit's (and TxnOffsetCommit's) topics for offsets: Map key -> {offset, leaderEpoch, metadata}. */
function offsetCommitTopics(offsets) {
  return byTopic(offsets.keys()).map(({ topic, partitions }) => ({
    topic,
    partitions: partitions.map((partition) => {
      const o = offsets.get(partitionKey(topic, partition));
      return { partition, committed_offset: o.offset, committed_leader_epoch: o.leaderEpoch ?? -1,
        committed_metadata: o.metadata ?? '' };
    }),
  }));
}

function keysOf(topicPartitions) {
  return topicPartitions.flatMap(({ topic, partitions }) => partitions.map((p) => partitionKey(topic, p)));
}

class GroupMember {
  /**
   * @param {object} consumer the Consumer: applyChanges(changes) carries changes out
   */
  constructor(consumer, { groupId, instanceId, rebalanceTimeoutMs, serverAssignor, requestTimeoutMs, retryBackoffMs,
    clientId, isolationLevel, log }) {
    this.consumer = consumer;
    this.cluster = consumer.cluster;
    this.groupId = groupId;
    this.clientId = clientId;
    this.requestTimeoutMs = requestTimeoutMs;
    this.retryBackoffMs = retryBackoffMs;
    // A read_committed consumer waits for offsets an open transaction commits (Kafka's requireStable).
    this.requireStable = isolationLevel === 'read_committed';
    this.log = log;
    this.membership = new Membership({ instanceId, rebalanceTimeoutMs, serverAssignor, newMemberId: randomUUID });
    this.coordinators = new Coordinators(this.cluster, 'group', requestTimeoutMs);
    this.maxPollIntervalMs = rebalanceTimeoutMs; // Kafka sends max.poll.interval.ms as the rebalance timeout
    this.polledAtMs = Date.now();
    this.timer = null;
    this.answerWaiters = [];
    this.stats = { heartbeats: 0, heartbeatFailures: 0, rebalances: 0, commits: 0 };
  }

  subscribe(topics) {
    this.polledAtMs = Date.now();
    this.membership.subscribe(topics, Date.now());
    this._schedule();
  }

  /** Partitions given up (committed, called back): tell the coordinator at once. */
  revoked(keys) {
    this.consumer.applyChanges(this.membership.revoked(keys, Date.now()));
    this._schedule();
  }

  _schedule() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const dueMs = this.membership.heartbeatDueMs();
    if (dueMs === null) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this._heartbeat();
    }, Math.max(0, dueMs - Date.now()));
  }

  /** poll() was called: the application is alive; a member that left for want of it joins again. */
  polled() {
    this.polledAtMs = Date.now();
    if (this.membership.polled(this.polledAtMs)) this._schedule();
  }

  async _heartbeat() {
    const { membership } = this;
    const now = Date.now();
    if (membership.state === 'member' && now - this.polledAtMs > this.maxPollIntervalMs) {
      this.log.warn(`group ${this.groupId}: poll() was not called for ${now - this.polledAtMs} ms ` +
        `(rebalanceTimeoutMs, Kafka's max.poll.interval.ms): member ${membership.memberId} leaves the group, and the ` +
        'next poll() joins again');
      this.consumer.applyChanges(membership.pollTimerExpired(now));
    }
    if (membership.heartbeatDueMs() === null) return;
    const params = membership.nextHeartbeat();
    let changes = [];
    try {
      const response = await this._call('ConsumerGroupHeartbeat', this._heartbeatRequest(params),
        (r) => errorName(r.error_code));
      this.stats.heartbeats++;
      const answer = {
        error: errorName(response.error_code),
        message: response.error_message,
        memberEpoch: response.member_epoch,
        heartbeatIntervalMs: response.heartbeat_interval_ms,
        assignment: response.assignment ? keysOf(response.assignment.topics) : null,
      };
      if (answer.error !== 'NONE') {
        this.log.info(`group ${this.groupId}: heartbeat of member ${params.memberId} at epoch ${params.memberEpoch} ` +
          `answered ${answer.error}: ${answer.message}`);
      }
      changes = membership.onAnswer(answer, Date.now(), this.retryBackoffMs);
    } catch (error) {
      this.stats.heartbeatFailures++;
      this.log.warn(`group ${this.groupId}: heartbeat failed (${error.message}); retrying`);
      membership.onFailure(Date.now(), this.retryBackoffMs);
    }
    if (changes.length) this.stats.rebalances++;
    this.consumer.applyChanges(changes);
    for (const resolve of this.answerWaiters.splice(0)) resolve();
    this._schedule();
  }

  _heartbeatRequest(params) {
    const request = {
      group_id: this.groupId,
      member_id: params.memberId,
      member_epoch: params.memberEpoch,
      rebalance_timeout_ms: params.rebalanceTimeoutMs ?? 0,
      owned_partitions: { topics: byTopic(params.owned) },
      client_id: this.clientId,
    };
    if (params.instanceId !== null) request.instance_id = params.instanceId;
    if (params.topics || params.regex) {
      // Both, so that names replace a regex and the other way round (an empty regex means none).
      request.subscribed_topic_names = { names: params.topics ?? [] };
      request.subscribed_topic_regex = params.regex ?? '';
    }
    if (params.serverAssignor) request.server_assignor = params.serverAssignor;
    return request;
  }

  /** Heartbeat now and wait for its answer. */
  nextAnswer(timeoutMs) {
    this.membership.heartbeatNow(Date.now());
    this._schedule();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new ReplogError(`group ${this.groupId}: no heartbeat answer in time`,
        'REQUEST_TIMED_OUT')), timeoutMs);
      this.answerWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** A call to the group's coordinator, found again when it moved; `errorOf` reads a whole-answer error. */
  _call(method, request, errorOf = () => 'NONE') {
    return this.coordinators.call(this.groupId, method, request, errorOf);
  }

  /** The committed offsets of these partitions: Map key -> {offset, leaderEpoch, metadata} or null. */
  async committed(keys, timeoutMs = this.requestTimeoutMs) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const response = await this._call('OffsetFetch', { group_id: this.groupId, topics: byTopic(keys),
          require_stable: this.requireStable },
          (r) => errorName(r.error_code));
        const error = errorName(response.error_code);
        if (error !== 'NONE') throw new ReplogError(`OffsetFetch answered ${error}: ${response.error_message}`, error);
        const found = new Map();
        for (const topic of response.topics) {
          for (const p of topic.partitions) {
            const code = errorName(p.error_code);
            if (code !== 'NONE') throw new ReplogError(`the committed offset of ${topic.topic}-${p.partition}: ${code}`, code);
            found.set(partitionKey(topic.topic, p.partition), p.committed_offset < 0 ? null
              : { offset: p.committed_offset, leaderEpoch: p.committed_leader_epoch, metadata: p.committed_metadata });
          }
        }
        return found;
      } catch (error) {
        if (!error.retriable || Date.now() + this.retryBackoffMs > deadline) throw error;
        await sleep(this.retryBackoffMs);
      }
    }
  }

  /**
   * Commit offsets (Map key -> {offset, leaderEpoch, metadata}) as the member; a commit refused for
   * a stale member epoch is sent again after the next heartbeat answer.
   */
  async commit(offsets, timeoutMs = this.requestTimeoutMs) {
    const deadline = Date.now() + timeoutMs;
    let pending = new Map(offsets);
    while (pending.size) {
      const { membership } = this;
      if (membership.state === 'failed') {
        throw new ReplogError(`the consumer is no longer in group ${this.groupId} (${membership.error.error}: ` +
          `${membership.error.message}); nothing can be committed`, membership.error.error);
      }
      if (membership.state === 'joining') {
        await this.nextAnswer(Math.max(deadline - Date.now(), 1));
        continue;
      }
      const { memberId, memberEpoch } = membership.committer;
      const request = {
        group_id: this.groupId,
        member_id: memberId,
        member_epoch: memberEpoch,
        topics: offsetCommitTopics(pending),
      };
      let response;
      try {
        response = await this._call('OffsetCommit', request, (r) => errorName(r.topics[0]?.partitions[0]?.error_code));
      } catch (error) {
        if (!error.retriable || Date.now() + this.retryBackoffMs > deadline) throw error;
        await sleep(this.retryBackoffMs);
        continue;
      }
      const stale = new Map();
      for (const topic of response.topics) {
        for (const p of topic.partitions) {
          const key = partitionKey(topic.topic, p.partition);
          const code = errorName(p.error_code);
          if (code === 'NONE') continue;
          if (code === 'STALE_MEMBER_EPOCH' || (COORDINATOR_MOVED.has(code))) {
            stale.set(key, pending.get(key));
            continue;
          }
          throw new ReplogError(`the commit of ${topic.topic}-${p.partition} to group ${this.groupId} failed: ` +
            `${code}: ${p.error_message}`, code);
        }
      }
      this.stats.commits++;
      pending = stale;
      if (pending.size) {
        if (Date.now() > deadline) {
          throw new ReplogError(`group ${this.groupId}: the commit did not go through in time`, 'REQUEST_TIMED_OUT');
        }
        await this.nextAnswer(Math.max(deadline - Date.now(), 1)).catch(() => sleep(this.retryBackoffMs));
      }
    }
  }

  /** Leave the group (epoch -1, or -2 for a static member), waiting up to timeoutMs for the answer. */
  async leave(timeoutMs) {
    if (this.membership.leave(Date.now())) {
      this._schedule();
      const deadline = Date.now() + timeoutMs;
      while (this.membership.inGroup && Date.now() < deadline) {
        await this.nextAnswer(Math.max(deadline - Date.now(), 1)).catch(() => {});
      }
      if (this.membership.inGroup) {
        this.log.warn(`group ${this.groupId}: member ${this.membership.memberId} could not leave in time; the ` +
          'coordinator removes it once its session times out');
      }
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }
}

module.exports = { GroupMember, byTopic, offsetCommitTopics };
