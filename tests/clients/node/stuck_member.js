'use strict';
// A Node group member that stops calling poll() (rebalanceTimeoutMs 2 s): it polls until it holds
// partitions, prints "holding", then waits without polling until its onLost callback says the
// partitions were taken from it (60 s at most), prints "left", and once the test sends a line on
// stdin polls again until it holds partitions again. The last line of stdout is a summary
// {held, lost, heldAgain}.
//   node stuck_member.js BOOTSTRAP GROUP TOPIC
const readline = require('node:readline');
const { Consumer } = require('../../../clients/node');

const DEADLINE_MS = 60000;

async function main() {
  const [bootstrap, group, topic] = process.argv.slice(2);
  const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  let lost = null;
  let onLost = () => {};
  const consumer = new Consumer(bootstrap, {
    groupId: group, rebalanceTimeoutMs: 2000, autoOffsetReset: 'earliest',
    onLost: (tps) => { lost = tps.map((tp) => tp.partition).sort(); onLost(); },
  });
  consumer.subscribe([topic]);
  const holdAll = async () => {
    const deadline = Date.now() + DEADLINE_MS;
    while (consumer.assignment().length === 0 && Date.now() < deadline) await consumer.poll(200);
    return consumer.assignment().map((tp) => tp.partition).sort();
  };
  const held = await holdAll();
  process.stdout.write('holding\n');
  await new Promise((resolve) => { // the application is stuck: no poll() until the group took its partitions
    onLost = resolve;
    if (lost !== null) resolve();
    setTimeout(resolve, DEADLINE_MS);
  });
  process.stdout.write('left\n');
  await lines.next();
  const heldAgain = await holdAll();
  await consumer.close();
  process.stdout.write(`${JSON.stringify({ held, lost, heldAgain })}\n`);
  process.exit(0);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
