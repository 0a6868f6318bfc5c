'use strict';
// The Node producer writing COUNT keyed records ("key-<i>" -> "value-<i>") with acks=all, RATE
// records per second at most (0: as fast as it can). Each acknowledgement is written at once to
// ACKS_FILE as a JSON line [i, partition, offset], so that a test can act halfway; the last line of
// stdout is a summary {acked, failed, errors, metrics}. A small BATCH_SIZE_BYTES fills batches fast,
// so that several of a partition are in flight at once.
//   node produce.js BOOTSTRAP TOPIC COUNT RATE ACKS_FILE [BATCH_SIZE_BYTES]
const fs = require('node:fs');
const { Producer } = require('../../../clients/node');

const TICK_MS = 20;

async function main() {
  const [bootstrap, topic, count, rate, acksFile, batchSizeBytes = '65536'] = process.argv.slice(2);
  const total = Number(count);
  const out = fs.openSync(acksFile, 'w');
  const producer = new Producer(bootstrap, { acks: 'all', deliveryTimeoutMs: 60000, batchSizeBytes: Number(batchSizeBytes) });
  const summary = { acked: 0, failed: 0, errors: [] };
  const sends = [];
  const send = (i) => producer.send({ topic, key: `key-${i}`, value: `value-${i}` }).then(
    ({ partition, offset }) => {
      summary.acked++;
      fs.writeSync(out, `${JSON.stringify([i, partition, offset])}\n`);
    },
    (error) => {
      summary.failed++;
      if (summary.errors.length < 5) summary.errors.push(error.message);
    });
  const perTick = Number(rate) > 0 ? Math.max(1, Math.round((Number(rate) * TICK_MS) / 1000)) : total;
  for (let i = 0; i < total;) {
    const started = Date.now();
    for (const end = Math.min(total, i + perTick); i < end; i++) sends.push(send(i));
    if (i < total) await new Promise((resolve) => setTimeout(resolve, Math.max(0, TICK_MS - (Date.now() - started))));
  }
  await Promise.all(sends);
  await producer.close();
  fs.closeSync(out);
  process.stdout.write(`${JSON.stringify({ ...summary, metrics: producer.metrics() })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
