'use strict';
// Write a few keyed records with acks=all, then read them back in a consumer group.
//   replog dev up && replog topics create orders --partitions 6 --replication-factor 3
//   node examples/produce-consume.js [BOOTSTRAP] [TOPIC]
// BOOTSTRAP defaults to REPLOG_BOOTSTRAP, else the metadata service in .replog/cluster.json.
const fs = require('node:fs');
const path = require('node:path');
const { Consumer, Producer } = require('..');

function bootstrapAddress() {
  if (process.argv[2]) return process.argv[2];
  if (process.env.REPLOG_BOOTSTRAP) return process.env.REPLOG_BOOTSTRAP;
  for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
    const state = path.join(dir, '.replog', 'cluster.json');
    if (fs.existsSync(state)) return JSON.parse(fs.readFileSync(state, 'utf8')).metadata[0].address;
    if (path.dirname(dir) === dir) break;
  }
  throw new Error('no cluster found: pass BOOTSTRAP (host:port of a metadata service) or set REPLOG_BOOTSTRAP');
}

async function main() {
  const bootstrap = bootstrapAddress();
  const topic = process.argv[3] ?? 'orders';

  const producer = new Producer(bootstrap, { acks: 'all' });
  const acks = await Promise.all(['apple', 'banana', 'cherry'].map((fruit, i) =>
    producer.send({ topic, key: `customer-${i}`, value: `${fruit} x${i + 1}` })));
  for (const { partition, offset } of acks) console.log(`written to ${topic}-${partition} at offset ${offset}`);
  await producer.close();

  const consumer = new Consumer(bootstrap, { groupId: 'node-example', autoOffsetReset: 'earliest' });
  consumer.subscribe([topic]);
  let read = 0;
  const deadline = Date.now() + 15000;
  while (read < acks.length && Date.now() < deadline) {
    for (const record of await consumer.poll(500)) {
      console.log(`read ${record.topic}-${record.partition}@${record.offset} ${record.key}: ${record.value}`);
      read++;
    }
  }
  await consumer.close(); // commits what was read and leaves the group at once
}

main().catch((error) => {
  console.error(`error: ${error.message}`);
  process.exit(1);
});
