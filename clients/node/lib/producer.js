'use strict';
// The producer: records are partitioned (murmur2 for keys, sticky without), appended to one open
// batch per partition, and sent to each partition's leader in requests covering its ready
// partitions, on one ProduceStream per leader (the broker appends a stream's requests in order).
// Leader errors refresh the metadata and retry until the delivery timeout. With idempotence (the
// default with acks=all, as in Kafka) the batches carry a producer id and sequence numbers, so the
// leader writes a retried batch once, and up to maxRequestsPerLeader (at most 5, as Kafka's
// max.in.flight.requests.per.connection) batches of a partition are in flight at once; when one
// comes back for a retry nothing more of its partition leaves until the rest are back, and then
// they go again in order. Without idempotence a partition has one batch in flight, so a retried
// batch never overtakes a later one. Only full batches join a partition's batches in flight: one
// that is not full keeps filling until they are answered, as the Python producer does, so that a
// steady trickle of records does not become a request per record. With a transactionalId the
// producer writes in transactions (lib/transactions.js): a partition's batches leave once the
// coordinator added the partition to the open transaction.

const { BatchBuilder } = require('./records');
const { Cluster, unary } = require('./cluster');
const { STALE_LEADER, ReplogError, TransactionStateError, errorName } = require('./errors');
const { withDefaults } = require('./options');
const { partitionKey } = require('./membership');
const { TransactionManager, groupMetadataOf } = require('./transactions');
const { StickyPartitioner, partitionForKey } = require('./partitioner');
const { makeLogger } = require('./logger');

const ACKS = { all: -1, '-1': -1, 1: 1, '1': 1, 0: 0, '0': 0 };
const SEQUENCE_MAX = 2 ** 31 - 1;
const IDEMPOTENT_IN_FLIGHT_MAX = 5; // the batches per producer a leader remembers (Kafka's limit too)
const DEFAULTS = Object.freeze({
  acks: 'all',
  lingerMs: 5,
  batchSizeBytes: 65536,
  maxRequestBytes: 1048576,
  requestTimeoutMs: 30000,
  deliveryTimeoutMs: 120000,
  retryBackoffMs: 100,
  maxRequestsPerLeader: 5,
  compression: 'none',
  clientId: 'replog-node-producer',
  transactionalId: null,
  transactionTimeoutMs: 60000,
});
// Answers that leave the producer's sequence numbers unusable: the batch fails, and the producer
// takes a new producer id so that later batches start a fresh sequence.
const SEQUENCE_BROKEN = new Set(['OUT_OF_ORDER_SEQUENCE_NUMBER', 'UNKNOWN_PRODUCER_ID', 'INVALID_PRODUCER_EPOCH']);

class Batch {
  constructor(now, deliveryTimeoutMs) {
    this.builder = new BatchBuilder({ baseTimestamp: now });
    this.listeners = []; // {index, resolve, reject} per record sent alone; a handle per sendMany
    this.createdMs = now;
    this.deadlineMs = now + deliveryTimeoutMs;
    this.bytes = null; // built at the first send, sent again as they are on a retry
    this.writer = null; // the producer id and epoch `bytes` carry
    this.attempts = 0;
    this.order = 0; // its place among its partition's batches, set when it is sealed
  }
}

class PartitionQueue {
  constructor(topic, partition) {
    this.topic = topic;
    this.partition = partition;
    this.key = partitionKey(topic, partition);
    this.open = null; // the batch records are appended to
    this.ready = []; // sealed batches not in flight (new, or back for a retry), oldest first
    this.flying = []; // batches sent and not answered, in the order they left
    this.retrying = false; // a batch came back for a retry while others flew: none leaves until they are back
    this.sealed = 0; // batches sealed so far, to order them
    this.retryAtMs = 0;
    this.nextSequence = 0;
    this.sequenceOwner = null; // the producer id and epoch nextSequence counts for
  }
}

