'use strict';
// Node's transactional producers and read_committed consumer on a real cluster. Producer A and
// producer B write interleaved transactions to TOPIC; A aborts ("aborted-<i>") while B commits
// ("b-<i>"); A's next transaction commits ("a-<i>") with the offset 42 of TOPIC-0 for GROUP; then a
// second instance of A's transactional id fences A in the middle of a transaction ("fenced") and
// commits its own ("z"). A read_committed and a read_uncommitted consumer read TOPIC from the start.
// The last line of stdout is a summary {committed: [[partition, offset, value]], uncommitted: [...], ...}.
//   node transactions.js BOOTSTRAP TOPIC PARTITIONS GROUP
const {
  Consumer, Producer, ProducerFencedError, TransactionStateError,
} = require('../../../clients/node');

const COUNT = 100;
const READ_DEADLINE_MS = 60000;

function producer(bootstrap, transactionalId) {
  return new Producer(bootstrap, { transactionalId, lingerMs: 2, deliveryTimeoutMs: 60000 });
}

async function readAll(bootstrap, topic, partitions, isolationLevel, count) {
  const consumer = new Consumer(bootstrap, { isolationLevel, autoOffsetReset: 'earliest' });
  consumer.assign([...Array(partitions).keys()].map((partition) => ({ topic, partition })));
  const read = [];
  const deadline = Date.now() + READ_DEADLINE_MS;
  while (read.length < count && Date.now() < deadline) {
    for (const r of await consumer.poll(500)) read.push([r.partition, r.offset, String(r.value)]);
  }
  for (const r of await consumer.poll(300)) read.push([r.partition, r.offset, String(r.value)]); // nothing more
  const { abortedRecordsDropped } = consumer.metrics();
  await consumer.close();
  return { read, abortedRecordsDropped };
}

async function refusedAs(promise) {
  try {
    await promise;
    return null;
  } catch (error) {
    return error.name;
  }
}

async function main() {
  const [bootstrap, topic, partitionCount, group] = process.argv.slice(2);
  const partitions = Number(partitionCount);
  const summary = {};
  const a = producer(bootstrap, 'node-txn-a');
  const b = producer(bootstrap, 'node-txn-b');
  summary.sendBeforeInit = await refusedAs(a.send({ topic, value: 'never' }));
  await Promise.all([a.initTransactions(), b.initTransactions()]);

  a.beginTransaction();
  b.beginTransaction();
  const sends = [];
  for (let i = 0; i < COUNT; i++) {
    sends.push(a.send({ topic, key: `k${i}`, value: `aborted-${i}` }));
    sends.push(b.send({ topic, key: `k${i}`, value: `b-${i}` }));
  }
  await Promise.all(sends);
  await a.abortTransaction();
  await b.commitTransaction();
  summary.sendOutsideTransaction = await refusedAs(b.send({ topic, value: 'never' }));

  a.beginTransaction();
  for (let i = 0; i < COUNT; i++) a.send({ topic, key: `k${i}`, value: `a-${i}` }).catch(() => {});
  await a.sendOffsetsToTransaction([{ topic, partition: 0, offset: 42 }], group);
  await a.commitTransaction();
  summary.aMetrics = a.metrics();

  a.beginTransaction();
  await a.send({ topic, partition: 0, value: 'fenced' });
  const a2 = producer(bootstrap, 'node-txn-a');
  await a2.initTransactions();
  summary.fencedCommit = await refusedAs(a.commitTransaction());
  summary.fencedIsProducerFencedError = false;
  try {
    a.beginTransaction();
  } catch (error) {
    summary.fencedIsProducerFencedError = error instanceof ProducerFencedError;
  }
  a2.beginTransaction();
  await a2.send({ topic, partition: 1, value: 'z' });
  await a2.commitTransaction();
  summary.beginTwice = null;
  a2.beginTransaction();
  try {
    a2.beginTransaction();
  } catch (error) {
    summary.beginTwice = error instanceof TransactionStateError ? error.message : String(error);
  }
  await a2.abortTransaction();

  const committed = await readAll(bootstrap, topic, partitions, 'read_committed', 2 * COUNT + 1);
  summary.committed = committed.read;
  summary.abortedRecordsDropped = committed.abortedRecordsDropped;
  summary.uncommitted = (await readAll(bootstrap, topic, partitions, 'read_uncommitted', 3 * COUNT + 2)).read;
  await Promise.all([a.close(), a2.close(), b.close()]);
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
