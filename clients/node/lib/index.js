'use strict';
// replog's Node.js client: a Producer and a Consumer (with consumer groups) on the gRPC API of proto/.

const { Consumer } = require('./consumer');
const { Producer } = require('./producer');
const { ReplogError, RETRIABLE } = require('./errors');
const { BatchBuilder, CorruptBatchError, decodeBatches, encodeBatch } = require('./records');
const { murmur2, partitionForKey } = require('./partitioner');
const { crc32c } = require('./crc32c');

module.exports = {
  BatchBuilder,
  Consumer,
  CorruptBatchError,
  Producer,
  RETRIABLE,
  ReplogError,
  crc32c,
  decodeBatches,
  encodeBatch,
  murmur2,
  partitionForKey,
};
