'use strict';
// A Node consumer in GROUP subscribed to the RegExp PATTERN reads until COUNT records came, from the
// start of each partition; the last line of stdout is a summary {read: [[topic, value]]}.
//   node regex.js BOOTSTRAP GROUP PATTERN COUNT
const { Consumer } = require('../../../clients/node');

async function main() {
  const [bootstrap, group, pattern, count] = process.argv.slice(2);
  const consumer = new Consumer(bootstrap, { groupId: group, autoOffsetReset: 'earliest' });
  consumer.subscribe(new RegExp(pattern));
  const read = [];
  const deadline = Date.now() + 60000;
  while (read.length < Number(count) && Date.now() < deadline) {
    for (const r of await consumer.poll(500)) read.push([r.topic, String(r.value)]);
  }
  for (const r of await consumer.poll(300)) read.push([r.topic, String(r.value)]); // nothing more
  await consumer.close();
  process.stdout.write(`${JSON.stringify({ read })}\n`);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
