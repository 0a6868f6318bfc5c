'use strict';
// The consumer: partitions assigned by hand (assign, seek) or by a consumer group's coordinator
// (subscribe); poll() hands back the records of the Fetch answers that came since the last poll,
// from each partition's position on, reading below the high watermark, and sends the next Fetch to
// every leader before it returns them, so that the next records travel while the application works
// on these (Kafka's consumer does the same). A leader has one Fetch on its way at a time, asking for
// each of its partitions whose records were all handed out. Positions start from the group's
// committed offsets, else from autoOffsetReset (ListOffsets at the leader).
// With isolationLevel 'read_committed' it reads below the last stable offset and drops the
// records of aborted transactions, using the aborted transactions each Fetch answer lists.

const { Cluster, unary, sleep } = require('./cluster');
const { RETRIABLE, STALE_LEADER, ReplogError, errorName } = require('./errors');
const { withDefaults } = require('./options');
const { GroupMember } = require('./group');
const { partitionKey, splitKey } = require('./membership');
const { decodeBatches } = require('./records');
const { makeLogger } = require('./logger');
const { AbortedTransactions } = require('./transactions');

const DEFAULTS = Object.freeze({
  groupId: null,
  instanceId: null,
  autoOffsetReset: 'latest',
  autoCommit: true,
  autoCommitIntervalMs: 5000,
  fetchMaxWaitMs: 500,
  fetchMaxBytes: 52428800,
  maxPartitionFetchBytes: 1048576,
  requestTimeoutMs: 30000,
  retryBackoffMs: 100,
  rebalanceTimeoutMs: 300000,
  serverAssignor: null,
  closeTimeoutMs: 30000,
  isolationLevel: 'read_uncommitted',
  clientId: 'replog-node-consumer',
});
const RESET_TIMESTAMPS = { earliest: -2, latest: -1 };
const ISOLATION_LEVELS = {
  read_uncommitted: 'ISOLATION_LEVEL_READ_UNCOMMITTED',
  read_committed: 'ISOLATION_LEVEL_READ_COMMITTED',
};

class Partition {
  constructor(topic, partition) {
    this.topic = topic;
    this.partition = partition;
    this.position = null; // the next offset to hand out; null until known
    this.leaderEpoch = -1; // the epoch of the last record handed out (committed with the offset)
    this.revoking = false; // being given up: fetched no more
    this.lookingUp = false;
    this.fetching = false; // in a Fetch on its way
    this.buffered = false; // a Fetch answer for it waits to be handed out
    this.paused = false; // pause(): neither fetched nor handed out until resume()
  }
}

class Consumer {
  /**
   * @param {string|string[]} bootstrap metadata service address(es), "host:port"
   * @param {object} [options] groupId, instanceId, autoOffsetReset ('earliest', 'latest', 'none'),
   *   autoCommit, autoCommitIntervalMs, fetchMaxWaitMs, fetchMaxBytes, maxPartitionFetchBytes,
   *   requestTimeoutMs, retryBackoffMs, rebalanceTimeoutMs, serverAssignor, closeTimeoutMs, isolationLevel
   *   ('read_uncommitted', 'read_committed'), clientId,
   *   logger, onAssigned, onRevoked, onLost (async callbacks taking [{topic, partition}]), security
   *   ({cafile, certfile, keyfile, serverName, token, tokenFile}; else the REPLOG_SSL_* environment)
   */
  constructor(bootstrap, options = {}) {
    this.config = withDefaults('Consumer', options, DEFAULTS, ['onAssigned', 'onRevoked', 'onLost']);
    if (!(this.config.autoOffsetReset in RESET_TIMESTAMPS) && this.config.autoOffsetReset !== 'none') {
      throw new ReplogError(`autoOffsetReset must be earliest, latest or none, not ${this.config.autoOffsetReset}`,
        'INVALID_CONFIG');
    }
    this.isolationLevel = ISOLATION_LEVELS[this.config.isolationLevel];
    if (this.isolationLevel === undefined) {
      throw new ReplogError(`isolationLevel must be read_uncommitted or read_committed, not ${this.config.isolationLevel}`,
        'INVALID_CONFIG');
    }
    this.log = makeLogger(this.config.logger, 'consumer');
    this.cluster = new Cluster(bootstrap, { clientId: this.config.clientId, security: this.config.security });
    this.partitions = new Map(); // key -> Partition
    this.group = null;
    this.polling = false;
    this.closed = false;
    this.failure = null;
    this.autoCommitTimer = null;
    this.stats = { records: 0, fetches: 0, fetchErrors: 0, metadataRefreshes: 0, abortedRecordsDropped: 0 };
    this.completed = []; // Fetch answers not handed out yet, oldest first: {part, position, result}
    this.fetchingFrom = new Set(); // leaders with a Fetch on its way
    this.answered = null; // wakes a poll() waiting for the next Fetch answer
  }

