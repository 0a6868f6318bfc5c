'use strict';
// A transactional producer's transactions (docs/TRANSACTIONS.md, "The RPCs as a client sees them"):
// its states and the one table of moves between them, what each answer of a coordinator or a
// leader means to it, and its calls to the transaction coordinator and the group coordinator. The
// table and the reactions are those of replog/core/txn/producer.py.
//
// PREPARED is the first phase of a two-phase commit (KIP-939): every record and offset of the
// transaction is written and acknowledged, nothing more may be added, and the decision may be made
// elsewhere, with EndTxn for the producer id and epoch the transaction was written with
// (Admin.endTransaction()); close() leaves a prepared transaction open for it.
//
// Every end bumps the producer's epoch (KIP-890): EndTxn answers the id and epoch the next
// transaction writes with, and every partition's sequence numbers start at 0 again.

const { sleep } = require('./cluster');
const { Coordinators } = require('./coordinator');
const {
  ProducerFencedError, ReplogError, TransactionAbortableError, TransactionFatalError, TransactionStateError, errorName,
} = require('./errors');
const { byTopic, offsetCommitTopics } = require('./group');
const { partitionKey, splitKey } = require('./membership');

// (state, event) -> next state. A move the table does not list is the application's mistake (begin
// twice, commit with no transaction open, send outside one): the call is refused and nothing moves.
const TRANSITIONS = new Map(Object.entries({
  'UNINITIALIZED init': 'INITIALIZING',
  'INITIALIZING init': 'INITIALIZING', // called again after it timed out
  'INITIALIZING initialized': 'READY',
  'READY begin': 'IN_TRANSACTION',
  'IN_TRANSACTION commit': 'COMMITTING',
  'IN_TRANSACTION prepare': 'PREPARED',
  'PREPARED commit': 'COMMITTING',
  'PREPARED abort': 'ABORTING',
  'COMMITTING commit': 'COMMITTING', // called again after it timed out
  'IN_TRANSACTION abort': 'ABORTING',
  'ABORTABLE_ERROR abort': 'ABORTING',
  'ABORTING abort': 'ABORTING',
  'COMMITTING ended': 'READY',
  'ABORTING ended': 'READY',
  'IN_TRANSACTION abortable': 'ABORTABLE_ERROR',
  'COMMITTING abortable': 'ABORTABLE_ERROR',
  'ABORTABLE_ERROR abortable': 'ABORTABLE_ERROR',
  'ABORTING abortable': 'ABORTING', // a batch given up while aborting: expected
}));
const STATES = ['UNINITIALIZED', 'INITIALIZING', 'READY', 'IN_TRANSACTION', 'PREPARED', 'COMMITTING', 'ABORTING',
  'ABORTABLE_ERROR', 'FATAL_ERROR'];

/** Where `event` takes a producer in `state`; null when the table has no such move. Any state may turn fatal. */
function nextState(state, event) {
  if (event === 'fatal') return 'FATAL_ERROR';
  return TRANSITIONS.get(`${state} ${event}`) ?? null;
}

// What the application may not do in each state, said the way a user needs to hear it.
const HINTS = {
  UNINITIALIZED: 'call initTransactions() first',
  INITIALIZING: 'initTransactions() has not finished; call it again',
  READY: 'no transaction is open; call beginTransaction() first',
  IN_TRANSACTION: 'a transaction is open; commit or abort it first',
  PREPARED: 'the transaction is prepared; commit or abort it, or close the producer and leave it to whoever ' +
    'holds its prepared transaction (Admin.endTransaction())',
  COMMITTING: 'the transaction is being committed; call commitTransaction() again to finish it',
  ABORTING: 'the transaction is being aborted; call abortTransaction() again to finish it',
};

const FIND_AGAIN = new Set(['NOT_COORDINATOR', 'COORDINATOR_NOT_AVAILABLE', 'NETWORK_EXCEPTION']);
const RETRY = new Set(['COORDINATOR_LOAD_IN_PROGRESS', 'CONCURRENT_TRANSACTIONS', 'REQUEST_TIMED_OUT']);
const MEMBER_MOVED_ON = ['UNKNOWN_MEMBER_ID', 'ILLEGAL_GENERATION', 'FENCED_MEMBER_EPOCH', 'STALE_MEMBER_EPOCH',
  'FENCED_INSTANCE_ID'];
