'use strict';
// The Node producer's bulk form: COUNT values "value-<i>" without a key through sendMany, CHUNK at
// a time; prints {acked, metrics} once every call resolved.
//   node produce_many.js BOOTSTRAP TOPIC COUNT CHUNK
const { Producer } = require('../../../clients/node');

async function main() {
  const [bootstrap, topic, count, chunk] = process.argv.slice(2).map((a, i) => (i < 2 ? a : Number(a)));
  const producer = new Producer(bootstrap, { acks: 'all', batchSizeBytes: 16384 });
  const calls = [];
  for (let start = 0; start < count; start += chunk) {
    const values = Array.from({ length: Math.min(chunk, count - start) }, (_, i) => `value-${start + i}`);
    calls.push(producer.sendMany(topic, values));
  }
  const acked = (await Promise.all(calls)).reduce((a, b) => a + b, 0);
  await producer.close();
  process.stdout.write(`${JSON.stringify({ acked, metrics: producer.metrics() })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