  /** Read these partitions ([{topic, partition}]), outside any group. */
  assign(partitions) {
    if (this.group) throw new ReplogError('a consumer in a group cannot also assign partitions', 'INVALID_REQUEST');
    this.partitions = new Map(partitions.map(({ topic, partition }) =>
      [partitionKey(topic, partition), this.partitions.get(partitionKey(topic, partition)) ?? new Partition(topic, partition)]));
  }

  /**
   * The group membership a transactional producer's sendOffsetsToTransaction() takes, so that the
   * group's coordinator refuses offsets from a member that lost its partitions: {groupId, memberId, memberEpoch}.
   */
  groupMetadata() {
    if (!this.config.groupId) throw new ReplogError('groupMetadata() needs a groupId', 'INVALID_GROUP_ID');
    const { memberId, memberEpoch } = this.group?.membership.committer ?? { memberId: '', memberEpoch: -1 };
    return { groupId: this.config.groupId, memberId, memberEpoch };
  }

  /** The partitions read now. */
  assignment() {
    return [...this.partitions.values()].filter((p) => !p.revoking).map(({ topic, partition }) => ({ topic, partition }));
  }

  /** Read a partition from `offset` on with the next poll. */
  seek({ topic, partition }, offset) {
    const part = this._assigned({ topic, partition });
    part.position = offset;
    part.leaderEpoch = -1;
  }

  /**
   * Fetch and hand out nothing of these partitions ([{topic, partition}]) until resume(); what was
   * fetched already waits, and positions and the group's assignment stay (Kafka's pause).
   */
  pause(partitions) {
    for (const part of partitions.map((tp) => this._assigned(tp))) part.paused = true;
  }

  resume(partitions) {
    for (const part of partitions.map((tp) => this._assigned(tp))) part.paused = false;
    this.answered?.(); // a poll() waiting hands out what was held back
  }

  /** The paused partitions, [{topic, partition}]. */
  paused() {
    return [...this.partitions.values()].filter((p) => p.paused).map(({ topic, partition }) => ({ topic, partition }));
  }

  _assigned({ topic, partition }) {
    const part = this.partitions.get(partitionKey(topic, partition));
    if (!part) throw new ReplogError(`${topic}-${partition} is not assigned to this consumer`, 'INVALID_REQUEST');
    return part;
  }

  /**
   * Join the group (groupId) with these topics, or with every topic a RegExp matches whole (the
   * coordinator matches it, also against topics created later; Kafka's subscribe(Pattern)); the
   * coordinator assigns the partitions.
   */
  subscribe(topics) {
    if (!this.config.groupId) throw new ReplogError('subscribe() needs a groupId', 'INVALID_GROUP_ID');
    if (topics instanceof RegExp) {
      if (topics.flags !== '') {
        throw new ReplogError(`the subscription pattern /${topics.source}/${topics.flags} has flags, which cannot be ` +
          'sent to the coordinator: write them inline, e.g. (?i)', 'INVALID_SUBSCRIPTION_REGEX');
      }
      topics = { regex: topics.source };
    } else if (!Array.isArray(topics) || topics.length === 0 || topics.some((t) => typeof t !== 'string' || !t)) {
      throw new ReplogError('subscribe() takes a list of topic names or a RegExp', 'INVALID_TOPIC_EXCEPTION');
    }
    if (!this.group) {
      this.group = new GroupMember(this, { ...this.config, log: this.log });
      if (this.config.autoCommit) this._autoCommitSoon();
    }
    this.group.subscribe(topics);
  }