// Per request, the errors that differ from the rules of reaction() (Kafka's handlers of each answer).
const SPECIAL = {
  AddPartitionsToTxn: {
    // The coordinator's broker may not know a new topic yet; OPERATION_NOT_ATTEMPTED is a partition
    // left undone because another one failed.
    UNKNOWN_TOPIC_OR_PARTITION: 'retry',
    OPERATION_NOT_ATTEMPTED: 'retry',
    INVALID_PRODUCER_ID_MAPPING: 'abortable',
    UNKNOWN_PRODUCER_ID: 'abortable',
    TRANSACTION_ABORTABLE: 'abortable',
  },
  AddOffsetsToTxn: {
    INVALID_PRODUCER_ID_MAPPING: 'abortable',
    UNKNOWN_PRODUCER_ID: 'abortable',
    TRANSACTION_ABORTABLE: 'abortable',
    INVALID_GROUP_ID: 'abortable',
  },
  TxnOffsetCommit: {
    UNKNOWN_TOPIC_OR_PARTITION: 'retry',
    // The consumer's membership moved on: the offsets may belong to another member now.
    ...Object.fromEntries(MEMBER_MOVED_ON.map((code) => [code, 'abortable'])),
    INVALID_GROUP_ID: 'abortable',
    OFFSET_METADATA_TOO_LARGE: 'abortable',
    TRANSACTION_ABORTABLE: 'abortable',
  },
  EndTxn: { TRANSACTION_ABORTABLE: 'abortable' },
  InitProducerId: {},
};

/**
 * What the producer does with error `code` (Kafka's name) in the answer to `request` (InitProducerId,
 * AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn, or Produce for a batch that failed
 * for good): 'done', 'findCoordinator' (then retry), 'retry' (after a backoff), 'abortable' (the
 * transaction must be aborted), 'fenced' (a newer producer took the transactional id) or 'fatal'.
 * INVALID_PRODUCER_EPOCH is abortable: the coordinator aborted the transaction after its timeout
 * (KIP-588), and the abort that follows tells whether the producer may go on or was fenced.
 */
function reaction(request, code) {
  if (code === 'NONE') return 'done';
  if (code === 'PRODUCER_FENCED') return 'fenced';
  if (request === 'Produce' || code === 'INVALID_PRODUCER_EPOCH') return 'abortable';
  const special = SPECIAL[request][code];
  if (special !== undefined) return special;
  if (FIND_AGAIN.has(code)) return 'findCoordinator';
  if (RETRY.has(code)) return 'retry';
  return 'fatal';
}

const SEVERITY = ['done', 'retry', 'findCoordinator', 'abortable', 'fatal', 'fenced'];

/** Of several partitions' [code, message], the one that speaks for the answer: fenced, fatal, abortable, retried. */
function worst(request, failures) {
  let chosen = ['NONE', ''];
  for (const failure of failures) {
    if (SEVERITY.indexOf(reaction(request, failure[0])) > SEVERITY.indexOf(reaction(request, chosen[0]))) {
      chosen = failure;
    }
  }
  return chosen;
}

/** A consumer's groupMetadata(), or a bare group id (no member checks, as for a consumer using assign()). */
function groupMetadataOf(group) {
  const metadata = typeof group === 'string' ? { groupId: group } : group;
  if (!metadata || typeof metadata.groupId !== 'string' || !metadata.groupId.trim()) {
    throw new ReplogError('sendOffsetsToTransaction needs the consumer\'s groupMetadata() (or a group id), not ' +
      `${JSON.stringify(group)}`, 'INVALID_GROUP_ID');
  }
  return { groupId: metadata.groupId, memberId: metadata.memberId ?? '', memberEpoch: metadata.memberEpoch ?? -1 };
}

