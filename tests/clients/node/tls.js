'use strict';
// The Node client on a TLS cluster, with the security settings given as JSON (or "env": none given,
// so the client reads REPLOG_SSL_*): it creates TOPIC at the controller, produces COUNT records,
// reads them back in a consumer group (the coordinator's channel) and commits; the last line of
// stdout is {created, acked, read, committed} or, when something fails, {failed, error, grpcCode, message}.
//   node tls.js BOOTSTRAP TOPIC COUNT SECURITY_JSON
const { Consumer, Producer } = require('../../../clients/node');
const { Cluster, unary } = require('../../../clients/node/lib/cluster');

const DEADLINE_MS = 60000;

async function createTopic(bootstrap, topic, security) {
  const cluster = new Cluster(bootstrap, { security });
  try {
    await cluster.refresh([]);
    const answer = await unary(cluster.controller(), 'CreateTopics', {
      topics: [{ name: topic, num_partitions: 3, replication_factor: 2 }], timeout_ms: 10000,
    }, 20000);
    return answer.topics[0].error_code;
  } finally {
    cluster.close();
  }
}

async function main() {
  const [bootstrap, topic, count, securityJson] = process.argv.slice(2);
  const security = securityJson === 'env' ? undefined : JSON.parse(securityJson);
  const summary = { created: await createTopic(bootstrap, topic, security) };
  const producer = new Producer(bootstrap, { security, logger: false });
  const sends = [];
  for (let i = 0; i < Number(count); i++) sends.push(producer.send({ topic, key: `key-${i}`, value: `value-${i}` }));
  summary.acked = (await Promise.all(sends)).length;
  await producer.close();

  const consumer = new Consumer(bootstrap, { security, groupId: `${topic}-readers`, autoOffsetReset: 'earliest',
    autoCommit: false, logger: false });
  consumer.subscribe([topic]);
  const values = new Set();
  const deadline = Date.now() + DEADLINE_MS;
  while (values.size < Number(count) && Date.now() < deadline) {
    for (const record of await consumer.poll(500)) values.add(String(record.value));
  }
  await consumer.commit();
  summary.committed = (await consumer.committed([0, 1, 2].map((partition) => ({ topic, partition }))))
    .reduce((sum, c) => sum + (c?.offset ?? 0), 0);
  summary.read = values.size;
  await consumer.close();
  process.stdout.write(`${JSON.stringify(summary)}\n`);
}

main().then(() => process.exit(0), (error) => {
  process.stdout.write(`${JSON.stringify({ failed: true, error: error.error, grpcCode: error.grpcCode, message: error.message })}\n`);
  process.exit(0);
});