class Producer {
  /**
   * @param {string|string[]} bootstrap metadata service address(es), "host:port"
   * @param {object} [options] acks ('all', 1, 0), lingerMs, batchSizeBytes, maxRequestBytes,
   *   requestTimeoutMs, deliveryTimeoutMs, retryBackoffMs, maxRequestsPerLeader, idempotent,
   *   transactionalId, transactionTimeoutMs, compression ('none', 'gzip'), clientId, logger, security ({cafile, certfile, keyfile, serverName, token,
   *   tokenFile}: TLS and a bearer token; else the REPLOG_SSL_* environment; false: plaintext)
   */
  constructor(bootstrap, options = {}) {
    this.config = withDefaults('Producer', options, DEFAULTS, ['idempotent']);
    const acks = ACKS[String(this.config.acks)];
    if (acks === undefined) throw new ReplogError(`acks must be all, 1 or 0, not ${this.config.acks}`, 'INVALID_REQUIRED_ACKS');
    this.acks = acks;
    this.idempotent = this.config.idempotent ?? acks === -1;
    this.transactionalId = this._transactionalId();
    if (this.idempotent && acks !== -1) {
      throw new ReplogError('an idempotent producer needs acks=all (as in Kafka)', 'INVALID_CONFIG');
    }
    const inFlight = this.config.maxRequestsPerLeader;
    if (!Number.isInteger(inFlight) || inFlight < 1 || (this.idempotent && inFlight > IDEMPOTENT_IN_FLIGHT_MAX)) {
      const range = this.idempotent ? `from 1 to ${IDEMPOTENT_IN_FLIGHT_MAX} for an idempotent producer (a leader ` +
        'remembers the last 5 batches of a producer)' : 'of 1 or more';
      throw new ReplogError(`maxRequestsPerLeader must be a whole number ${range}, not ${JSON.stringify(inFlight)}`,
        'INVALID_CONFIG');
    }
    this.inFlightPerPartition = this.idempotent ? inFlight : 1;
    this.log = makeLogger(this.config.logger, 'producer');
    this.cluster = new Cluster(bootstrap, { clientId: this.config.clientId, security: this.config.security });
    this.txn = this.transactionalId === null ? null : new TransactionManager({
      transactionalId: this.transactionalId,
      transactionTimeoutMs: this.config.transactionTimeoutMs,
      cluster: this.cluster,
      requestTimeoutMs: this.config.requestTimeoutMs,
      retryBackoffMs: this.config.retryBackoffMs,
      log: this.log,
      useProducer: (id, epoch) => {
        this.producerId = id;
        this.producerEpoch = epoch;
      },
      wakeup: () => this._drainSoon(),
    });
    this.partitioner = new StickyPartitioner(this.config.batchSizeBytes);
    this.queues = new Map(); // "topic\0partition" -> PartitionQueue
    this.requestsInFlight = new Map(); // leader id -> Produce requests not answered
    this.pendingRecords = 0;
    this.flushWaiters = [];
    this.timer = null;
    this.timerAtMs = Infinity;
    this.drainScheduled = false;
    this.closed = false;
    this.producerId = -1;
    this.producerEpoch = -1;
    this.initializing = null;
    this.stats = { records: 0, batches: 0, requests: 0, retries: 0, failedRecords: 0, metadataRefreshes: 0 };
  }

  /** The transactionalId option checked (null without one); a transactional producer is idempotent. */
  _transactionalId() {
    const { transactionalId, transactionTimeoutMs } = this.config;
    if (transactionalId === null || transactionalId === undefined) return null;
    if (typeof transactionalId !== 'string' || transactionalId.trim() === '') {
      throw new ReplogError(`transactionalId must be a non-empty string, not ${JSON.stringify(transactionalId)}`,
        'INVALID_CONFIG');
    }
    if (this.config.idempotent === false || this.acks !== -1) {
      throw new ReplogError('a transactional producer is idempotent with acks=all (as in Kafka): leave idempotent ' +
        'and acks at their defaults', 'INVALID_CONFIG');
    }
    if (!Number.isInteger(transactionTimeoutMs) || transactionTimeoutMs <= 0) {
      throw new ReplogError(`transactionTimeoutMs must be a positive whole number of milliseconds, not ` +
        `${JSON.stringify(transactionTimeoutMs)}`, 'INVALID_CONFIG');
    }
    this.idempotent = true;
    return transactionalId;
  }