class TransactionManager {
  /**
   * @param {object} options transactionalId, transactionTimeoutMs, cluster, requestTimeoutMs, retryBackoffMs,
   *   log; useProducer(id, epoch): write with them from now on, numbering every partition from 0;
   *   wakeup(): let the producer send what may leave now
   */
  constructor({ transactionalId, transactionTimeoutMs, cluster, requestTimeoutMs, retryBackoffMs, log, useProducer,
    wakeup }) {
    this.transactionalId = transactionalId;
    this.timeoutMs = transactionTimeoutMs;
    this.retryBackoffMs = retryBackoffMs;
    this.log = log;
    this.useProducer = useProducer;
    this.wakeup = wakeup;
    this.transactions = new Coordinators(cluster, 'transaction', requestTimeoutMs);
    this.groups = new Coordinators(cluster, 'group', requestTimeoutMs);
    this.state = 'UNINITIALIZED';
    this.error = null; // why the transaction is abortable, or the producer unusable
    this.producerId = -1;
    this.producerEpoch = -1;
    this.fresh = new Set(); // partitions written to, not asked for yet ("topic\0partition")
    this.adding = new Set(); // in the AddPartitionsToTxn on its way
    this.added = new Set(); // in the transaction: their batches may leave
    this.started = false; // the coordinator may have begun the transaction: only EndTxn ends it
    this.addCall = null; // the AddPartitionsToTxn on its way
    // 2: partition leaders add partitions (KIP-890 part 2; the coordinator says so at init and at every end);
    // 1: this producer adds them with AddPartitionsToTxn.
    this.transactionVersion = 1;
    this.stats = { transactionsCommitted: 0, transactionsAborted: 0, addPartitionsCalls: 0 };
  }

  // -- the application's calls ---------------------------------------------------------------------

  /** Take the table's move for the application's call `what`; throws when there is none. */
  move(event, what) {
    const after = nextState(this.state, event);
    if (after === null) throw this.refusal(what);
    this.state = after;
  }

  /** send() writes only inside a transaction. */
  checkSend() {
    if (this.state !== 'IN_TRANSACTION') throw this.refusal('send()');
  }

  /** A record send() took in the open transaction is appended now: refused if the transaction ended meanwhile. */
  checkAppend() {
    if (this.state !== 'IN_TRANSACTION' && this.state !== 'COMMITTING') throw this.refusal('send()');
  }

  /** Throws unless a transaction is open and can still commit. */
  checkOpen(what) {
    if (this.state !== 'IN_TRANSACTION') throw this.refusal(what);
  }

  refusal(what) {
    if (this.state === 'FATAL_ERROR' && this.error) return this.error;
    if (this.state === 'ABORTABLE_ERROR' && this.error) {
      return new TransactionAbortableError(`${what} is refused: the transaction must be aborted (abortTransaction()), ` +
        `since ${this.error.message}`, this.error.error);
    }
    return new TransactionStateError(`${what} is refused in state ${this.state}: ${HINTS[this.state]}`);
  }

  /**
   * IN_TRANSACTION to PREPARED, once every record is acknowledged (the producer flushed): what EndTxn must
   * name to end the transaction from elsewhere, {transactionalId, producerId, producerEpoch}.
   */
  prepared() {
    this.checkOpen('prepareTransaction()');
    if (!this.started) {
      throw new TransactionStateError('prepareTransaction() is refused: the transaction has written nothing, so ' +
        'there is nothing for anyone to commit');
    }
    this.move('prepare', 'prepareTransaction()');
    this.log.info(`transactional id ${this.transactionalId}: transaction prepared, producer ${this.producerId} ` +
      `epoch ${this.producerEpoch}`);
    return Object.freeze({ transactionalId: this.transactionalId, producerId: this.producerId,
      producerEpoch: this.producerEpoch });
  }

  /**
   * send() wrote to this partition: true when it is new to the transaction (it must be asked for, or, on
   * transaction version 2, its batches may leave now: their leader adds it).
   */
  notePartition(key) {
    if (this.added.has(key) || this.adding.has(key) || this.fresh.has(key)) return false;
    if (this.transactionVersion >= 2) {
      this.started = true;
      this.added.add(key);
    } else {
      this.fresh.add(key);
    }
    return true;
  }

