'use strict';
// The Node client's consumer as `replog bench consume` measures the Python one: COUNT records read
// from the start of every partition of an existing topic (assign, no group), poll() after poll(),
// from the first poll until the last record. Prints one JSON line: records_per_s, mb_per_s, elapsed_s,
// metrics.
//   node bench/node_consumer.js BOOTSTRAP TOPIC PARTITIONS COUNT SIZE
const { Consumer } = require('../clients/node');

const MiB = 1024 * 1024;
const IDLE_MS = 10000;

async function main() {
  const [bootstrap, topic, partitions, count, size] = process.argv.slice(2);
  const total = Number(count);
  const consumer = new Consumer(bootstrap, { autoOffsetReset: 'earliest', logger: false });
  consumer.assign(Array.from({ length: Number(partitions) }, (_, partition) => ({ topic, partition })));
  let received = 0;
  const started = process.hrtime.bigint();
  while (received < total) {
    const records = await consumer.poll(IDLE_MS);
    if (records.length === 0) throw new Error(`only ${received} of ${total} records came back within ${IDLE_MS} ms`);
    received += records.length;
  }
  const elapsedS = Number(process.hrtime.bigint() - started) / 1e9;
  await consumer.close();
  process.stdout.write(`${JSON.stringify({
    records_per_s: Math.round((received / elapsedS) * 10) / 10,
    mb_per_s: Math.round(((received * Number(size)) / elapsedS / MiB) * 100) / 100,
    elapsed_s: Math.round(elapsedS * 1000) / 1000,
    metrics: consumer.metrics(),
  })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
