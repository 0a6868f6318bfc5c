'use strict';
// The README's copier: a consumer in GROUP reads SOURCE under read_committed, and a transactional
// producer writes each poll's records to SINK together with the consumer's next offsets
// (sendOffsetsToTransaction with its groupMetadata()), one transaction per poll, until COUNT
// records are copied. The last line of stdout is a summary {copied, transactions, groupMetadata}.
//   node copier.js BOOTSTRAP SOURCE SINK GROUP COUNT
const { Consumer, Producer, ProducerFencedError } = require('../../../clients/node');

const DEADLINE_MS = 90000;

async function main() {
  const [bootstrap, source, sink, group, count] = process.argv.slice(2);
  const producer = new Producer(bootstrap, { transactionalId: `${group}-copier` });
  await producer.initTransactions();
  const consumer = new Consumer(bootstrap, { groupId: group, isolationLevel: 'read_committed', autoCommit: false,
    autoOffsetReset: 'earliest' });
  consumer.subscribe([source]);
  let copied = 0;
  let transactions = 0;
  let metadata = null;
  const deadline = Date.now() + DEADLINE_MS;
  while (copied < Number(count) && Date.now() < deadline) {
    const records = await consumer.poll(500);
    if (records.length === 0) continue;
    producer.beginTransaction();
    try {
      for (const r of records) {
        producer.send({ topic: sink, partition: r.partition, key: r.key, value: r.value }).catch(() => {});
      }
      const next = new Map(records.map((r) => [r.partition, { topic: r.topic, partition: r.partition, offset: r.offset + 1 }]));
      metadata = consumer.groupMetadata();
      await producer.sendOffsetsToTransaction([...next.values()], metadata);
      await producer.commitTransaction();
      copied += records.length;
      transactions++;
    } catch (error) {
      if (error instanceof ProducerFencedError) throw error;
      await producer.abortTransaction();
      throw error; // nothing here should make a transaction abortable: fail the test with it
    }
  }
  await consumer.close();
  await producer.close();
  process.stdout.write(`${JSON.stringify({ copied, transactions, groupMetadata: metadata })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
