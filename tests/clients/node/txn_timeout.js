'use strict';
// A Node transactional producer whose transaction outlives transactionTimeoutMs (1 s): it writes
// "early", prints "written", and waits for a line on stdin (the test sends it once the coordinator
// aborted the transaction). Then it writes "late", tries to commit, aborts, and commits "next" in
// a new transaction. The last line of stdout is a summary {late, commit, commitMessage, next}.
//   node txn_timeout.js BOOTSTRAP TOPIC
const readline = require('node:readline');
const { Producer } = require('../../../clients/node');

async function outcome(promise) {
  try {
    await promise;
    return { ok: true };
  } catch (error) {
    return { ok: false, name: error.name, error: error.error, message: error.message };
  }
}

async function main() {
  const [bootstrap, topic] = process.argv.slice(2);
  const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  const producer = new Producer(bootstrap, { transactionalId: 'node-txn-slow', transactionTimeoutMs: 1000,
    retryBackoffMs: 50 });
  await producer.initTransactions();
  producer.beginTransaction();
  await producer.send({ topic, partition: 0, value: 'early' });
  process.stdout.write('written\n');
  await lines.next(); // the coordinator aborted the transaction

  const summary = {};
  summary.late = await outcome(producer.send({ topic, partition: 0, value: 'late' }));
  summary.commit = await outcome(producer.commitTransaction());
  summary.abort = await outcome(producer.abortTransaction());
  producer.beginTransaction();
  await producer.send({ topic, partition: 0, value: 'next' });
  summary.next = await outcome(producer.commitTransaction());
  summary.metrics = producer.metrics();
  await producer.close();
  process.stdout.write(`${JSON.stringify(summary)}\n`);
  process.exit(0);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
