'use strict';
// replog's two error channels (docs/API.md "Errors"): a Kafka ErrorCode per partition, group or
// member in the answers, and a gRPC status for a request refused whole, which carries a
// google.rpc.Status in the `grpc-status-details-bin` trailer with a google.rpc.ErrorInfo whose
// reason is the Kafka error name.

const protobuf = require('protobufjs');

// Kafka marks these RetriableException (replog/core/errors.py keeps the same set; a test compares
// the two): try again after a backoff and, for leader errors, a metadata refresh.
const RETRIABLE = new Set([
  'CORRUPT_MESSAGE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'NOT_LEADER_OR_FOLLOWER',
  'REQUEST_TIMED_OUT',
  'REPLICA_NOT_AVAILABLE',
  'NETWORK_EXCEPTION',
  'COORDINATOR_LOAD_IN_PROGRESS',
  'COORDINATOR_NOT_AVAILABLE',
  'NOT_COORDINATOR',
  'NOT_ENOUGH_REPLICAS',
  'NOT_ENOUGH_REPLICAS_AFTER_APPEND',
  'NOT_CONTROLLER',
  'CONCURRENT_TRANSACTIONS',
  'KAFKA_STORAGE_ERROR',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
  'OFFSET_NOT_AVAILABLE',
  'UNSTABLE_OFFSET_COMMIT',
  'FETCH_SESSION_ID_NOT_FOUND',
  'INVALID_FETCH_SESSION_EPOCH',
]);

// Errors after which the partition's leader is looked up again before the retry (docs/API.md).
const STALE_LEADER = new Set([
  'NOT_LEADER_OR_FOLLOWER',
  'FENCED_LEADER_EPOCH',
  'UNKNOWN_LEADER_EPOCH',
  'LEADER_NOT_AVAILABLE',
  'UNKNOWN_TOPIC_OR_PARTITION',
  'REPLICA_NOT_AVAILABLE',
  'KAFKA_STORAGE_ERROR',
]);

// gRPC status codes after which the same request may be sent again (possibly elsewhere):
// UNAVAILABLE and DEADLINE_EXCEEDED. RESOURCE_EXHAUSTED (a message over the server's limit) and
// INVALID_ARGUMENT would fail the same way again.
const RETRIABLE_STATUS = new Set([14, 4]);

const ERROR_CODE_PREFIX = 'ERROR_CODE_';

/** "ERROR_CODE_NOT_LEADER_OR_FOLLOWER" (as the enum arrives) -> "NOT_LEADER_OR_FOLLOWER". */
function errorName(code) {
  if (code === undefined || code === null || code === 'ERROR_CODE_UNSPECIFIED' || code === 0) {
    return 'UNKNOWN_SERVER_ERROR'; // a peer that forgot to set the field
  }
  if (typeof code === 'number') return 'UNKNOWN_SERVER_ERROR'; // a number this build does not know
  return code.startsWith(ERROR_CODE_PREFIX) ? code.slice(ERROR_CODE_PREFIX.length) : code;
}

class ReplogError extends Error {
  /**
   * @param {string} message one sentence saying what failed
   * @param {string} error Kafka's error name (NOT_LEADER_OR_FOLLOWER, ...)
   * @param {object} [details] grpcCode (for whole-request failures), metadata from ErrorInfo
   */
  constructor(message, error = 'UNKNOWN_SERVER_ERROR', details = {}) {
    super(message);
    this.name = 'ReplogError';
    this.error = error;
    this.grpcCode = details.grpcCode;
    this.metadata = details.metadata ?? {};
  }

  get retriable() {
    if (this.grpcCode !== undefined && RETRIABLE_STATUS.has(this.grpcCode)) return true;
    return RETRIABLE.has(this.error);
  }
}

// A transactional producer's errors (docs/TRANSACTIONS.md), named as Kafka's clients name them.

/** A call the producer's transaction state does not allow (begin twice, send outside a transaction, ...). */
class TransactionStateError extends ReplogError {
  constructor(message, error = 'INVALID_TXN_STATE') {
    super(message, error);
    this.name = 'TransactionStateError';
  }
}

/** The open transaction cannot commit: abortTransaction(), then go on with the next one. */
class TransactionAbortableError extends ReplogError {
  constructor(message, error = 'TRANSACTION_ABORTABLE') {
    super(message, error);
    this.name = 'TransactionAbortableError';
  }
}

/** A newer producer with the same transactional id took over: this one can only be closed. */
class ProducerFencedError extends ReplogError {
  constructor(message, error = 'PRODUCER_FENCED') {
    super(message, error);
    this.name = 'ProducerFencedError';
  }
}

/** The coordinator refused the producer in a way it cannot recover from: close it. */
class TransactionFatalError extends ReplogError {
  constructor(message, error) {
    super(message, error);
    this.name = 'TransactionFatalError';
  }
}

const STATUS_TYPES = protobuf.Root.fromJSON({
  nested: {
    google: {
      nested: {
        protobuf: {
          nested: {
            Any: { fields: { type_url: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
          },
        },
        rpc: {
          nested: {
            Status: {
              fields: {
                code: { type: 'int32', id: 1 },
                message: { type: 'string', id: 2 },
                details: { rule: 'repeated', type: 'google.protobuf.Any', id: 3 },
              },
            },
            ErrorInfo: {
              fields: {
                reason: { type: 'string', id: 1 },
                domain: { type: 'string', id: 2 },
                metadata: { keyType: 'string', type: 'string', id: 3 },
              },
            },
          },
        },
      },
    },
  },
});
const Status = STATUS_TYPES.lookupType('google.rpc.Status');
const ErrorInfo = STATUS_TYPES.lookupType('google.rpc.ErrorInfo');
const ERROR_INFO_URL = 'type.googleapis.com/google.rpc.ErrorInfo';

/** The ErrorInfo of a failed call ({reason, domain, metadata}), or null when it carries none. */
function errorInfo(serviceError) {
  const raw = serviceError?.metadata?.get?.('grpc-status-details-bin')?.[0];
  if (!raw) return null;
  try {
    const status = Status.decode(raw);
    const detail = status.details.find((any) => any.type_url === ERROR_INFO_URL);
    return detail ? ErrorInfo.toObject(ErrorInfo.decode(detail.value)) : null;
  } catch {
    return null; // a malformed trailer says nothing more than the status does
  }
}

const STATUS_ERROR_NAMES = {
  4: 'REQUEST_TIMED_OUT',
  14: 'NETWORK_EXCEPTION',
};

/** A ReplogError for a call that ended with a gRPC status other than OK. */
function fromServiceError(serviceError, what) {
  const info = errorInfo(serviceError);
  const error = info?.reason || STATUS_ERROR_NAMES[serviceError.code] || 'UNKNOWN_SERVER_ERROR';
  const detail = serviceError.details || serviceError.message;
  return new ReplogError(`${what} failed: ${detail}`, error, { grpcCode: serviceError.code, metadata: info?.metadata });
}

module.exports = {
  RETRIABLE,
  STALE_LEADER,
  ProducerFencedError,
  ReplogError,
  TransactionAbortableError,
  TransactionFatalError,
  TransactionStateError,
  errorInfo,
  errorName,
  fromServiceError,
};