  /**
   * Send one record; resolves with {topic, partition, offset} once acknowledged (offset -1 with acks=0).
   * @param {{topic: string, value: Buffer|string|null, key?: Buffer|string|null,
   *          headers?: {key: string, value: Buffer|string|null}[], partition?: number, timestamp?: number}} record
   */
  send(record) {
    if (this.closed) return Promise.reject(new ReplogError('the producer is closed', 'INVALID_REQUEST'));
    if (this.txn) {
      try {
        this.txn.checkSend();
      } catch (error) {
        return Promise.reject(error);
      }
    }
    const known = this.cluster.topics.get(record.topic);
    if (known && known.error === 'NONE' && (!this.idempotent || this.producerId >= 0)) {
      return this._append(record, known.partitions);
    }
    return this._prepared(record.topic, (partitions) => this._append(record, partitions));
  }

  /**
   * `then(partitions)` once the topic's partitions (and, idempotent, a producer id) are known. The
   * record counts as pending meanwhile, so that flush() and commitTransaction() wait for it too; it
   * is refused if its transaction ended meanwhile.
   */
  _prepared(topic, then) {
    this.pendingRecords++;
    return this._prepare(topic).then((partitions) => {
      try {
        if (this.txn) this.txn.checkAppend();
        return then(partitions);
      } finally {
        this._done(1);
      }
    }, (error) => {
      this._done(1);
      throw error;
    });
  }

  async _prepare(topic) {
    const partitions = await this.cluster.partitions(topic, this.config.requestTimeoutMs);
    if (this.idempotent && !this.txn && this.producerId < 0) await this._initProducerId();
    return partitions;
  }

  _initProducerId() {
    if (!this.initializing) {
      this.initializing = this._askProducerId().finally(() => { this.initializing = null; });
    }
    return this.initializing;
  }

  async _askProducerId() {
    const deadline = Date.now() + this.config.requestTimeoutMs;
    for (;;) {
      try {
        if (this.cluster.brokers.size === 0) await this.cluster.refresh();
        const response = await unary(this.cluster.anyBroker().coordinator, 'InitProducerId',
          { transaction_timeout_ms: 60000, producer_id: -1, producer_epoch: -1 }, this.config.requestTimeoutMs);
        const error = errorName(response.error_code);
        if (error === 'NONE') {
          this.producerId = response.producer_id;
          this.producerEpoch = response.producer_epoch;
          this.log.info(`producer id ${this.producerId} at epoch ${this.producerEpoch}`);
          return;
        }
        throw new ReplogError(`InitProducerId answered ${error}: ${response.error_message}`, error);
      } catch (error) {
        if (!(error instanceof ReplogError) || !error.retriable || Date.now() > deadline) throw error;
        this.log.warn(`no producer id yet (${error.message}); retrying`);
        await new Promise((resolve) => setTimeout(resolve, this.config.retryBackoffMs));
      }
    }
  }

  _append(record, partitions) {
    const key = record.key === undefined || record.key === null ? null
      : typeof record.key === 'string' ? Buffer.from(record.key, 'utf8') : record.key;
    let batch;
    try {
      const partition = this._place(record.topic, key, record.partition, partitions);
      batch = this._appendTo(record.topic, partition, partitions,
        { key, value: record.value, headers: record.headers, timestamp: record.timestamp },
        key === null && (record.partition === undefined || record.partition === null));
    } catch (error) {
      return Promise.reject(error);
    }
    const index = batch.builder.count - 1;
    return new Promise((resolve, reject) => batch.listeners.push({ index, resolve, reject }));
  }

  /**
   * Send many records without a key to one topic at once, the bulk form of send() for high rates:
   * they fill the sticky partition's batch, then the next one's (or all go to `partition`). Resolves
   * with the number of records once every batch is acknowledged; rejects with the first failure.
   * @param {string} topic
   * @param {(Buffer|string|null)[]} values
   */
  async sendMany(topic, values, { partition } = {}) {
    if (this.closed) throw new ReplogError('the producer is closed', 'INVALID_REQUEST');
    if (this.txn) this.txn.checkSend();
    const known = this.cluster.topics.get(topic);
    if (known && known.error === 'NONE' && (!this.idempotent || this.producerId >= 0)) {
      return this._sendManyTo(topic, values, partition, known.partitions);
    }
    return this._prepared(topic, (partitions) => this._sendManyTo(topic, values, partition, partitions));
  }