  /** Carry out the group's changes (from the heartbeat loop). */
  applyChanges(changes) {
    for (const change of changes) {
      const tps = [...change.keys].map(splitKey);
      const names = tps.map((tp) => `${tp.topic}-${tp.partition}`).join(', ');
      if (change.type === 'assign') {
        for (const { topic, partition } of tps) this.partitions.set(partitionKey(topic, partition), new Partition(topic, partition));
        this.log.info(`group ${this.config.groupId}: gets ${names}`);
        this._callback('onAssigned', tps);
      } else if (change.type === 'revoke') {
        this.log.info(`group ${this.config.groupId}: gives up ${names}`);
        this._revoke(change.keys, tps);
      } else {
        for (const key of change.keys) this.partitions.delete(key);
        this.log.warn(`group ${this.config.groupId}: lost ${names}`);
        this._callback('onLost', tps);
      }
    }
  }

  async _revoke(keys, tps) {
    const parts = [...keys].map((k) => this.partitions.get(k)).filter(Boolean);
    for (const part of parts) part.revoking = true;
    if (this.config.autoCommit) await this._commitQuietly(parts);
    await this._callback('onRevoked', tps);
    for (const key of keys) this.partitions.delete(key);
    this.group.revoked(keys);
  }

  async _callback(name, tps) {
    const callback = this.config[name];
    if (!callback) return;
    try {
      await callback(tps);
    } catch (error) {
      this.log.error(`${name} threw: ${error.stack ?? error}`);
    }
  }

