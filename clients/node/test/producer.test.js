'use strict';
// The producer's sending rules, against a scripted ProduceStream: how many batches of a partition
// fly at once, the order and sequence numbers of retries, and batches that are not full waiting.
const test = require('node:test');
const assert = require('node:assert');
const { Producer } = require('../lib');
const { decodeBatches } = require('../lib/records');

const TOPIC = 'orders';
const BASE_SEQUENCE_AT = 53; // RecordBatch v2: the base sequence's byte offset in the header

/** A producer that knows TOPIC's `partitions` partitions, all led by broker 1, and holds a producer id. */
function producerOn(partitions, options) {
  const producer = new Producer('127.0.0.1:1', { lingerMs: 0, retryBackoffMs: 1, ...options });
  producer.cluster.brokers.set(1, '127.0.0.1:1');
  producer.cluster.topics.set(TOPIC, { error: 'NONE',
    partitions: new Map(Array.from({ length: partitions }, (_, p) => [p, { leader: 1, leaderEpoch: 3 }])) });
  if (producer.idempotent) {
    producer.producerId = 42;
    producer.producerEpoch = 0;
  }
  return producer;
}

/** A producer on one partition, whose ProduceStream requests wait for the test to answer. */
function scripted(options) {
  const warnings = [];
  const logger = { debug() {}, info() {}, warn: (line) => warnings.push(line), error: (line) => warnings.push(line) };
  const producer = producerOn(1, { logger, ...options });
  const cluster = producer.cluster;
  const requests = []; // {sequence, records, answer(errorName, baseOffset)}
  cluster.produceStream = () => ({
    request({ request }) {
      return new Promise((resolve) => {
        const [sent] = request.topics[0].partitions;
        requests.push({
          sequence: sent.records.readInt32BE(BASE_SEQUENCE_AT),
          records: sent.records,
          answer(error, baseOffset = 0) {
            resolve({ response: { node_endpoints: [], topics: [{ topic: TOPIC, partitions: [{
              partition: 0, error_code: `ERROR_CODE_${error}`, error_message: error, base_offset: baseOffset,
            }] }] } });
          },
        });
      });
    },
  });
  return { producer, requests, warnings };
}