  // -- the producer's loop --------------------------------------------------------------------------

  /** Whether batches not sent yet are to fail: the transaction is aborting, or cannot commit. */
  get givesUpQueued() {
    return this.state === 'ABORTING' || this.state === 'ABORTABLE_ERROR' || this.state === 'FATAL_ERROR';
  }

  /** The error a batch not sent gets when the transaction gives it up. */
  givenUp(topic, partition, records) {
    if (this.state === 'FATAL_ERROR' && this.error) return this.error;
    const cause = this.error ? ` after ${this.error.message}` : '';
    return new TransactionAbortableError(`${records} records for ${topic}-${partition} were not written: the ` +
      `transaction is being aborted${cause}`);
  }

  /** Ask for the partitions written to since the last ask, unless an ask is on its way. */
  maybeAddPartitions() {
    if (this.fresh.size === 0 || this.addCall !== null) return;
    if (this.state !== 'IN_TRANSACTION' && this.state !== 'COMMITTING') return;
    const keys = [...this.fresh];
    this.fresh.clear();
    for (const key of keys) this.adding.add(key);
    this.started = true;
    this.addCall = this._addPartitions(keys).finally(() => {
      this.addCall = null;
      this.wakeup();
    });
  }

  async _addPartitions(keys) {
    this.stats.addPartitionsCalls++;
    const request = {
      transactional_id: this.transactionalId, producer_id: this.producerId, producer_epoch: this.producerEpoch,
      topics: byTopic(keys), verify_only: false,
    };
    try {
      const response = await this._call('AddPartitionsToTxn', request, addPartitionsCodes, this.timeoutMs);
      const results = new Map(response.results.map((r) => [partitionKey(r.topic, r.partition),
        [errorName(r.error_code), `${r.topic}-${r.partition}: ${r.error_message}`]]));
      let [code, message] = [errorName(response.error_code), response.error_message];
      if (code === 'NONE') [code, message] = worst('AddPartitionsToTxn', results.values());
      const missing = keys.filter((key) => !results.has(key));
      if (code === 'NONE' && missing.length) {
        [code, message] = ['UNKNOWN_SERVER_ERROR', `the answer left out ${missing.map(printable).join(', ')}`];
      }
      this._take('AddPartitionsToTxn', code, message);
      if (this.state === 'IN_TRANSACTION' || this.state === 'COMMITTING') for (const key of keys) this.added.add(key);
    } catch (error) {
      this._fail('abortable', error);
    } finally {
      for (const key of keys) this.adding.delete(key);
    }
  }

  /** A batch failed for good: the transaction cannot commit or, fenced, the producer is done. */
  batchFailed(error) {
    const what = reaction('Produce', error.error);
    if (what === 'fenced') {
      this._fail(what, new ProducerFencedError(`${error.message}; a newer producer with the same transactional id ` +
        'fenced this one: close it', error.error));
    } else if (error.error === 'INVALID_PRODUCER_EPOCH') {
      this._fail(what, new TransactionAbortableError(`${error.message}; the transaction ended under this producer: ` +
        `its coordinator aborted it after transactionTimeoutMs (${this.timeoutMs} ms), unless a newer producer with ` +
        'the same transactional id fenced this one. abortTransaction() goes on with the next epoch, or throws ' +
        'ProducerFencedError', error.error));
    } else {
      this._fail(what, error); // while aborting, or once failed, this changes nothing
    }
  }

  // -- calls to the coordinators ---------------------------------------------------------------------

  async initialize(timeoutMs) {
    const response = await this._call('InitProducerId', {
      transactional_id: this.transactionalId, transaction_timeout_ms: this.timeoutMs, producer_id: -1,
      producer_epoch: -1,
    }, (r) => [errorName(r.error_code)], timeoutMs);
    this._take('InitProducerId', errorName(response.error_code), response.error_message);
    this._takeProducer(response.producer_id, response.producer_epoch, response.transaction_version);
    this._finish('initialized');
    this.log.info(`transactional id ${this.transactionalId}: producer id ${this.producerId}, epoch ` +
      `${this.producerEpoch}, transaction version ${this.transactionVersion}`);
  }

