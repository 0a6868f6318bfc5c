'use strict';
// replog's Node.js client: a Producer (idempotent, or transactional) and a Consumer (with consumer
// groups, read_committed or not) on the gRPC API of proto/, and an Admin that ends prepared transactions.

const { Admin } = require('./admin');
const { Consumer } = require('./consumer');
const { Producer } = require('./producer');
const {
  ProducerFencedError, ReplogError, RETRIABLE, TransactionAbortableError, TransactionFatalError, TransactionStateError,
} = require('./errors');
const { BatchBuilder, CorruptBatchError, decodeBatches, encodeBatch } = require('./records');
const { murmur2, partitionForKey } = require('./partitioner');
const { crc32c } = require('./crc32c');

module.exports = {
  Admin,
  BatchBuilder,
  Consumer,
  CorruptBatchError,
  Producer,
  ProducerFencedError,
  RETRIABLE,
  ReplogError,
  TransactionAbortableError,
  TransactionFatalError,
  TransactionStateError,
  crc32c,
  decodeBatches,
  encodeBatch,
  murmur2,
  partitionForKey,
};
