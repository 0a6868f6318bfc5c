'use strict';
// The Admin client. It does one thing so far: end a transaction that a producer prepared
// (prepareTransaction(), KIP-939's first phase) and left open, as the second phase of a two-phase
// commit decided outside replog. Topics, groups and the rest are the `replog` command's.

const { Cluster } = require('./cluster');
const { ProducerFencedError, ReplogError, TransactionAbortableError, errorName } = require('./errors');
const { withDefaults } = require('./options');
const { Coordinators } = require('./coordinator');
const { callUntilAnswered, reaction } = require('./transactions');

const DEFAULTS = Object.freeze({ requestTimeoutMs: 30000, retryBackoffMs: 100, clientId: 'replog-node-admin' });

class Admin {
  /**
   * @param {string|string[]} bootstrap metadata service address(es), "host:port"
   * @param {object} [options] requestTimeoutMs, retryBackoffMs, clientId, security (as the Producer's)
   */
  constructor(bootstrap, options = {}) {
    this.config = withDefaults('Admin', options, DEFAULTS);
    this.cluster = new Cluster(bootstrap, { clientId: this.config.clientId, security: this.config.security });
    this.transactions = new Coordinators(this.cluster, 'transaction', this.config.requestTimeoutMs);
  }

  /**
   * Commit (`commit: true`) or abort a prepared transaction: EndTxn for its transactional id, producer id
   * and epoch, as its producer would send it. Ending one already ended the same way answers as the first
   * time. Throws ProducerFencedError when a newer producer of the id fenced it (and aborted it), and
   * TransactionAbortableError for a commit of a transaction its coordinator aborted after its timeout.
   * @param {{transactionalId: string, producerId: number, producerEpoch: number}} prepared
   */
  async endTransaction(prepared, { commit, timeoutMs = this.config.requestTimeoutMs } = {}) {
    const { transactionalId, producerId, producerEpoch } = prepared ?? {};
    if (typeof transactionalId !== 'string' || !Number.isInteger(producerId) || !Number.isInteger(producerEpoch)) {
      throw new ReplogError('endTransaction() takes what prepareTransaction() returned, {transactionalId, producerId, ' +
        `producerEpoch}, not ${JSON.stringify(prepared)}`, 'INVALID_REQUEST');
    }
    if (typeof commit !== 'boolean') {
      throw new ReplogError(`endTransaction() needs {commit: true} or {commit: false}, not ${JSON.stringify(commit)}`,
        'INVALID_REQUEST');
    }
    const response = await callUntilAnswered({
      coordinators: this.transactions, key: transactionalId, method: 'EndTxn',
      request: { transactional_id: transactionalId, producer_id: producerId, producer_epoch: producerEpoch,
        committed: commit },
      codesOf: (r) => [errorName(r.error_code)], timeoutMs, retryBackoffMs: this.config.retryBackoffMs,
      what: `transactional id ${transactionalId}`,
    });
    const code = errorName(response.error_code);
    const outcome = reaction('EndTxn', code);
    if (outcome === 'done') return;
    const detail = `${commit ? 'committing' : 'aborting'} the transaction of transactional id ${transactionalId} ` +
      `(producer ${producerId}, epoch ${producerEpoch}) failed with ${code}` +
      (response.error_message ? `: ${response.error_message}` : '');
    if (outcome === 'fenced') {
      throw new ProducerFencedError(`${detail}; a newer producer of the id fenced it, and it was aborted`, code);
    }
    if (commit && code === 'TRANSACTION_ABORTABLE') {
      throw new TransactionAbortableError(`${detail}; none of its records or offsets are visible`, code);
    }
    throw new ReplogError(detail, code);
  }

  close() {
    this.cluster.close();
  }
}

module.exports = { Admin };