  _sendManyTo(topic, values, partition, partitions) {
    const handle = { remaining: 0, count: values.length, failed: false, resolve: null, reject: null };
    const done = new Promise((resolve, reject) => Object.assign(handle, { resolve, reject }));
    const sticky = partition === undefined || partition === null;
    const limit = this.config.batchSizeBytes;
    let last = null;
    let i = 0;
    try {
      // A run of values at a time into one partition's open batch: as many as fit it, and for the
      // sticky partitioner no more than its partition's share (what send() would do one by one).
      while (i < values.length) {
        const queue = this._queue(topic, this._place(topic, null, partition, partitions));
        if (queue.open === null) this._open(queue);
        const batch = queue.open;
        const next = this._appendValues(queue, values, i, limit, sticky ? this.partitioner.remainingBytes(topic) : Infinity);
        if (next === i) {
          // The next value does not fit the open batch: it starts the next one.
          this._seal(queue);
          this._drainSoon();
          continue;
        }
        const appended = next - i;
        i = next;
        if (this.txn && batch.builder.count === appended && this.txn.notePartition(queue.key)) this._drainSoon();
        if (sticky) {
          this.partitioner.record(topic, partitions.size, batch.builder.lastAppendedBytes, availablePartitions(partitions));
        }
        this.pendingRecords += appended;
        this.stats.records += appended;
        if (batch !== last) {
          batch.listeners.push(handle);
          handle.remaining++;
          last = batch;
        }
        if (batch.builder.sizeBytes >= limit) {
          this._seal(queue);
          this._drainSoon();
        }
      }
    } catch (error) {
      handle.failed = true; // the records queued before it are sent; this call fails as a whole
      done.catch(() => {});
      throw error;
    }
    if (handle.remaining === 0) handle.resolve(0);
    return done;
  }

  /** builder.appendValues into the queue's open batch, its errors said as send()'s are. */
  _appendValues(queue, values, from, limitBytes, budgetBytes) {
    try {
      return queue.open.builder.appendValues(values, from, limitBytes, budgetBytes);
    } catch (error) {
      if (queue.open.builder.count === 0) queue.open = null;
      throw new ReplogError(`the record cannot be encoded: ${error.message}`, 'INVALID_RECORD');
    }
  }

  _place(topic, key, partition, partitions) {
    const partitionCount = partitions.size;
    if (partition === undefined || partition === null) {
      return key !== null ? partitionForKey(key, partitionCount)
        : this.partitioner.partition(topic, partitionCount, availablePartitions(partitions));
    }
    if (!Number.isInteger(partition) || partition < 0 || partition >= partitionCount) {
      throw new ReplogError(`topic ${topic} has no partition ${partition} (it has ${partitionCount})`,
        'UNKNOWN_TOPIC_OR_PARTITION');
    }
    return partition;
  }

  /** Append one record to its partition's open batch (starting one when it does not fit); the batch. */
  _appendTo(topic, partition, partitions, entry, sticky) {
    const queue = this._queue(topic, partition);
    let size;
    try {
      size = queue.open === null ? -1 : queue.open.builder.append(entry, this.config.batchSizeBytes);
      if (size < 0) {
        // A record that does not fit the open batch starts the next one (a batch holds at least one).
        if (queue.open !== null) {
          this._seal(queue);
          this._drainSoon();
        }
        this._open(queue);
        size = queue.open.builder.append(entry);
      }
    } catch (error) {
      if (queue.open !== null && queue.open.builder.count === 0) queue.open = null;
      throw new ReplogError(`the record cannot be encoded: ${error.message}`, 'INVALID_RECORD');
    }
    const batch = queue.open;
    // A transaction starts with no open batch, so a partition is new to it only with a new batch.
    if (this.txn && batch.builder.count === 1 && this.txn.notePartition(queue.key)) this._drainSoon();
    if (sticky) this.partitioner.record(topic, partitions.size, size, availablePartitions(partitions));
    this.pendingRecords++;
    this.stats.records++;
    if (batch.builder.sizeBytes >= this.config.batchSizeBytes) {
      this._seal(queue);
      this._drainSoon();
    }
    return batch;
  }

  /** A new open batch for the queue, sent at the latest lingerMs from now. */
  _open(queue) {
    const now = Date.now();
    queue.open = new Batch(now, this.config.deliveryTimeoutMs);
    this._wakeAt(now + this.config.lingerMs);
  }

  _queue(topic, partition) {
    const key = partitionKey(topic, partition);
    let queue = this.queues.get(key);
    if (!queue) {
      queue = new PartitionQueue(topic, partition);
      this.queues.set(key, queue);
    }
    return queue;
  }

