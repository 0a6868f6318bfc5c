'use strict';
// The Node client's producer as `replog bench produce` measures the Python one: COUNT records of
// SIZE random bytes without a key (sticky partitions), acks=all (idempotent, the default), into an
// existing topic, handed over CHUNK_RECORDS at a time with sendMany (as the Python bench uses
// send_many), as fast as the producer takes them; at most PENDING_BYTES of values wait for their
// acknowledgement at a time, the memory the Python producer buffers by default (buffer_memory).
// Prints one JSON line: records_per_s, mb_per_s, elapsed_s, metrics.
//   node bench/node_producer.js BOOTSTRAP TOPIC COUNT SIZE [BATCH_SIZE_BYTES]
const crypto = require('node:crypto');
const { Producer } = require('../clients/node');

const CHUNK_RECORDS = 10000;
const PENDING_BYTES = 32 * 1024 * 1024;
const MiB = 1024 * 1024;

async function main() {
  const [bootstrap, topic, count, size, batchSizeBytes = String(MiB)] = process.argv.slice(2);
  const total = Number(count);
  const value = crypto.randomBytes(Number(size));
  const producer = new Producer(bootstrap, { acks: 'all', batchSizeBytes: Number(batchSizeBytes),
    maxRequestBytes: 4 * Number(batchSizeBytes) });
  await producer.send({ topic, value }); // metadata and the producer id, before the clock starts
  let failed = null;
  const chunks = [];
  const started = process.hrtime.bigint();
  const chunk = new Array(CHUNK_RECORDS).fill(value);
  for (let sent = 0; sent < total; sent += CHUNK_RECORDS) {
    const values = total - sent >= CHUNK_RECORDS ? chunk : chunk.slice(0, total - sent);
    chunks.push(producer.sendMany(topic, values).catch((error) => { failed = failed ?? error; }));
    while (chunks.length * CHUNK_RECORDS * Number(size) > PENDING_BYTES) await chunks.shift();
  }
  await Promise.all(chunks);
  await producer.flush();
  const elapsedS = Number(process.hrtime.bigint() - started) / 1e9;
  await producer.close();
  if (failed) throw failed;
  process.stdout.write(`${JSON.stringify({
    records_per_s: Math.round((total / elapsedS) * 10) / 10,
    mb_per_s: Math.round(((total * Number(size)) / elapsedS / MiB) * 100) / 100,
    elapsed_s: Math.round(elapsedS * 1000) / 1000,
    metrics: producer.metrics(),
  })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
