'use strict';
// One member of a consumer group in Node, the twin of tests/integration/group_member.py: it writes
// JSON lines to LOG (started, assigned, revoked, lost, records with [partition, offset] pairs,
// committed, closed), commits what it read after every poll and before it gives partitions up
// (autoCommit), and leaves the group on SIGTERM.
//   node group_member.js BOOTSTRAP GROUP TOPIC LOG
const fs = require('node:fs');
const { Consumer } = require('../../../clients/node');

async function main() {
  const [bootstrap, group, topic, log] = process.argv.slice(2);
  const out = fs.openSync(log, 'a');
  const write = (event, fields = {}) => fs.writeSync(out, `${JSON.stringify({ t: Date.now() / 1000, event, ...fields })}\n`);
  const partitionsOf = (tps) => tps.map((tp) => tp.partition).sort((a, b) => a - b);
  let stopping = false;
  process.on('SIGTERM', () => { stopping = true; });
  write('started', { pid: process.pid });
  const consumer = new Consumer(bootstrap, {
    groupId: group,
    autoOffsetReset: 'earliest',
    onAssigned: (tps) => write('assigned', { partitions: partitionsOf(tps) }),
    onRevoked: (tps) => write('revoked', { partitions: partitionsOf(tps) }),
    onLost: (tps) => write('lost', { partitions: partitionsOf(tps) }),
  });
  consumer.subscribe([topic]);
  while (!stopping) {
    try {
      const records = await consumer.poll(100);
      if (records.length === 0) continue;
      write('records', { read: records.map((r) => [r.partition, r.offset]) });
      await consumer.commit();
      write('committed', {});
    } catch (error) {
      write('error', { reason: error.message });
    }
  }
  await consumer.close();
  write('closed', { metrics: consumer.metrics() });
  fs.closeSync(out);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