  _seal(queue) {
    queue.open.order = ++queue.sealed;
    queue.ready.push(queue.open);
    queue.open = null;
    this.stats.batches++;
  }

  _drainSoon() {
    if (this.drainScheduled) return;
    this.drainScheduled = true;
    setImmediate(() => {
      this.drainScheduled = false;
      this._drain();
    });
  }

  _wakeAt(atMs) {
    if (atMs >= this.timerAtMs) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAtMs = atMs;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerAtMs = Infinity;
      this._drain();
    }, Math.max(0, atMs - Date.now()));
  }

  /** Send what is ready: sealed batches, and open ones whose linger passed (all of them when flushing). */
  _drain() {
    if (this.idempotent && this.producerId < 0) return; // a new producer id is on its way; it drains then
    if (this.txn) {
      if (this.txn.givesUpQueued) this._giveUpQueued();
      this.txn.maybeAddPartitions();
    }
    const now = Date.now();
    const flushing = this.flushWaiters.length > 0 || this.closed;
    const byLeader = new Map();
    let wakeAtMs = Infinity;
    let leaderMissing = false;
    for (const queue of this.queues.values()) {
      // A batch that is not full waits for the partition's batches in flight (their answers drain again).
      if (queue.open !== null && (flushing || queue.flying.length === 0)) {
        if (flushing || now - queue.open.createdMs >= this.config.lingerMs) this._seal(queue);
        else wakeAtMs = Math.min(wakeAtMs, queue.open.createdMs + this.config.lingerMs);
      }
      if (!this._canSend(queue)) continue;
      if (this._expire(queue, now)) continue;
      if (this.txn && !this.txn.added.has(queue.key)) continue; // its AddPartitionsToTxn is on its way
      if (queue.retryAtMs > now) {
        wakeAtMs = Math.min(wakeAtMs, queue.retryAtMs);
        continue;
      }
      const leader = this.cluster.leaderOf(queue.topic, queue.partition);
      if (!leader || leader.leader < 0 || !this.cluster.brokers.has(leader.leader)) {
        leaderMissing = true;
        continue;
      }
      if (!byLeader.has(leader.leader)) byLeader.set(leader.leader, []);
      byLeader.get(leader.leader).push(queue);
    }
    for (const [leaderId, queues] of byLeader) this._sendTo(leaderId, queues);
    if (leaderMissing) {
      this._refreshMetadata();
      wakeAtMs = Math.min(wakeAtMs, now + this.config.retryBackoffMs);
    }
    if (wakeAtMs < Infinity) this._wakeAt(wakeAtMs);
  }

  /** Whether the partition has a batch to send and room for it in flight. */
  _canSend(queue) {
    if (queue.ready.length === 0) return false;
    if (queue.flying.length === 0) return true;
    return !queue.retrying && queue.flying.length < this.inFlightPerPartition;
  }

  /** Fail every batch not sent: the transaction is aborting, cannot commit, or the producer was fenced. */
  _giveUpQueued() {
    for (const queue of this.queues.values()) {
      if (queue.open !== null) this._seal(queue);
      for (const batch of queue.ready.splice(0)) {
        this._fail(batch, this.txn.givenUp(queue.topic, queue.partition, batch.builder.count));
      }
    }
  }

  /** Fail the head batches that outlived deliveryTimeoutMs; true when the queue was emptied. */
  _expire(queue, now) {
    while (queue.ready.length > 0 && queue.ready[0].deadlineMs <= now) {
      const batch = queue.ready.shift();
      this._fail(batch, new ReplogError(`${batch.builder.count} records to ${queue.topic}-${queue.partition} ` +
        `were not acknowledged within deliveryTimeoutMs (${this.config.deliveryTimeoutMs} ms)`, 'REQUEST_TIMED_OUT'));
    }
    return queue.ready.length === 0;
  }

  /** Requests to one leader, each with the next batch of each partition that can send one, up to maxRequestBytes. */
  _sendTo(leaderId, queues) {
    let inFlight = this.requestsInFlight.get(leaderId) ?? 0;
    let sendable = queues;
    while (sendable.length > 0 && inFlight < this.config.maxRequestsPerLeader) {
      const taken = [];
      let bytes = 0;
      for (const queue of sendable) {
        const size = this._bytesOf(queue, queue.ready[0]).length;
        if (taken.length > 0 && bytes + size > this.config.maxRequestBytes) continue;
        const batch = queue.ready.shift();
        queue.flying.push(batch);
        taken.push({ queue, batch });
        bytes += size;
      }
      inFlight++;
      this._produce(leaderId, taken);
      sendable = sendable.filter((queue) => this._canSend(queue));
    }
    this.requestsInFlight.set(leaderId, inFlight);
  }

  _bytesOf(queue, batch) {
    // Sequence numbers count per producer id and epoch: a new id, or a transaction's epoch bump, starts at 0.
    const writer = this.idempotent ? `${this.producerId}/${this.producerEpoch}` : null;
    if (batch.bytes !== null && batch.writer === writer) return batch.bytes;
    let baseSequence = -1;
    if (this.idempotent) {
      if (queue.sequenceOwner !== writer) {
        queue.sequenceOwner = writer;
        queue.nextSequence = 0;
      }
      baseSequence = queue.nextSequence; // numbered when it first leaves, in the order batches leave
      queue.nextSequence = (queue.nextSequence + batch.builder.count) % (SEQUENCE_MAX + 1);
    }
    batch.bytes = batch.builder.build({
      compression: this.config.compression,
      producerId: this.idempotent ? this.producerId : -1,
      producerEpoch: this.idempotent ? this.producerEpoch : -1,
      baseSequence,
      transactional: this.txn !== null,
    });
    batch.writer = writer;
    return batch.bytes;
  }

  /** Send one request of `taken` ({queue, batch}, one batch per partition) on the leader's ProduceStream. */
  _produce(leaderId, taken) {
    const topics = new Map();
    for (const { queue, batch } of taken) {
      batch.attempts++;
      if (!topics.has(queue.topic)) topics.set(queue.topic, []);
      const leader = this.cluster.leaderOf(queue.topic, queue.partition);
      topics.get(queue.topic).push({
        partition: queue.partition, records: batch.bytes, current_leader_epoch: leader.leaderEpoch,
      });
    }
    const request = {
      ...(this.txn ? { transactional_id: this.transactionalId, transaction_version: this.txn.transactionVersion } : {}),
      acks: this.acks,
      timeout_ms: this.config.requestTimeoutMs,
      topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })),
    };
    this.stats.requests++;
    let stream;
    try {
      stream = this.cluster.produceStream(leaderId);
    } catch (error) {
      this._answered(leaderId, taken, null, error);
      return;
    }
    stream.request({ request }, this.config.requestTimeoutMs + 5000).then(
      (answer) => this._answered(leaderId, taken, answer.response, null),
      (error) => this._answered(leaderId, taken, null, error),
    );
  }

  _answered(leaderId, taken, response, requestError) {
    this.requestsInFlight.set(leaderId, (this.requestsInFlight.get(leaderId) ?? 1) - 1);
    const now = Date.now();
    const results = new Map();
    if (response) {
      this.cluster.learnEndpoints(response.node_endpoints);
      for (const topic of response.topics) {
        for (const p of topic.partitions) results.set(`${topic.topic}\u0000${p.partition}`, p);
      }
    }
    for (const { queue, batch } of taken) {
      queue.flying.splice(queue.flying.indexOf(batch), 1);
      if (queue.flying.length === 0) queue.retrying = false;
      const result = results.get(`${queue.topic}\u0000${queue.partition}`);
      const error = requestError ?? (result ? null
        : new ReplogError(`the answer left out ${queue.topic}-${queue.partition}`, 'UNKNOWN_SERVER_ERROR'));
      if (error) {
        this._retryOrFail(queue, batch, error, now);
        continue;
      }
      const code = errorName(result.error_code);
      if (code === 'NONE') {
        this._succeed(queue, batch, result.base_offset, result.log_append_time_ms);
        continue;
      }
      if (STALE_LEADER.has(code) && result.current_leader && result.current_leader.leader_id >= 0) {
        this.cluster.setLeader(queue.topic, queue.partition, result.current_leader.leader_id,
          result.current_leader.leader_epoch);
      }
      const failure = new ReplogError(`producing to ${queue.topic}-${queue.partition} failed: ${code}: ` +
        `${result.error_message}`, code);
      if (code === 'OUT_OF_ORDER_SEQUENCE_NUMBER' && this._hasEarlier(queue, batch)) {
        // An earlier batch of the partition is coming again; this one follows it.
        this._retryOrFail(queue, batch, failure, now, true);
        continue;
      }
      if (this.idempotent && SEQUENCE_BROKEN.has(code)) {
        this._fail(batch, failure);
        if (!this.txn) this._resetProducerId(code); // a transaction's epoch moves only at its end
        continue;
      }
      this._retryOrFail(queue, batch, failure, now);
    }
    this._drainSoon();
  }

  /** Put a failed batch back for a retry, ahead of its partition's later batches, or fail it for good. */
  _retryOrFail(queue, batch, error, now, retriable = error.retriable) {
    if (retriable && now + this.config.retryBackoffMs < batch.deadlineMs) {
      this.stats.retries++;
      queue.retryAtMs = now + this.config.retryBackoffMs;
      let at = 0;
      while (at < queue.ready.length && queue.ready[at].order < batch.order) at++;
      queue.ready.splice(at, 0, batch);
      if (queue.flying.length > 0) queue.retrying = true;
      this.log.warn(`retrying ${queue.topic}-${queue.partition} (attempt ${batch.attempts + 1}): ${error.message}`);
      if (STALE_LEADER.has(error.error) || error.grpcCode !== undefined) this._refreshMetadata();
      return;
    }
    this._fail(batch, error);
  }

  /** Whether a batch of the partition sealed before `batch` is still to be acknowledged. */
  _hasEarlier(queue, batch) {
    return queue.flying.some((b) => b.order < batch.order) || queue.ready.some((b) => b.order < batch.order);
  }

  _succeed(queue, batch, baseOffset, logAppendTime = -1) {
    const { topic, partition } = queue;
    for (const listener of batch.listeners) {
      if (listener.index === undefined) {
        if (--listener.remaining === 0 && !listener.failed) listener.resolve(listener.count);
      } else {
        listener.resolve({ topic, partition, offset: baseOffset < 0 ? -1 : baseOffset + listener.index,
          logAppendTime });
      }
    }
    this._done(batch.builder.count);
  }

  _fail(batch, error) {
    const count = batch.builder.count;
    for (const listener of batch.listeners) {
      if (listener.failed) continue;
      if (listener.index === undefined) listener.failed = true;
      listener.reject(error);
    }
    this.stats.failedRecords += count;
    this.log.warn(`${count} records failed: ${error.message}`);
    if (this.txn) this.txn.batchFailed(error);
    this._done(count);
  }

  _done(count) {
    this.pendingRecords -= count;
    if (this.pendingRecords === 0) {
      for (const resolve of this.flushWaiters.splice(0)) resolve();
    }
  }

  _resetProducerId(reason) {
    this.log.warn(`the producer's sequence broke (${reason}): taking a new producer id`);
    this.producerId = -1;
    this._initProducerId().then(() => this._drainSoon(), (error) => this.log.warn(`no new producer id: ${error.message}`));
  }

  _refreshMetadata() {
    if (this.cluster.refreshing) return;
    this.stats.metadataRefreshes++;
    this.cluster.refresh().then(() => this._drainSoon(), (error) => {
      this.log.warn(`metadata refresh failed: ${error.message}`);
    });
  }

  /**
   * Counters: records, batches, requests, retries, failedRecords, metadataRefreshes; with a transactionalId
   * also transactionState, transactionsCommitted, transactionsAborted, addPartitionsCalls.
   */
  metrics() {
    const transactions = this.txn ? { transactionState: this.txn.state, ...this.txn.stats } : {};
    return { ...this.stats, pendingRecords: this.pendingRecords, ...transactions };
  }

  // -- transactions (with a transactionalId) -----------------------------------------------------------

  _transactions(what) {
    if (this.txn === null) {
      throw new TransactionStateError(`${what} needs a transactional producer: give the transactionalId option`,
        'INVALID_CONFIG');
    }
    if (this.closed) throw new ReplogError('the producer is closed', 'INVALID_REQUEST');
    return this.txn;
  }

  /**
   * Take the transactional id's producer id and epoch from its coordinator, fencing any older producer
   * with the same id and aborting what it left open. Call once, before the first transaction; after a
   * timeout (REQUEST_TIMED_OUT), call again.
   */
  async initTransactions({ timeoutMs = this.config.requestTimeoutMs } = {}) {
    const txn = this._transactions('initTransactions()');
    txn.move('init', 'initTransactions()');
    await txn.initialize(timeoutMs);
  }

  /** Open a transaction: send() and sendOffsetsToTransaction() write in it until it is committed or aborted. */
  beginTransaction() {
    this._transactions('beginTransaction()').move('begin', 'beginTransaction()');
  }

  /**
   * Commit consumed offsets with the transaction: they become the group's committed offsets only if it
   * commits. `offsets`: [{topic, partition, offset, leaderEpoch?, metadata?}], the next offsets to read;
   * `group`: the consumer's groupMetadata() (its member id and epoch are checked), or a group id.
   */
  async sendOffsetsToTransaction(offsets, group, { timeoutMs = this.config.requestTimeoutMs } = {}) {
    const txn = this._transactions('sendOffsetsToTransaction()');
    txn.checkOpen('sendOffsetsToTransaction()');
    const metadata = groupMetadataOf(group);
    if (!Array.isArray(offsets) || offsets.length === 0) return;
    const chosen = new Map();
    for (const o of offsets) {
      if (typeof o?.topic !== 'string' || !Number.isInteger(o.partition) || !Number.isInteger(o.offset) || o.offset < 0) {
        throw new ReplogError(`an offset to commit is {topic, partition, offset} with a whole offset ≥ 0, not ` +
          `${JSON.stringify(o)}`, 'INVALID_REQUEST');
      }
      chosen.set(partitionKey(o.topic, o.partition), { offset: o.offset, leaderEpoch: o.leaderEpoch, metadata: o.metadata });
    }
    await txn.sendOffsets(chosen, metadata, timeoutMs);
  }

  /**
   * Send every record of the transaction, then commit it. Throws TransactionAbortableError when it
   * cannot commit (abortTransaction() then), ProducerFencedError when a newer producer took over, and
   * REQUEST_TIMED_OUT when the coordinator did not answer in time (call it again).
   */
  async commitTransaction({ timeoutMs = this.config.requestTimeoutMs } = {}) {
    const txn = this._transactions('commitTransaction()');
    txn.move('commit', 'commitTransaction()');
    await this.flush();
    if (txn.state !== 'COMMITTING') throw txn.refusal('commitTransaction()');
    await txn.end(true, timeoutMs);
  }

  /**
   * The first phase of a two-phase commit (KIP-939): send every record of the transaction and wait for
   * them, then add nothing more. Resolves with {transactionalId, producerId, producerEpoch}, which
   * Admin.endTransaction() anywhere (or commitTransaction() / abortTransaction() here) takes to end it;
   * the transaction stays open until then, also after close(), or until its coordinator aborts it
   * after transactionTimeoutMs. Throws TransactionAbortableError when a record failed (abort then).
   */
  async prepareTransaction() {
    const txn = this._transactions('prepareTransaction()');
    txn.checkOpen('prepareTransaction()');
    await this.flush();
    return txn.prepared();
  }

  /**
   * Abort the transaction: records not sent yet fail, the coordinator writes abort markers, and the
   * next transaction may begin. Throws ProducerFencedError when a newer producer took over.
   */
  async abortTransaction({ timeoutMs = this.config.requestTimeoutMs } = {}) {
    const txn = this._transactions('abortTransaction()');
    txn.move('abort', 'abortTransaction()');
    await this.flush(); // gives up what is queued and waits for what is in flight
    await txn.end(false, timeoutMs);
  }

  /** Resolves once every record sent so far is acknowledged or failed. */
  flush() {
    if (this.pendingRecords === 0) return Promise.resolve();
    const done = new Promise((resolve) => this.flushWaiters.push(resolve));
    this._drainSoon();
    return done;
  }

  /** Flush, then close the connections. */
  async close() {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.cluster.close();
  }
}

const AVAILABLE = new WeakMap(); // partitions Map (replaced on every metadata answer) -> those with a leader

function availablePartitions(partitions) {
  let available = AVAILABLE.get(partitions);
  if (available === undefined) {
    available = [];
    for (const [partition, { leader }] of partitions) if (leader >= 0) available.push(partition);
    AVAILABLE.set(partitions, available);
  }
  return available;
}

module.exports = { Producer };
