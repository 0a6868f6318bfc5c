'use strict';
// A consumer's side of its group (KIP-848), without I/O: what the next heartbeat carries, and what
// each answer means for the member's partitions. It mirrors replog/client/membership.py.
//
// The coordinator computes every assignment; the member follows it. An answer's assignment turns
// into changes the consumer carries out, in this order:
//   revoke(ps)  give ps up: stop fetching them, commit their positions, call onRevoked, then
//               `revoked(ps)` — the next heartbeat, at once, leaves them out, and only then may the
//               coordinator hand them to another member. New partitions wait until then.
//   assign(ps)  start on ps from their committed offsets (else autoOffsetReset); call onAssigned.
//   lose(ps)    the member was fenced: ps may be someone else's already; drop them without a commit.
//
// States: unsubscribed, joining (epoch 0, the whole subscription), member (heartbeats every
// interval), leaving (epoch -1, or -2 for a static member), failed (refused for good).

const JOIN_EPOCH = 0;
const LEAVE_EPOCH = -1;
const LEAVE_STATIC_EPOCH = -2;

// Answers after which the same heartbeat is sent again after a backoff (the coordinator moved, is
// loading, or did not answer); every other error but the two fencing ones ends the membership.
const RETRIABLE = new Set([
  'NOT_COORDINATOR', 'COORDINATOR_NOT_AVAILABLE', 'COORDINATOR_LOAD_IN_PROGRESS', 'REQUEST_TIMED_OUT',
  'NETWORK_EXCEPTION',
]);

/** "topic\0partition": partitions as Set members. */
function partitionKey(topic, partition) {
  return `${topic}\u0000${partition}`;
}

function splitKey(key) {
  const at = key.lastIndexOf('\u0000');
  return { topic: key.slice(0, at), partition: Number(key.slice(at + 1)) };
}

function minus(a, b) {
  return new Set([...a].filter((x) => !b.has(x)));
}

class Membership {
  constructor({ instanceId = null, rebalanceTimeoutMs, serverAssignor = null, newMemberId }) {
    this.instanceId = instanceId;
    this.rebalanceTimeoutMs = rebalanceTimeoutMs;
    this.serverAssignor = serverAssignor;
    this.newMemberId = newMemberId;
    this.memberId = newMemberId();
    this.memberEpoch = JOIN_EPOCH;
    this.state = 'unsubscribed';
    this.topics = null; // the subscription: topic names,
    this.regex = null; // or a regex the coordinator matches against whole topic names
    this.owned = new Set(); // every partition held, those being revoked included
    this.revoking = new Set(); // handed over to be given up, not given up yet
    this.target = new Set(); // the coordinator's last word
    this.heartbeatIntervalMs = 0;
    this.error = null; // {error, message} once failed
    this.nextHeartbeatMs = 0;
    this.asap = false;
    this.inFlight = null;
    this.sendSubscription = false;
    this.rejoinWhenPolled = false; // left because poll() was not called in time
  }

  /** Who commits offsets: the member's id and epoch once it has joined, else '' and -1 (no member check). */
  get committer() {
    const joined = this.state === 'member' || this.state === 'leaving';
    return { memberId: joined ? this.memberId : '', memberEpoch: joined ? this.memberEpoch : -1 };
  }

  get inGroup() {
    return this.state === 'joining' || this.state === 'member' || this.state === 'leaving';
  }

  /** Subscribe to topic names (an array) or to the topics a regex matches ({regex}). */
  subscribe(subscription, nowMs) {
    this.topics = Array.isArray(subscription) ? [...new Set(subscription)].sort() : null;
    this.regex = Array.isArray(subscription) ? null : subscription.regex;
    this.sendSubscription = true;
    if (this.state === 'unsubscribed' || this.state === 'leaving' || this.state === 'failed') {
      this.state = 'joining';
      this.memberEpoch = JOIN_EPOCH;
      this.error = null;
    }
    this.heartbeatNow(nowMs);
  }

  /** Leave with the next heartbeat, at once; false when there is nothing to leave. */
  leave(nowMs) {
    this.rejoinWhenPolled = false;
    if (this.state !== 'joining' && this.state !== 'member') {
      this._forget();
      this.state = 'unsubscribed';
      return false;
    }
    this.state = 'leaving';
    this.heartbeatNow(nowMs);
    return true;
  }

  /**
   * poll() was not called within max.poll.interval.ms (rebalanceTimeoutMs): the application is stuck,
   * so the member leaves and its partitions go to the others (Kafka's rule); the next poll() joins again.
   */
  pollTimerExpired(nowMs) {
    if (this.state !== 'member') return [];
    const lost = this._forget();
    this.state = 'leaving';
    this.rejoinWhenPolled = true;
    this.heartbeatNow(nowMs);
    return lost.size ? [{ type: 'lose', keys: lost }] : [];
  }