  /** AddOffsetsToTxn at the transaction coordinator, then TxnOffsetCommit at the group's. */
  async sendOffsets(offsets, group, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    this.started = true;
    const added = await this._call('AddOffsetsToTxn', {
      transactional_id: this.transactionalId, producer_id: this.producerId, producer_epoch: this.producerEpoch,
      group_id: group.groupId,
    }, (r) => [errorName(r.error_code)], timeoutMs);
    this._take('AddOffsetsToTxn', errorName(added.error_code), added.error_message);
    const request = {
      transactional_id: this.transactionalId, group_id: group.groupId, producer_id: this.producerId,
      producer_epoch: this.producerEpoch, member_id: group.memberId, member_epoch: group.memberEpoch,
      topics: offsetCommitTopics(offsets),
    };
    const response = await this._call('TxnOffsetCommit', request, commitCodes, Math.max(deadline - Date.now(), 1),
      this.groups, group.groupId);
    const results = new Map();
    for (const topic of response.topics) {
      for (const p of topic.partitions) {
        results.set(partitionKey(topic.topic, p.partition),
          [errorName(p.error_code), `${topic.topic}-${p.partition}: ${p.error_message}`]);
      }
    }
    for (const key of offsets.keys()) {
      if (!results.has(key)) results.set(key, ['UNKNOWN_SERVER_ERROR', `${printable(key)}: the answer left it out`]);
    }
    const [code, message] = worst('TxnOffsetCommit', results.values());
    this._take('TxnOffsetCommit', code, message);
  }

  /** EndTxn (when the coordinator may know of the transaction), then READY with the next epoch. */
  async end(commit, timeoutMs) {
    const deadline = Date.now() + timeoutMs;
    if (this.addCall !== null) await this.addCall;
    if (this.started) {
      const response = await this._call('EndTxn', {
        transactional_id: this.transactionalId, producer_id: this.producerId, producer_epoch: this.producerEpoch,
        committed: commit,
      }, (r) => [errorName(r.error_code)], Math.max(deadline - Date.now(), 1));
      this._take('EndTxn', errorName(response.error_code), response.error_message);
      this._takeProducer(response.producer_id, response.producer_epoch, response.transaction_version);
    }
    this.fresh.clear();
    this.added.clear();
    this.started = false;
    this.error = null;
    this._finish('ended');
    this.stats[commit ? 'transactionsCommitted' : 'transactionsAborted']++;
    this.log.info(`transactional id ${this.transactionalId}: transaction ${commit ? 'committed' : 'aborted'}; ` +
      `next epoch ${this.producerEpoch}`);
  }

  _takeProducer(producerId, producerEpoch, transactionVersion) {
    if (producerId >= 0 && producerEpoch >= 0) {
      this.producerId = producerId;
      this.producerEpoch = producerEpoch;
      this.transactionVersion = Math.max(1, transactionVersion || 0); // 0: a coordinator that does not say
    }
    this.useProducer(this.producerId, this.producerEpoch);
  }

  _finish(event) {
    const after = nextState(this.state, event);
    if (after === null) throw this.refusal(event); // the application cannot get here; a fatal error can
    this.state = after;
  }

  /** A call to the coordinator until answered (callUntilAnswered); timed out, the state stays as it was. */
  _call(method, request, codesOf, timeoutMs, coordinators = this.transactions, key = this.transactionalId) {
    return callUntilAnswered({ coordinators, key, method, request, codesOf, timeoutMs,
      retryBackoffMs: this.retryBackoffMs, what: `transactional id ${this.transactionalId}` });
  }

  /** An answer's code: done, or the error it puts the producer in (thrown). */
  _take(method, code, message) {
    const what = reaction(method, code);
    if (what === 'done') return;
    const detail = `${method} for transactional id ${this.transactionalId} failed with ${code}` +
      (message ? `: ${message}` : '');
    let error;
    if (what === 'fenced') {
      error = new ProducerFencedError(`${detail}; a newer producer with the same transactional id fenced this one: ` +
        'close it', code);
    } else if (what === 'abortable') {
      error = new TransactionAbortableError(`${detail}; abort the transaction`, code);
    } else {
      error = new TransactionFatalError(`${detail}; the producer cannot go on: close it`, code);
    }
    this._fail(what, error);
    throw error;
  }

