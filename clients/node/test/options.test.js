'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { Admin, Consumer, Producer } = require('../lib');

function refused(make, says) {
  assert.throws(make, (error) => {
    assert.strictEqual(error.error, 'INVALID_CONFIG');
    assert.strictEqual(error.message, says);
    return true;
  });
}

test('an option a client does not have is refused, with the one that was likely meant', () => {
  refused(() => new Producer('127.0.0.1:1', { linger_ms: 0 }),
    'Producer has no option "linger_ms"; did you mean lingerMs?');
  refused(() => new Producer('127.0.0.1:1', { 'linger.ms': 0 }),
    'Producer has no option "linger.ms"; did you mean lingerMs?');
  refused(() => new Consumer('127.0.0.1:1', { groupID: 'g' }),
    'Consumer has no option "groupID"; did you mean groupId?');
  refused(() => new Consumer('127.0.0.1:1', { autoOfsetReset: 'earliest' }),
    'Consumer has no option "autoOfsetReset"; did you mean autoOffsetReset?');
  refused(() => new Admin('127.0.0.1:1', { frobnicate: true }),
    'Admin has no option "frobnicate"; it takes requestTimeoutMs, retryBackoffMs, clientId, logger, security');
  refused(() => new Producer('127.0.0.1:1', 'acks=all'), 'Producer options must be an object, not "acks=all"');
});

test('milliseconds and bytes must be numbers of 0 or more', () => {
  for (const [bad, shown] of [['5', '"5"'], [-1, '-1'], [NaN, 'NaN'], [Infinity, 'Infinity'], [null, 'null']]) {
    refused(() => new Producer('127.0.0.1:1', { lingerMs: bad }),
      `Producer option lingerMs must be a number of milliseconds (0 or more), not ${shown}`);
  }
  refused(() => new Consumer('127.0.0.1:1', { fetchMaxBytes: '1MB' }),
    'Consumer option fetchMaxBytes must be a number of bytes (0 or more), not "1MB"');
});

test('the options each client documents are taken, and undefined keeps the default', () => {
  const producer = new Producer('127.0.0.1:1', { lingerMs: 0, batchSizeBytes: 0, idempotent: undefined, logger: false,
    security: false, transactionalId: undefined, compression: 'gzip' });
  assert.strictEqual(producer.config.lingerMs, 0);
  assert.strictEqual(producer.config.batchSizeBytes, 0);
  assert.strictEqual(producer.config.requestTimeoutMs, 30000);
  assert.strictEqual(producer.idempotent, true);
  const consumer = new Consumer('127.0.0.1:1', { groupId: 'g', onAssigned: async () => {}, onRevoked: async () => {},
    onLost: async () => {}, fetchMaxWaitMs: undefined, logger: false });
  assert.strictEqual(consumer.config.fetchMaxWaitMs, 500);
  assert.strictEqual(new Admin('127.0.0.1:1', { requestTimeoutMs: 1000 }).config.requestTimeoutMs, 1000);
});