/** Wait until `ready()` holds, letting timers and immediates run. */
async function until(ready, what) {
  const deadline = Date.now() + 2000;
  while (!ready()) {
    if (Date.now() > deadline) assert.fail(`never: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 20));
const VALUE = Buffer.alloc(400, 'x'); // two fill a 1,000-byte batch

test('an idempotent producer keeps up to five full batches of a partition in flight, numbered in order', async () => {
  const { producer, requests } = scripted({ batchSizeBytes: 1000 });
  const sent = producer.sendMany(TOPIC, Array(20).fill(VALUE), { partition: 0 });
  await until(() => requests.length === 5, 'five batches in flight');
  await settle();
  assert.strictEqual(requests.length, 5, 'a sixth batch left before the first was answered');
  assert.deepStrictEqual(requests.map((r) => r.sequence), [0, 2, 4, 6, 8]);
  requests[0].answer('NONE', 0);
  await until(() => requests.length === 6, 'the sixth batch once the first is answered');
  assert.strictEqual(requests[5].sequence, 10);
  for (const [i, r] of requests.slice(1).entries()) r.answer('NONE', 2 * (i + 1));
  await until(() => requests.length === 10, 'the last batches');
  for (const r of requests.slice(6)) r.answer('NONE');
  assert.strictEqual(await sent, 20);
  assert.strictEqual(producer.metrics().retries, 0);
  await producer.close();
});

test('a batch back for a retry holds its partition until the rest are back, then all go again in order', async () => {
  const { producer, requests } = scripted({ batchSizeBytes: 1000 });
  const sent = producer.sendMany(TOPIC, Array(12).fill(VALUE), { partition: 0 });
  await until(() => requests.length === 5, 'five batches in flight');
  const first = requests.splice(0);
  first[0].answer('NOT_ENOUGH_REPLICAS'); // not written: the leader refuses the rest as out of order
  first[1].answer('OUT_OF_ORDER_SEQUENCE_NUMBER');
  await settle();
  assert.strictEqual(requests.length, 0, 'a batch left while batches before it were still to be answered');
  for (const r of first.slice(2)) r.answer('OUT_OF_ORDER_SEQUENCE_NUMBER');
  await until(() => requests.length === 5, 'the five batches again');
  assert.deepStrictEqual(requests.map((r) => r.sequence), [0, 2, 4, 6, 8], 'retried out of order or renumbered');
  for (const [i, r] of requests.entries()) assert.ok(r.records.equals(first[i].records), 'a retry is sent as it was');
  for (const r of requests.splice(0)) r.answer('NONE');
  await until(() => requests.length === 1, 'the last batch');
  assert.strictEqual(requests[0].sequence, 10);
  requests[0].answer('NONE');
  assert.strictEqual(await sent, 12);
  assert.strictEqual(producer.metrics().retries, 5);
  assert.strictEqual(producer.metrics().failedRecords, 0);
  await producer.close();
});

test('out of order with no earlier batch to wait for fails the batch, and a new producer id starts afresh', async () => {
  const { producer, requests, warnings } = scripted({ batchSizeBytes: 1000 });
  producer._askProducerId = async () => { // the coordinator's answer
    producer.producerId = 43;
    producer.producerEpoch = 0;
  };
  const lost = producer.send({ topic: TOPIC, partition: 0, value: 'lone' });
  await until(() => requests.length === 1, 'the batch');
  requests[0].answer('OUT_OF_ORDER_SEQUENCE_NUMBER');
  await assert.rejects(lost, (error) => error.error === 'OUT_OF_ORDER_SEQUENCE_NUMBER');
  assert.ok(warnings.some((line) => /sequence broke \(OUT_OF_ORDER_SEQUENCE_NUMBER\)/.test(line)), warnings.join('\n'));
  await until(() => producer.producerId === 43, 'a new producer id');
  const next = producer.send({ topic: TOPIC, partition: 0, value: 'next' });
  await until(() => requests.length === 2, 'the next batch');
  assert.strictEqual(requests[1].sequence, 0);
  requests[1].answer('NONE', 1);
  assert.strictEqual((await next).offset, 1);
  await producer.close();
});

test('a batch that is not full waits while its partition has a batch in flight', async () => {
  const { producer, requests } = scripted({ batchSizeBytes: 100000 });
  const first = producer.send({ topic: TOPIC, partition: 0, value: 'a' });
  await until(() => requests.length === 1, 'the first record');
  const later = [producer.send({ topic: TOPIC, partition: 0, value: 'b' }),
    producer.send({ topic: TOPIC, partition: 0, value: 'c' })];
  await settle();
  assert.strictEqual(requests.length, 1, 'a small batch joined the one in flight');
  requests[0].answer('NONE', 0);
  await until(() => requests.length === 2, 'the records that waited, as one batch');
  assert.strictEqual(requests[1].sequence, 1);
  requests[1].answer('NONE', 1);
  assert.deepStrictEqual((await Promise.all([first, ...later])).map((r) => r.offset), [0, 1, 2]);
  await producer.close();
});

test('without idempotence a partition has one batch in flight', async () => {
  const { producer, requests } = scripted({ batchSizeBytes: 1000, acks: 1 });
  const sent = producer.sendMany(TOPIC, Array(6).fill(VALUE), { partition: 0 });
  await until(() => requests.length === 1, 'the first batch');
  await settle();
  assert.strictEqual(requests.length, 1);
  assert.strictEqual(requests[0].sequence, -1);
  requests[0].answer('NONE');
  await until(() => requests.length === 2, 'the second batch');
  requests[1].answer('NONE');
  await until(() => requests.length === 3, 'the third batch');
  requests[2].answer('NONE');
  assert.strictEqual(await sent, 6);
  await producer.close();
});

test('more than five batches in flight are refused for an idempotent producer', () => {
  for (const bad of [0, 6, 2.5, '5']) {
    assert.throws(() => new Producer('127.0.0.1:1', { maxRequestsPerLeader: bad }),
      (error) => error.error === 'INVALID_CONFIG' && /maxRequestsPerLeader must be a whole number from 1 to 5/.test(error.message));
  }
  assert.strictEqual(new Producer('127.0.0.1:1', { acks: 1, maxRequestsPerLeader: 10 }).inFlightPerPartition, 1);
});

/** A producer on `partitions` partitions, whose ProduceStream answers every request at once. */
function answering(partitions, options) {
  const producer = producerOn(partitions, { logger: { debug() {}, info() {}, warn() {}, error() {} }, ...options });
  const written = []; // [partition, values of one batch]
  const next = new Map(); // partition -> next offset
  producer.cluster.produceStream = () => ({
    async request({ request }) {
      const answers = request.topics[0].partitions.map(({ partition, records }) => {
        const [batch] = decodeBatches(records);
        written.push([partition, batch.records.map((r) => r.value.toString())]);
        const base = next.get(partition) ?? 0;
        next.set(partition, base + batch.records.length);
        return { partition, error_code: 'ERROR_CODE_NONE', error_message: '', base_offset: base };
      });
      return { response: { node_endpoints: [], topics: [{ topic: TOPIC, partitions: answers }] } };
    },
  });
  return { producer, written };
}

test('sendMany fills the sticky partition batch by batch, moving on after each, and delivers every value once in order', async () => {
  const { producer, written } = answering(3, { batchSizeBytes: 1000 });
  const values = Array.from({ length: 500 }, (_, i) => `v${i}`.padEnd(40, '.'));
  assert.strictEqual(await producer.sendMany(TOPIC, values), 500);
  await producer.flush();
  const partitionOf = new Map();
  for (const [partition, batch] of written) for (const value of batch) partitionOf.set(value, partition);
  assert.deepStrictEqual([...partitionOf.keys()].sort(), [...values].sort(), 'every value once');
  for (const p of [0, 1, 2]) {
    const sent = written.filter(([partition]) => partition === p).flatMap(([, batch]) => batch);
    assert.deepStrictEqual(sent, values.filter((v) => partitionOf.get(v) === p), `partition ${p} in the order given`);
  }
  assert.ok(written.every(([, batch]) => batch.length >= 1 && batch.length <= 19), 'no batch past 1,000 bytes: 19 records of 47 bytes and the header');
  // The sticky partitioner moves on once a run reaches 1,000 bytes of records: 22 of 47 bytes.
  const runs = [];
  for (const value of values) {
    const partition = partitionOf.get(value);
    if (runs.length === 0 || runs[runs.length - 1].partition !== partition) runs.push({ partition, length: 0 });
    runs[runs.length - 1].length++;
  }
  assert.deepStrictEqual(runs.map((r) => r.length), [...Array(22).fill(22), 16]);
  assert.strictEqual(producer.metrics().records, 500);
  await producer.close();
});

test('sendMany with a value that is not bytes sends the values before it and fails as a whole', async () => {
  const { producer, written } = answering(1, { batchSizeBytes: 1000 });
  await assert.rejects(producer.sendMany(TOPIC, ['a', 'b', { not: 'bytes' }, 'd']),
    (error) => error.error === 'INVALID_RECORD' && /value must be a Buffer, a string or null, not object/.test(error.message));
  await producer.flush();
  assert.deepStrictEqual(written.flatMap(([, batch]) => batch), ['a', 'b']);
  await producer.close();
});

test('sendMany with batchSizeBytes 0 sends a batch per value and ends', async () => {
  const { producer, written } = answering(2, { batchSizeBytes: 0 });
  assert.strictEqual(await producer.sendMany(TOPIC, ['a', 'b', 'c', 'd']), 4);
  assert.deepStrictEqual(written.map(([, batch]) => batch.length), [1, 1, 1, 1]);
  await producer.close();
});