  _fail(what, error) {
    const after = nextState(this.state, what === 'abortable' ? 'abortable' : 'fatal');
    if (after === null || (after === this.state && this.error !== null)) return; // the first error stands
    if (after === 'ABORTING') return; // a batch given up while aborting: expected
    this.state = after;
    this.error = error;
    this.log.warn(`transactional id ${this.transactionalId}: ${error.message}`);
    this.wakeup();
  }
}

/**
 * Call `method` at the coordinator of `key` until its answer is not one to retry (reaction()), or
 * `timeoutMs` passed: then it throws REQUEST_TIMED_OUT and the caller's call may be made again.
 * CONCURRENT_TRANSACTIONS is retried from 1 ms, doubling (the last transaction ends within
 * milliseconds); the rest after retryBackoffMs.
 */
async function callUntilAnswered({ coordinators, key, method, request, codesOf, timeoutMs, retryBackoffMs, what }) {
  const deadline = Date.now() + timeoutMs;
  let backoffMs = 1;
  for (;;) {
    let last;
    try {
      const response = await coordinators.call(key, method, request, (r) => codesOf(r)[0]);
      const retried = codesOf(response).find((code) => ['retry', 'findCoordinator'].includes(reaction(method, code)));
      if (retried === undefined) return response;
      last = retried;
    } catch (error) {
      if (!(error instanceof ReplogError) || !error.retriable) throw error;
      last = error.message;
    }
    const waitMs = last === 'CONCURRENT_TRANSACTIONS' ? backoffMs : retryBackoffMs;
    if (Date.now() + waitMs > deadline) {
      throw new ReplogError(`${method} for ${what} did not succeed within ${timeoutMs} ms (last: ${last}); call it ` +
        'again', 'REQUEST_TIMED_OUT');
    }
    await sleep(waitMs);
    backoffMs = Math.min(backoffMs * 2, retryBackoffMs);
  }
}

const ABORT_MARKER = 0; // a control record's type (its key: version int16, type int16): 0 ABORT, 1 COMMIT

/**
 * A read_committed consumer's view of one Fetch answer's batches, walked in offset order: a
 * transaction counts as aborted for its producer from the first offset the answer lists for it on;
 * that producer's transactional batches are dropped until its ABORT marker closes it; a control
 * batch is never handed out (replog/core/txn/read_committed.py, and Kafka's consumer, do the same).
 */
class AbortedTransactions {
  /** @param {{producer_id: number, first_offset: number}[]} listed the answer's aborted_transactions */
  constructor(listed) {
    this.upcoming = [...(listed ?? [])].sort((a, b) => a.first_offset - b.first_offset);
    this.aborting = new Set(); // producers inside an aborted transaction
  }

  /** Whether the batch's records go to the application. */
  keeps(batch) {
    while (this.upcoming.length && this.upcoming[0].first_offset <= batch.lastOffset) {
      this.aborting.add(this.upcoming.shift().producer_id);
    }
    if (batch.isControl) {
      const key = batch.records[0]?.key;
      if (key && key.length >= 4 && key.readInt16BE(2) === ABORT_MARKER) this.aborting.delete(batch.producerId);
      return false;
    }
    return !(batch.isTransactional && this.aborting.has(batch.producerId));
  }
}

function addPartitionsCodes(response) {
  return [errorName(response.error_code), ...response.results.map((r) => errorName(r.error_code))];
}

function commitCodes(response) {
  return response.topics.flatMap((t) => t.partitions.map((p) => errorName(p.error_code)));
}

function printable(key) {
  const { topic, partition } = splitKey(key);
  return `${topic}-${partition}`;
}

module.exports = {
  AbortedTransactions, STATES, TRANSITIONS, TransactionManager, callUntilAnswered, groupMetadataOf, nextState, reaction,
};
