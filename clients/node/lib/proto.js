'use strict';
// The replog API, loaded at run time from the .proto files with @grpc/proto-loader: nothing but
// proto/ is needed to talk to replog. Field names stay as the protos spell them (snake_case),
// enums arrive as their names (ERROR_CODE_NONE, ...), int64 as numbers and bytes as Buffers.

const fs = require('node:fs');
const path = require('node:path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');

// In the repository the protos sit two levels above clients/node; REPLOG_PROTO_DIR points elsewhere.
const DEFAULT_PROTO_DIR = path.resolve(__dirname, '..', '..', '..', 'proto');
const SERVICE_CONFIG_PATH = path.resolve(__dirname, '..', '..', 'service-config.json');
const FILES = [
  'replog/api/common/v1/common.proto',
  'replog/api/metadata/v1/metadata.proto',
  'replog/api/broker/v1/broker.proto',
  'replog/api/coordinator/v1/coordinator.proto',
  'replog/api/controller/v1/controller.proto',
];
const FLOW_CONTROL_WINDOW_BYTES = 16 * 1024 * 1024;
const LOAD_OPTIONS = { keepCase: true, longs: Number, enums: String, bytes: Buffer, defaults: true, oneofs: true };

let loaded = null;

function api(protoDir = process.env.REPLOG_PROTO_DIR || DEFAULT_PROTO_DIR) {
  if (loaded && loaded.protoDir === protoDir) return loaded;
  if (!fs.existsSync(path.join(protoDir, FILES[0]))) {
    throw new Error(`the replog protos are not in ${protoDir}: set REPLOG_PROTO_DIR to the proto/ directory`);
  }
  const definition = protoLoader.loadSync(FILES, { ...LOAD_OPTIONS, includeDirs: [protoDir] });
  const root = grpc.loadPackageDefinition(definition).replog.api;
  loaded = {
    protoDir,
    MetadataService: root.metadata.v1.MetadataService,
    BrokerService: root.broker.v1.BrokerService,
    CoordinatorService: root.coordinator.v1.CoordinatorService,
    ControllerService: root.controller.v1.ControllerService,
  };
  return loaded;
}

/** Channel options: the shared service config (deadlines and retry policies), message size limits. */
function channelOptions(maxMessageBytes = 64 * 1024 * 1024) {
  return {
    'grpc.service_config': fs.readFileSync(SERVICE_CONFIG_PATH, 'utf8'),
    'grpc.max_send_message_length': maxMessageBytes,
    'grpc.max_receive_message_length': maxMessageBytes,
    'grpc.keepalive_time_ms': 30000,
    // HTTP/2's default window is 64 KiB a stream: a 2 MiB Fetch answer would stop for a WINDOW_UPDATE
    // every 64 KiB. Python's grpc grows its windows as it measures the link; grpc-js takes a size.
    'grpc-node.flow_control_window': FLOW_CONTROL_WINDOW_BYTES,
  };
}

module.exports = { api, channelOptions };