  /**
   * Records from the assigned partitions, waiting up to timeoutMs for some: [{topic, partition,
   * offset, timestamp, key, value, headers, leaderEpoch}].
   */
  async poll(timeoutMs = 0) {
    if (this.closed) throw new ReplogError('the consumer is closed', 'INVALID_REQUEST');
    if (this.polling) throw new ReplogError('poll() is already running: await it before calling it again', 'INVALID_REQUEST');
    this.polling = true;
    if (this.group) this.group.polled();
    try {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        this._checkGroup();
        await this._findPositions();
        const records = this._handOut();
        await this._sendFetches(); // before the records go to the application
        const leftMs = deadline - Date.now();
        if (records.length || leftMs <= 0) return records;
        // With no Fetch on its way (no position yet, no leader known), look again soon.
        if (!this.completed.some((c) => !c.part.paused)) {
          await this._nextAnswer(this.fetchingFrom.size ? leftMs : Math.min(leftMs, 50));
        }
      }
    } finally {
      this.polling = false;
    }
  }

  _checkGroup() {
    const failed = this.group?.membership.state === 'failed' ? this.group.membership.error : null;
    if (failed) {
      throw new ReplogError(`the consumer was refused by group ${this.config.groupId}: ${failed.error}: ${failed.message}`,
        failed.error);
    }
  }

  async _findPositions() {
    const missing = [...this.partitions.values()].filter((p) => p.position === null && !p.revoking && !p.lookingUp);
    if (missing.length === 0) return;
    for (const part of missing) part.lookingUp = true;
    try {
      let reset = missing;
      if (this.group) {
        const committed = await this.group.committed(missing.map((p) => partitionKey(p.topic, p.partition)));
        reset = [];
        for (const part of missing) {
          const found = committed.get(partitionKey(part.topic, part.partition));
          if (found) {
            part.position = found.offset;
            part.leaderEpoch = found.leaderEpoch;
          } else {
            reset.push(part);
          }
        }
      }
      if (reset.length) await this._reset(reset);
    } catch (error) {
      if (!error.retriable) throw error;
      this.log.warn(`positions not found yet (${error.message}); retrying`);
      await sleep(this.config.retryBackoffMs);
    } finally {
      for (const part of missing) part.lookingUp = false;
    }
  }

  /** Positions from autoOffsetReset: the earliest or latest offset, as the leader says. */
  async _reset(parts) {
    const policy = this.config.autoOffsetReset;
    if (policy === 'none') {
      const names = parts.map((p) => `${p.topic}-${p.partition}`).join(', ');
      throw new ReplogError(`no committed offset for ${names} and autoOffsetReset is none: seek() first`,
        'OFFSET_OUT_OF_RANGE');
    }
    const byLeader = await this._byLeader(parts);
    await Promise.all([...byLeader].map(async ([leaderId, group]) => {
      for (const { topic, code, result } of await this._listOffsets(leaderId, group, () => RESET_TIMESTAMPS[policy])) {
        const part = this.partitions.get(partitionKey(topic, result.partition));
        if (code !== 'NONE') {
          this.log.warn(`ListOffsets for ${topic}-${result.partition}: ${code}: ${result.error_message}`);
        } else if (part && part.position === null) {
          part.position = result.offset;
        }
      }
    }));
  }

  /**
   * One ListOffsets at a leader for `parts` ([{topic, partition}]), each at timestampOf(part) (-2 earliest,
   * -1 latest, or ms since the Unix epoch): [{topic, code, result}] per partition answered, with the
   * metadata refreshed where the leader moved.
   */
  async _listOffsets(leaderId, parts, timestampOf) {
    const response = await unary(this.cluster.broker(leaderId), 'ListOffsets', {
      replica_id: -1,
      isolation_level: this.isolationLevel,
      topics: topicsOf(parts, (p) => ({ partition: p.partition, current_leader_epoch: -1, timestamp_ms: timestampOf(p) })),
    }, this.config.requestTimeoutMs);
    const answers = [];
    for (const topic of response.topics) {
      for (const result of topic.partitions) {
        const code = errorName(result.error_code);
        if (STALE_LEADER.has(code)) this._refreshMetadata();
        answers.push({ topic: topic.topic, code, result });
      }
    }
    return answers;
  }

  /**
   * For each of [{topic, partition, timestamp}] (ms since the Unix epoch), the first offset whose record
   * is at or after that time, [{topic, partition, offset, timestamp, leaderEpoch}] in the same order, or
   * null where no record is that late (Kafka's offsetsForTimes). A leader that moved is asked again until
   * requestTimeoutMs has passed.
   */
  async offsetsForTimes(asked) {
    const keys = new Set();
    for (const { topic, partition, timestamp } of asked) {
      if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
        throw new ReplogError(`the time to look up for ${topic}-${partition} must be ms since the Unix epoch, ` +
          `not ${timestamp}`, 'INVALID_REQUEST');
      }
      if (keys.has(partitionKey(topic, partition))) {
        throw new ReplogError(`${topic}-${partition} is asked twice; give one time per partition`, 'INVALID_REQUEST');
      }
      keys.add(partitionKey(topic, partition));
    }
    const found = new Map();
    const deadline = Date.now() + this.config.requestTimeoutMs;
    let missing = asked;
    while (missing.length) {
      const byLeader = await this._byLeader(missing);
      await Promise.all([...byLeader].map(async ([leaderId, group]) => {
        for (const { topic, code, result } of await this._listOffsets(leaderId, group, (a) => a.timestamp)) {
          const { partition, offset, leader_epoch: leaderEpoch } = result;
          if (code === 'NONE') {
            found.set(partitionKey(topic, partition),
              offset >= 0 ? { topic, partition, offset, timestamp: result.timestamp_ms, leaderEpoch } : null);
          } else if (!RETRIABLE.has(code)) {
            throw new ReplogError(`ListOffsets for ${topic}-${partition}: ${code}: ${result.error_message}`, code);
          }
        }
      }));
      missing = asked.filter((a) => !found.has(partitionKey(a.topic, a.partition)));
      if (missing.length === 0) break;
      if (Date.now() >= deadline) {
        const names = missing.map((a) => `${a.topic}-${a.partition}`).join(', ');
        throw new ReplogError(`no leader answered for ${names} within ${this.config.requestTimeoutMs} ms`,
          'LEADER_NOT_AVAILABLE');
      }
      await sleep(this.config.retryBackoffMs);
    }
    return asked.map((a) => found.get(partitionKey(a.topic, a.partition)));
  }

  async _byLeader(parts) {
    const byLeader = new Map();
    for (const part of parts) {
      let leader = this.cluster.leaderOf(part.topic, part.partition);
      if (!leader) {
        await this.cluster.partitions(part.topic, this.config.requestTimeoutMs);
        leader = this.cluster.leaderOf(part.topic, part.partition);
      }
      if (!leader || leader.leader < 0 || !this.cluster.brokers.has(leader.leader)) {
        this._refreshMetadata();
        continue;
      }
      if (!byLeader.has(leader.leader)) byLeader.set(leader.leader, []);
      byLeader.get(leader.leader).push(part);
    }
    return byLeader;
  }

  /** The records of the answers that came, from each partition's position on. */
  _handOut() {
    const records = [];
    const held = []; // the answers of paused partitions, kept in order for resume()
    for (const answer of this.completed.splice(0)) {
      const { part, position, result } = answer;
      // A partition given up, moved (seek) or no longer assigned meanwhile keeps nothing of this answer.
      const current = this.partitions.get(partitionKey(part.topic, part.partition)) === part && !part.revoking &&
        part.position === position;
      if (current && part.paused) {
        held.push(answer);
        continue;
      }
      part.buffered = false;
      if (current) this._take(part, result, records);
    }
    this.completed.push(...held);
    return records;
  }

  /** A Fetch to each leader with none on its way, for its partitions with nothing left to hand out. */
  async _sendFetches() {
    const fetchable = [...this.partitions.values()].filter((p) => p.position !== null && !p.revoking && !p.fetching &&
      !p.buffered && !p.paused);
    if (fetchable.length === 0) return;
    const byLeader = await this._byLeader(fetchable);
    for (const [leaderId, parts] of byLeader) {
      if (!this.fetchingFrom.has(leaderId)) this._fetchFrom(leaderId, parts);
    }
  }

  _nextAnswer(waitMs) {
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.answered(), waitMs);
      this.answered = () => {
        clearTimeout(timer);
        this.answered = null;
        resolve();
      };
    });
  }

  async _fetchFrom(leaderId, parts) {
    this.fetchingFrom.add(leaderId);
    const asked = new Map(parts.map((p) => [partitionKey(p.topic, p.partition), { part: p, position: p.position }]));
    for (const part of parts) part.fetching = true;
    try {
      this.stats.fetches++;
      const response = await unary(this.cluster.broker(leaderId), 'Fetch', {
        replica_id: -1,
        replica_epoch: -1,
        max_wait_ms: this.config.fetchMaxWaitMs,
        min_bytes: 1,
        max_bytes: this.config.fetchMaxBytes,
        isolation_level: this.isolationLevel,
        session_id: 0,
        session_epoch: -1,
        topics: topicsOf(parts, (p) => ({
          partition: p.partition,
          current_leader_epoch: this.cluster.leaderOf(p.topic, p.partition)?.leaderEpoch ?? -1,
          fetch_offset: p.position,
          last_fetched_epoch: -1,
          log_start_offset: -1,
          partition_max_bytes: this.config.maxPartitionFetchBytes,
        })),
      }, this.config.fetchMaxWaitMs + this.config.requestTimeoutMs);
      this.cluster.learnEndpoints(response.node_endpoints);
      for (const topic of response.topics) {
        for (const result of topic.partitions) {
          const sent = asked.get(partitionKey(topic.topic, result.partition));
          // Nothing to hand out: the partition may be fetched again at once.
          if (!sent || (result.records.length === 0 && errorName(result.error_code) === 'NONE')) continue;
          sent.part.buffered = true;
          this.completed.push({ part: sent.part, position: sent.position, result });
        }
      }
    } catch (error) {
      if (!this.closed) {
        this.stats.fetchErrors++;
        this.log.warn(`fetch from broker ${leaderId} failed: ${error.message}`);
        this._refreshMetadata();
        await sleep(this.config.retryBackoffMs);
      }
    } finally {
      for (const part of parts) part.fetching = false;
      this.fetchingFrom.delete(leaderId);
      if (this.answered) this.answered();
    }
  }

  _take(part, result, records) {
    const code = errorName(result.error_code);
    if (code === 'OFFSET_OUT_OF_RANGE') {
      this.log.warn(`${part.topic}-${part.partition}: offset ${part.position} is out of range; resetting to ` +
        `${this.config.autoOffsetReset}`);
      part.position = null;
      return;
    }
    if (code !== 'NONE') {
      this.stats.fetchErrors++;
      if (STALE_LEADER.has(code)) {
        const current = result.current_leader;
        if (current && current.leader_id >= 0) {
          this.cluster.setLeader(part.topic, part.partition, current.leader_id, current.leader_epoch);
        } else {
          this._refreshMetadata();
        }
      }
      this.log.warn(`fetching ${part.topic}-${part.partition}: ${code}: ${result.error_message}`);
      return;
    }
    const before = records.length;
    const aborted = this.isolationLevel === ISOLATION_LEVELS.read_committed
      ? new AbortedTransactions(result.aborted_transactions) : null;
    for (const batch of decodeBatches(result.records, part)) { // records made with part's topic and partition
      if (aborted ? !aborted.keeps(batch) : batch.isControl) {
        if (!batch.isControl) this.stats.abortedRecordsDropped += batch.recordsCount;
        part.position = Math.max(part.position, batch.lastOffset + 1);
        continue;
      }
      for (const record of batch.records) {
        if (record.offset < part.position) continue;
        records.push(record);
        part.position = record.offset + 1;
        part.leaderEpoch = batch.partitionLeaderEpoch;
      }
    }
    this.stats.records += records.length - before;
  }

  _refreshMetadata() {
    if (this.cluster.refreshing) return;
    this.stats.metadataRefreshes++;
    this.cluster.refresh().catch((error) => this.log.warn(`metadata refresh failed: ${error.message}`));
  }

  /** The position of a partition: the offset of the next record poll() hands out (null: not known yet). */
  position({ topic, partition }) {
    return this.partitions.get(partitionKey(topic, partition))?.position ?? null;
  }

  /**
   * Commit offsets to the group: [{topic, partition, offset}] or, by default, the positions of
   * every partition read (what poll() handed out so far).
   */
  async commit(offsets) {
    if (!this.group && !this.config.groupId) throw new ReplogError('commit() needs a groupId', 'INVALID_GROUP_ID');
    const group = this.group ?? (this.group = new GroupMember(this, { ...this.config, log: this.log }));
    const chosen = offsets
      ? new Map(offsets.map((o) => [partitionKey(o.topic, o.partition), { offset: o.offset, leaderEpoch: o.leaderEpoch,
        metadata: o.metadata }]))
      : this._positions([...this.partitions.values()]);
    if (chosen.size) await group.commit(chosen);
  }

  /** The group's committed offsets of these partitions: [{topic, partition, offset}] (offset null: none). */
  async committed(partitions) {
    const group = this.group ?? new GroupMember(this, { ...this.config, log: this.log });
    const found = await group.committed(partitions.map((p) => partitionKey(p.topic, p.partition)));
    return partitions.map(({ topic, partition }) => ({ topic, partition,
      offset: found.get(partitionKey(topic, partition))?.offset ?? null }));
  }

  _positions(parts) {
    return new Map(parts.filter((p) => p.position !== null)
      .map((p) => [partitionKey(p.topic, p.partition), { offset: p.position, leaderEpoch: p.leaderEpoch }]));
  }

  async _commitQuietly(parts) {
    const offsets = this._positions(parts);
    if (!offsets.size) return;
    try {
      await this.group.commit(offsets);
    } catch (error) {
      this.log.warn(`group ${this.config.groupId}: commit failed: ${error.message}`);
    }
  }

  _autoCommitSoon() {
    this.autoCommitTimer = setTimeout(async () => {
      if (this.closed) return;
      await this._commitQuietly([...this.partitions.values()].filter((p) => !p.revoking));
      if (!this.closed) this._autoCommitSoon();
    }, this.config.autoCommitIntervalMs);
  }

  /** Counters: records, fetches, fetchErrors, metadataRefreshes, and the group's heartbeats, rebalances, commits. */
  metrics() {
    return { ...this.stats, ...(this.group?.stats ?? {}), partitions: this.partitions.size };
  }

  /** Commit (with autoCommit), leave the group at once, and close the connections. */
  async close() {
    if (this.closed) return;
    this.closed = true;
    if (this.autoCommitTimer) clearTimeout(this.autoCommitTimer);
    if (this.group) {
      if (this.config.autoCommit && this.group.membership.inGroup) {
        await this._commitQuietly([...this.partitions.values()]);
      }
      await this.group.leave(this.config.closeTimeoutMs);
    }
    this.cluster.close();
  }
}

function topicsOf(parts, entry) {
  const topics = new Map();
  for (const part of parts) {
    if (!topics.has(part.topic)) topics.set(part.topic, []);
    topics.get(part.topic).push(entry(part));
  }
  return [...topics].map(([topic, partitions]) => ({ topic, partitions }));
}

module.exports = { Consumer };
