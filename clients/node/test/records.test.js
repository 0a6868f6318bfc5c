'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { crc32c } = require('../lib/crc32c');
const { BatchBuilder, CorruptBatchError, decodeBatches, encodeBatch } = require('../lib/records');

test('CRC-32C gives the check value of "123456789" and continues across pieces', () => {
  const data = Buffer.from('123456789');
  assert.strictEqual(crc32c(data), 0xe3069283);
  assert.strictEqual(crc32c(data, 4, 9, crc32c(data, 0, 4)), 0xe3069283);
});

test('a batch decodes to the records it was built from, offsets and timestamps included', () => {
  const records = [
    { key: 'k', value: 'hello', headers: [{ key: 'h', value: 'v' }, { key: 'none', value: null }], timestamp: 1700000000000 },
    { key: null, value: null, timestamp: 1700000000005 },
    { key: Buffer.alloc(300, 1), value: Buffer.alloc(70000, 2), timestamp: 1699999999000 },
  ];
  const [batch] = decodeBatches(encodeBatch(records));
  assert.strictEqual(batch.recordsCount, 3);
  assert.strictEqual(batch.maxTimestamp, 1700000000005);
  assert.deepStrictEqual(batch.records.map((r) => [r.offset, r.timestamp]),
    [[0, 1700000000000], [1, 1700000000005], [2, 1699999999000]]);
  assert.strictEqual(batch.records[0].headers[1].value, null);
  assert.strictEqual(batch.records[1].key, null);
  assert.strictEqual(batch.records[2].value.length, 70000);
});

test('gzip batches round-trip; other codecs are refused in words', () => {
  const bytes = new BatchBuilder();
  for (let i = 0; i < 100; i++) bytes.append({ key: null, value: `value ${i}` });
  const gz = bytes.build({ compression: 'gzip' });
  assert.strictEqual(decodeBatches(gz)[0].records[99].value.toString(), 'value 99');
  assert.throws(() => encodeBatch([{ value: 'x' }], { compression: 'zstd' }), /gzip only/);
});

test('a trailing partial batch is left for the next fetch, a flipped bit is caught by the CRC', () => {
  const one = encodeBatch([{ value: 'a' }]);
  const two = Buffer.concat([one, one.subarray(0, one.length - 3)]);
  assert.strictEqual(decodeBatches(two).length, 1);
  const bad = Buffer.from(one);
  bad[bad.length - 1] ^= 1;
  assert.throws(() => decodeBatches(bad), CorruptBatchError);
});

test('a record that would take a batch past its limit is refused, unless the batch is empty', () => {
  const builder = new BatchBuilder();
  assert.ok(builder.append({ value: Buffer.alloc(500) }, 100) > 0);
  assert.strictEqual(builder.append({ value: Buffer.alloc(500) }, 1000), -1);
  assert.strictEqual(builder.count, 1);
  assert.ok(builder.append({ value: Buffer.alloc(10) }, 1000) > 0);
});
