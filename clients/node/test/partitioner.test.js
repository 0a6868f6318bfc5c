'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { StickyPartitioner, murmur2, partitionForKey } = require('../lib/partitioner');

test('murmur2 gives what Kafka\'s Utils.murmur2 gives', () => {
  // Values from Kafka's UtilsTest and from replog's Python partitioner.
  assert.strictEqual(murmur2(Buffer.from('21')), -973932308);
  assert.strictEqual(murmur2(Buffer.from('foobar')), -790332482);
  assert.strictEqual(murmur2(Buffer.from('a-little-bit-long-string')), -985981536);
  assert.strictEqual(murmur2(Buffer.from('a-little-bit-longer-string')), -1486304829);
  assert.strictEqual(partitionForKey('abcd', 12), 8);
});

test('records without a key stay on one partition until switchBytes went there', () => {
  const sticky = new StickyPartitioner(1000);
  const first = sticky.partition('t', 6, [0, 1, 2, 3, 4, 5]);
  sticky.record('t', 6, 999, [0, 1, 2, 3, 4, 5]);
  assert.strictEqual(sticky.partition('t', 6, [0, 1, 2, 3, 4, 5]), first);
  sticky.record('t', 6, 1, [0, 1, 2, 3, 4, 5]);
  assert.notStrictEqual(sticky.partition('t', 6, [0, 1, 2, 3, 4, 5]), first);
});
