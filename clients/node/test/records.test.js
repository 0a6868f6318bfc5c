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

/** Batches that appending `values` one record at a time gives: the same limit and budget rules. */
function oneByOne(values, limitBytes, budgetBytes) {
  const batches = [];
  let builder = null;
  let share = 0;
  for (const value of values) {
    let size = builder === null || share >= budgetBytes ? -1 : builder.append({ key: null, value }, limitBytes);
    if (size < 0) {
      if (builder !== null) batches.push(builder.build());
      builder = new BatchBuilder({ baseTimestamp: 1700000000000 });
      share = 0;
      size = builder.append({ key: null, value });
    }
    share += size;
  }
  batches.push(builder.build());
  return batches;
}

test('appendValues builds byte for byte the batches that append gives one value at a time', () => {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const values = Array.from({ length: 3000 }, (_, i) => {
    const pick = random();
    if (pick < 0.05) return null;
    if (pick < 0.15) return `value-${i}-é`;
    return Buffer.alloc(Math.floor(random() * 300), i & 0xff); // lengths on both sides of a 1-byte varint
  });
  for (const [limitBytes, budgetBytes] of [[Infinity, Infinity], [4096, Infinity], [65536, 5000], [200, 1]]) {
    const batches = [];
    let from = 0;
    while (from < values.length) {
      const builder = new BatchBuilder({ baseTimestamp: 1700000000000 });
      const next = builder.appendValues(values, from, limitBytes, budgetBytes);
      assert.ok(next > from, 'an empty batch takes at least one value');
      batches.push(builder.build());
      from = next;
    }
    assert.deepStrictEqual(batches, oneByOne(values, limitBytes, budgetBytes), `limit ${limitBytes}, budget ${budgetBytes}`);
    assert.ok(batches.every((b) => decodeBatches(b).length === 1));
  }
});

test('appendValues continues a batch and reports what it appended; a bad value ends it, and throws when first', () => {
  const builder = new BatchBuilder({ baseTimestamp: 5 });
  builder.append({ key: 'k', value: 'first' });
  const before = builder.sizeBytes;
  const values = [Buffer.from('a'), 'b', 42, Buffer.from('c')];
  assert.strictEqual(builder.appendValues(values, 0), 2);
  assert.strictEqual(builder.lastAppendedBytes, builder.sizeBytes - before);
  assert.throws(() => builder.appendValues(values, 2), /value must be a Buffer, a string or null, not number/);
  assert.strictEqual(builder.appendValues(values, 3), 4);
  const [batch] = decodeBatches(builder.build());
  assert.deepStrictEqual(batch.records.map((r) => [r.offset, r.key && r.key.toString(), r.value.toString()]),
    [[0, 'k', 'first'], [1, null, 'a'], [2, null, 'b'], [3, null, 'c']]);
});
