'use strict';
// A request the controller refuses whole (an AlterConfigs change without an op), as a Node client
// sees it: the gRPC status, its message and the ErrorInfo from grpc-status-details-bin, as JSON.
//   node refused.js BOOTSTRAP
const { Cluster, unary } = require('../../../clients/node/lib/cluster');

async function main() {
  const cluster = new Cluster(process.argv[2]);
  await cluster.refresh([]);
  try {
    await unary(cluster.controller(), 'AlterConfigs', { resources: [{ resource_type: 'CONFIG_RESOURCE_TYPE_TOPIC',
      resource_name: 'any', configs: [{ name: 'retention.ms', value: '1' }] }] }, 10000);
    process.stdout.write('{"refused": false}\n');
  } catch (error) {
    process.stdout.write(`${JSON.stringify({ refused: true, grpcCode: error.grpcCode, error: error.error,
      message: error.message, metadata: error.metadata, retriable: error.retriable })}\n`);
  }
  cluster.close();
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
