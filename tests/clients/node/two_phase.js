'use strict';
// Two-phase commits of a Node transactional producer (KIP-939): four transactions of one
// transactional id on partition 0 of TOPIC, each prepared (prepareTransaction()) and then
//   "admin-commit-<i>"  committed by an Admin after the producer closed, as a coordinator elsewhere would;
//   "admin-abort-<i>"   aborted by an Admin;
//   "self-commit-<i>"   committed by the producer itself (commitTransaction() from PREPARED);
//   "python-<i>"        left open: the prepared transaction is printed for the test to end from Python.
// Prints one JSON line: {refused (what a prepared producer refused), stale (ending a transaction already
// ended by a later one), prepared (the last one's {transactionalId, producerId, producerEpoch})}.
//   node two_phase.js BOOTSTRAP TOPIC TRANSACTIONAL_ID
const { Admin, Producer } = require('../../../clients/node');

const RECORDS = 10;

async function prepared(bootstrap, topic, transactionalId, prefix, then = async () => {}) {
  const producer = new Producer(bootstrap, { transactionalId, logger: false });
  await producer.initTransactions();
  producer.beginTransaction();
  await producer.sendMany(topic, Array.from({ length: RECORDS }, (_, i) => `${prefix}-${i}`), { partition: 0 });
  const transaction = await producer.prepareTransaction();
  await then(producer);
  await producer.close(); // a prepared transaction stays open
  return transaction;
}

async function main() {
  const [bootstrap, topic, transactionalId] = process.argv.slice(2);
  const admin = new Admin(bootstrap);
  const refused = [];
  const committed = await prepared(bootstrap, topic, transactionalId, 'admin-commit', async (producer) => {
    for (const call of [() => producer.send({ topic, partition: 0, value: 'more' }), () => producer.prepareTransaction()]) {
      await call().catch((error) => refused.push(`${error.name}: ${error.message}`));
    }
  });
  await admin.endTransaction(committed, { commit: true });
  await admin.endTransaction(committed, { commit: true }); // a retry answers as the first time

  const aborted = await prepared(bootstrap, topic, transactionalId, 'admin-abort');
  await admin.endTransaction(aborted, { commit: false });

  await prepared(bootstrap, topic, transactionalId, 'self-commit', (producer) => producer.commitTransaction());

  const stale = await admin.endTransaction(committed, { commit: true }).then(() => 'ended',
    (error) => `${error.name} ${error.error}`);
  const last = await prepared(bootstrap, topic, transactionalId, 'python');
  admin.close();
  process.stdout.write(`${JSON.stringify({ refused, stale, prepared: last })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
