'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { Consumer, encodeBatch } = require('../lib');

test('a subscription is topic names or a RegExp without flags', () => {
  const consumer = new Consumer('127.0.0.1:1', { groupId: 'g' });
  assert.throws(() => consumer.subscribe(/orders/i), /has flags, which cannot be sent to the coordinator: write them inline/);
  assert.throws(() => consumer.subscribe('orders'), /takes a list of topic names or a RegExp/);
});

/** A consumer of partition 0 of "orders", led by broker 1, whose Fetch calls wait for the test to answer. */
function scriptedConsumer() {
  const consumer = new Consumer('127.0.0.1:1', { autoOffsetReset: 'earliest', logger: false });
  consumer.cluster.brokers.set(1, '127.0.0.1:1');
  consumer.cluster.topics.set('orders', { error: 'NONE', partitions: new Map([[0, { leader: 1, leaderEpoch: 0 }]]) });
  const fetches = []; // {offset, answer(records)}
  consumer.cluster.broker = () => ({
    Fetch(request, options, callback) {
      fetches.push({
        offset: request.topics[0].partitions[0].fetch_offset,
        answer(values, baseOffset) {
          const records = values.length === 0 ? Buffer.alloc(0)
            : encodeBatch(values.map((value) => ({ key: null, value: Buffer.from(value), headers: [] })), { baseOffset });
          callback(null, { node_endpoints: [], topics: [{ topic: 'orders', partitions: [{
            partition: 0, error_code: 'ERROR_CODE_NONE', records, aborted_transactions: [] }] }] });
        },
      });
    },
  });
  consumer.assign([{ topic: 'orders', partition: 0 }]);
  consumer.seek({ topic: 'orders', partition: 0 }, 0);
  return { consumer, fetches };
}

test('the next Fetch leaves before poll() hands out the records of the last one', async () => {
  const { consumer, fetches } = scriptedConsumer();
  const first = consumer.poll(2000);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepStrictEqual(fetches.map((f) => f.offset), [0]);
  fetches[0].answer(['a', 'b', 'c'], 0);
  assert.deepStrictEqual((await first).map((r) => [r.offset, String(r.value)]), [[0, 'a'], [1, 'b'], [2, 'c']]);
  assert.deepStrictEqual(fetches.map((f) => f.offset), [0, 3], 'no Fetch for offset 3 was on its way');
  assert.strictEqual(consumer.position({ topic: 'orders', partition: 0 }), 3);

  fetches[1].answer(['d'], 3);
  const second = await consumer.poll(2000);
  assert.deepStrictEqual(second.map((r) => r.offset), [3]);
  assert.deepStrictEqual(fetches.map((f) => f.offset), [0, 3, 4]);
  await consumer.close();
});

test('an answer for a position the application moved meanwhile (seek) is dropped', async () => {
  const { consumer, fetches } = scriptedConsumer();
  const first = consumer.poll(200);
  await new Promise((resolve) => setImmediate(resolve));
  consumer.seek({ topic: 'orders', partition: 0 }, 10);
  fetches[0].answer(['stale'], 0);
  assert.deepStrictEqual(await first, []);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepStrictEqual(fetches.map((f) => f.offset), [0, 10]);
  fetches[1].answer(['k'], 10);
  assert.deepStrictEqual((await consumer.poll(2000)).map((r) => [r.offset, String(r.value)]), [[10, 'k']]);
  await consumer.close();
});

test('a paused partition is neither fetched nor handed out, and resume() hands out what it held', async () => {
  const { consumer, fetches } = scriptedConsumer();
  const tp = { topic: 'orders', partition: 0 };
  const first = consumer.poll(2000);
  await new Promise((resolve) => setImmediate(resolve));
  consumer.pause([tp]);
  assert.deepStrictEqual(consumer.paused(), [tp]);
  fetches[0].answer(['a', 'b'], 0);
  const resumed = setTimeout(() => consumer.resume([tp]), 150); // while poll() waits
  const started = Date.now();
  assert.deepStrictEqual((await first).map((r) => String(r.value)), ['a', 'b']);
  assert.ok(Date.now() - started >= 100, 'the records were held until resume()');
  clearTimeout(resumed);
  assert.deepStrictEqual(fetches.map((f) => f.offset), [0, 2], 'no Fetch while paused; the next once resumed');
  consumer.pause([tp]);
  fetches[1].answer(['c'], 2);
  assert.deepStrictEqual(await consumer.poll(100), []);
  assert.deepStrictEqual(fetches.map((f) => f.offset), [0, 2]);
  assert.strictEqual(consumer.position(tp), 2);
  consumer.resume([tp]);
  assert.deepStrictEqual((await consumer.poll(100)).map((r) => r.offset), [2]);
  assert.deepStrictEqual(consumer.paused(), []);
  assert.throws(() => consumer.pause([{ topic: 'orders', partition: 9 }]), /orders-9 is not assigned to this consumer/);
  await consumer.close();
});

test('offsetsForTimes asks each leader by time and gives null where no record is that late', async () => {
  const consumer = new Consumer('127.0.0.1:1', { logger: false });
  consumer.cluster.brokers.set(1, '127.0.0.1:1');
  consumer.cluster.topics.set('orders', { error: 'NONE', partitions: new Map([[0, { leader: 1, leaderEpoch: 3 }],
    [1, { leader: 1, leaderEpoch: 3 }]]) });
  const asked = [];
  consumer.cluster.broker = () => ({
    ListOffsets(request, options, callback) {
      asked.push(request.topics[0].partitions.map((p) => [p.partition, p.timestamp_ms]));
      callback(null, { topics: [{ topic: 'orders', partitions: request.topics[0].partitions.map((p) => (
        p.partition === 0
          ? { partition: 0, error_code: 'ERROR_CODE_NONE', offset: 1, timestamp_ms: 3000, leader_epoch: 3 }
          : { partition: 1, error_code: 'ERROR_CODE_NONE', offset: -1, timestamp_ms: -1, leader_epoch: 3 })) }] });
    },
  });
  const found = await consumer.offsetsForTimes([{ topic: 'orders', partition: 1, timestamp: 9000 },
    { topic: 'orders', partition: 0, timestamp: 1500 }]);
  assert.deepStrictEqual(found, [null, { topic: 'orders', partition: 0, offset: 1, timestamp: 3000, leaderEpoch: 3 }]);
  assert.deepStrictEqual(asked, [[[1, 9000], [0, 1500]]], 'one ListOffsets for the leader of both');
  await assert.rejects(consumer.offsetsForTimes([{ topic: 'orders', partition: 0, timestamp: -1 }]),
    /orders-0 must be ms since the Unix epoch, not -1/);
  await assert.rejects(consumer.offsetsForTimes([{ topic: 'orders', partition: 0, timestamp: 1 },
    { topic: 'orders', partition: 0, timestamp: 2 }]), /orders-0 is asked twice; give one time per partition/);
  assert.strictEqual(asked.length, 1, 'nothing was asked of a leader for a refused call');
  await consumer.close();
});