  /** poll() was called: a member that left because it was not, joins again (true). */
  polled(nowMs) {
    if (!this.rejoinWhenPolled || (this.topics === null && this.regex === null)) return false;
    this.rejoinWhenPolled = false;
    this.subscribe(this.topics ?? { regex: this.regex }, nowMs);
    return true;
  }

  /** These partitions were given up: heartbeat without them at once; new ones may come then. */
  revoked(keys, nowMs) {
    const done = [...keys].filter((k) => this.revoking.has(k));
    if (done.length === 0) return [];
    for (const key of done) {
      this.revoking.delete(key);
      this.owned.delete(key);
    }
    this.heartbeatNow(nowMs);
    return this._reconcile();
  }

  /** When the next heartbeat should leave; null while one is in flight or none is needed. */
  heartbeatDueMs() {
    if (this.inFlight !== null || !this.inGroup) return null;
    return this.nextHeartbeatMs;
  }

  nextHeartbeat() {
    let params;
    if (this.state === 'leaving') {
      params = { memberEpoch: this.instanceId !== null ? LEAVE_STATIC_EPOCH : LEAVE_EPOCH };
    } else if (this.state === 'joining') {
      params = { memberEpoch: JOIN_EPOCH, rebalanceTimeoutMs: this.rebalanceTimeoutMs, topics: this.topics,
        regex: this.regex, serverAssignor: this.serverAssignor };
    } else {
      const send = this.sendSubscription;
      params = { memberEpoch: this.memberEpoch, topics: send ? this.topics : null, regex: send ? this.regex : null };
    }
    params = { memberId: this.memberId, instanceId: this.instanceId, owned: [...this.owned], ...params };
    this.inFlight = params;
    this.asap = false;
    return params;
  }

  /** An answer ({error, message, memberEpoch, heartbeatIntervalMs, assignment: keys or null}). */
  onAnswer(answer, nowMs, retryBackoffMs) {
    const sent = this.inFlight;
    this.inFlight = null;
    if (sent === null || sent.memberId !== this.memberId) return []; // for a member id given up meanwhile
    if (sent.memberEpoch < 0) {
      if (this.state === 'leaving') {
        this._forget();
        this.state = 'unsubscribed';
      }
      return [];
    }
    if (this.state === 'leaving') return [];
    if (answer.error === 'NONE') return this._accepted(sent, answer, nowMs);
    if (RETRIABLE.has(answer.error)) {
      this.onFailure(nowMs, retryBackoffMs);
      return [];
    }
    if (answer.error === 'FENCED_MEMBER_EPOCH' || answer.error === 'UNKNOWN_MEMBER_ID') {
      if (answer.error === 'UNKNOWN_MEMBER_ID') this.memberId = this.newMemberId();
      const lost = this._forget();
      this.state = 'joining';
      this.memberEpoch = JOIN_EPOCH;
      this.sendSubscription = true;
      this.heartbeatNow(nowMs);
      return lost.size ? [{ type: 'lose', keys: lost }] : [];
    }
    const lost = this._forget();
    this.state = 'failed';
    this.error = { error: answer.error, message: answer.message };
    return lost.size ? [{ type: 'lose', keys: lost }] : [];
  }

  /** No answer: send the same again after a backoff, with the whole subscription in case the
   * coordinator that answers next never saw it. */
  onFailure(nowMs, retryBackoffMs) {
    this.inFlight = null;
    if (this.state === 'member') this.sendSubscription = true;
    this.nextHeartbeatMs = nowMs + retryBackoffMs;
  }

  heartbeatNow(nowMs) {
    this.nextHeartbeatMs = Math.min(this.nextHeartbeatMs, nowMs);
    this.asap = true;
  }

  _accepted(sent, answer, nowMs) {
    if (sent.topics || sent.regex) this.sendSubscription = false;
    this.state = 'member';
    this.memberEpoch = answer.memberEpoch;
    this.heartbeatIntervalMs = answer.heartbeatIntervalMs;
    this.nextHeartbeatMs = this.asap ? nowMs : nowMs + answer.heartbeatIntervalMs;
    if (answer.assignment !== null) this.target = new Set(answer.assignment);
    return this._reconcile();
  }

  /** Revoke what the target left out; once nothing is being revoked, take what it added. */
  _reconcile() {
    const revoke = minus(minus(this.owned, this.target), this.revoking);
    if (revoke.size) {
      for (const key of revoke) this.revoking.add(key);
      return [{ type: 'revoke', keys: revoke }];
    }
    if (this.revoking.size) return [];
    const add = minus(this.target, this.owned);
    if (!add.size) return [];
    for (const key of add) this.owned.add(key);
    return [{ type: 'assign', keys: add }];
  }

  _forget() {
    const lost = this.owned;
    this.owned = new Set();
    this.revoking = new Set();
    this.target = new Set();
    return lost;
  }
}

module.exports = { Membership, partitionKey, splitKey };
