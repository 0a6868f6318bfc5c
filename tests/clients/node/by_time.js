'use strict';
// Records with their own timestamps, read back, found by time, and a partition paused while another is read.
//   node by_time.js BOOTSTRAP TOPIC   (a topic of 2 partitions, empty)
// Prints {read: [[partition, offset, timestamp], ...], found: [...], whilePaused: [...], afterResume: [...]}.
const { Consumer, Producer } = require('../../../clients/node/lib');

const DEADLINE_MS = 30000;

async function pollUntil(consumer, count) {
  const records = [];
  const deadline = Date.now() + DEADLINE_MS;
  while (records.length < count && Date.now() < deadline) records.push(...await consumer.poll(200));
  return records.map((r) => [r.partition, r.offset, r.timestamp]);
}

async function main() {
  const [bootstrap, topic] = process.argv.slice(2);
  const producer = new Producer(bootstrap, { logger: false });
  for (const [partition, timestamp] of [[0, 1000], [0, 3000], [0, 2000], [1, 5000], [1, 6000]]) {
    await producer.send({ topic, partition, timestamp, value: `v${timestamp}` });
  }
  await producer.close();
  const consumer = new Consumer(bootstrap, { autoOffsetReset: 'earliest', logger: false });
  consumer.assign([{ topic, partition: 0 }, { topic, partition: 1 }]);
  consumer.pause([{ topic, partition: 0 }]);
  const whilePaused = await pollUntil(consumer, 2);
  consumer.resume([{ topic, partition: 0 }]);
  const afterResume = await pollUntil(consumer, 3);
  const found = await consumer.offsetsForTimes([{ topic, partition: 0, timestamp: 1500 },
    { topic, partition: 1, timestamp: 0 }]);
  found.push(...await consumer.offsetsForTimes([{ topic, partition: 0, timestamp: 3001 }]));
  await consumer.close();
  process.stdout.write(`${JSON.stringify({ whilePaused, afterResume, found })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
