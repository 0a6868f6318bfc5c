'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { Admin, Consumer, Producer, TransactionStateError } = require('../lib');
const { TransactionManager, groupMetadataOf } = require('../lib/transactions');

function refusedConfig(options, says) {
  assert.throws(() => new Producer('127.0.0.1:1', options), (error) => {
    assert.strictEqual(error.error, 'INVALID_CONFIG');
    assert.match(error.message, says);
    return true;
  });
}

test('a transactional producer is idempotent with acks=all; bad settings are refused when it is made', () => {
  refusedConfig({ transactionalId: '' }, /transactionalId must be a non-empty string/);
  refusedConfig({ transactionalId: 7 }, /transactionalId must be a non-empty string, not 7/);
  refusedConfig({ transactionalId: 'orders', idempotent: false }, /idempotent with acks=all/);
  refusedConfig({ transactionalId: 'orders', acks: 1 }, /acks=all/);
  refusedConfig({ transactionalId: 'orders', transactionTimeoutMs: 0 }, /transactionTimeoutMs must be a positive/);
  assert.throws(() => new Consumer('127.0.0.1:1', { isolationLevel: 'committed' }),
    /isolationLevel must be read_uncommitted or read_committed, not committed/);
});

test('calls out of order are refused with what to do, and nothing moves', async () => {
  const producer = new Producer('127.0.0.1:1', { transactionalId: 'orders' });
  await assert.rejects(producer.send({ topic: 't', value: 'v' }),
    (error) => error instanceof TransactionStateError && /call initTransactions\(\) first/.test(error.message));
  assert.throws(() => producer.beginTransaction(), /refused in state UNINITIALIZED/);
  await assert.rejects(producer.commitTransaction(), /commitTransaction\(\) is refused in state UNINITIALIZED/);
  assert.strictEqual(producer.metrics().transactionState, 'UNINITIALIZED');
  const plain = new Producer('127.0.0.1:1');
  await assert.rejects(plain.initTransactions(), /needs a transactional producer: give the transactionalId option/);
  await producer.close();
  await plain.close();
});

function manager() {
  const txn = new TransactionManager({
    transactionalId: 'orders', transactionTimeoutMs: 60000, cluster: {}, requestTimeoutMs: 1000, retryBackoffMs: 10,
    log: { info() {}, warn() {} }, useProducer() {}, wakeup() {},
  });
  txn.state = 'IN_TRANSACTION';
  return txn;
}

test('a failed batch leaves the transaction abortable, a fence leaves the producer fenced, the first error stands', () => {
  const txn = manager();
  const timedOut = Object.assign(new Error('producing to t-0 failed: INVALID_PRODUCER_EPOCH'),
    { error: 'INVALID_PRODUCER_EPOCH' });
  txn.batchFailed(timedOut);
  assert.strictEqual(txn.state, 'ABORTABLE_ERROR');
  assert.match(txn.error.message, /aborted it after transactionTimeoutMs \(60000 ms\)/);
  assert.match(txn.refusal('commitTransaction()').message, /must be aborted \(abortTransaction\(\)\), since/);
  txn.batchFailed(Object.assign(new Error('other'), { error: 'NOT_ENOUGH_REPLICAS' }));
  assert.strictEqual(txn.error.error, 'INVALID_PRODUCER_EPOCH');
  txn.batchFailed(Object.assign(new Error('fenced'), { error: 'PRODUCER_FENCED' }));
  assert.strictEqual(txn.state, 'FATAL_ERROR');
  assert.strictEqual(txn.error.name, 'ProducerFencedError');
  assert.strictEqual(txn.refusal('beginTransaction()'), txn.error);
});

test('batches given up while aborting change nothing', () => {
  const txn = manager();
  txn.move('abort', 'abortTransaction()');
  txn.batchFailed(txn.givenUp('t', 0, 5));
  assert.strictEqual(txn.state, 'ABORTING');
  assert.strictEqual(txn.error, null);
});

test('group metadata is a consumer\'s groupMetadata() or a bare group id', () => {
  assert.deepStrictEqual(groupMetadataOf('billing'), { groupId: 'billing', memberId: '', memberEpoch: -1 });
  assert.deepStrictEqual(groupMetadataOf({ groupId: 'billing', memberId: 'm', memberEpoch: 4 }),
    { groupId: 'billing', memberId: 'm', memberEpoch: 4 });
  assert.throws(() => groupMetadataOf(' '), /needs the consumer's groupMetadata\(\) \(or a group id\)/);
});

test('a prepared transaction takes nothing more and waits for a commit or an abort', () => {
  const empty = manager();
  assert.throws(() => empty.prepared(), /prepareTransaction\(\) is refused: the transaction has written nothing/);
  assert.strictEqual(empty.state, 'IN_TRANSACTION');

  const txn = manager();
  Object.assign(txn, { producerId: 12, producerEpoch: 3 });
  txn.started = true; // it wrote: the coordinator knows of it
  assert.deepStrictEqual(txn.prepared(), { transactionalId: 'orders', producerId: 12, producerEpoch: 3 });
  assert.strictEqual(txn.state, 'PREPARED');
  assert.throws(() => txn.checkSend(), /send\(\) is refused in state PREPARED: the transaction is prepared/);
  assert.throws(() => txn.checkOpen('sendOffsetsToTransaction()'), /refused in state PREPARED/);
  assert.throws(() => txn.prepared(), /prepareTransaction\(\) is refused in state PREPARED/);
  txn.move('commit', 'commitTransaction()');
  assert.strictEqual(txn.state, 'COMMITTING');

  const aborted = manager();
  aborted.started = true;
  aborted.prepared();
  aborted.move('abort', 'abortTransaction()');
  assert.strictEqual(aborted.state, 'ABORTING');
});

test('Admin.endTransaction() refuses what prepareTransaction() did not return, before any call', async () => {
  const admin = new Admin('127.0.0.1:1');
  await assert.rejects(admin.endTransaction({ transactionalId: 'orders' }, { commit: true }),
    /takes what prepareTransaction\(\) returned, \{transactionalId, producerId, producerEpoch\}/);
  await assert.rejects(admin.endTransaction({ transactionalId: 'orders', producerId: 1, producerEpoch: 0 }),
    /needs \{commit: true\} or \{commit: false\}, not undefined/);
  admin.close();
});
