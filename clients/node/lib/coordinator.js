'use strict';
// Coordinators by key (docs/API.md "The order of calls"): the broker coordinating a consumer group
// or a transactional id, found with FindCoordinator at any broker and kept until a call to it
// fails or its answer says it moved.

const { unary } = require('./cluster');
const { ReplogError, errorName } = require('./errors');

// Whole-answer errors after which the coordinator is looked up again.
const COORDINATOR_MOVED = new Set(['NOT_COORDINATOR', 'COORDINATOR_NOT_AVAILABLE', 'COORDINATOR_LOAD_IN_PROGRESS']);

const KEY_TYPES = { group: 'COORDINATOR_TYPE_GROUP', transaction: 'COORDINATOR_TYPE_TRANSACTION' };

class Coordinators {
  /**
   * @param {object} cluster the client's Cluster
   * @param {'group'|'transaction'} kind what the keys name
   * @param {number} requestTimeoutMs each call's deadline
   */
  constructor(cluster, kind, requestTimeoutMs) {
    this.cluster = cluster;
    this.kind = kind;
    this.keyType = KEY_TYPES[kind];
    this.requestTimeoutMs = requestTimeoutMs;
    this.addresses = new Map(); // key -> "host:port"
  }

  /** A call to the key's coordinator; `errorOf(answer)` reads the error that says it moved. */
  async call(key, method, request, errorOf = () => 'NONE') {
    let address = this.addresses.get(key);
    if (address === undefined) {
      address = await this._find(key);
      this.addresses.set(key, address);
    }
    let response;
    try {
      response = await unary(this.cluster.coordinatorAt(address), method, request, this.requestTimeoutMs);
    } catch (error) {
      this.addresses.delete(key);
      throw error;
    }
    if (COORDINATOR_MOVED.has(errorOf(response))) this.addresses.delete(key);
    return response;
  }

  async _find(key) {
    if (this.cluster.brokers.size === 0) await this.cluster.refresh();
    const response = await unary(this.cluster.anyBroker().coordinator, 'FindCoordinator',
      { keys: [key], key_type: this.keyType }, this.requestTimeoutMs);
    const found = response.coordinators.find((c) => c.key === key);
    const error = found ? errorName(found.error_code) : 'COORDINATOR_NOT_AVAILABLE';
    if (error !== 'NONE' || !found.coordinator) {
      const what = this.kind === 'group' ? 'group' : 'transactional id';
      throw new ReplogError(`${what} ${key} has no coordinator yet (${error}: ${found?.error_message ?? ''})`, error);
    }
    return `${found.coordinator.host}:${found.coordinator.port}`;
  }
}

module.exports = { COORDINATOR_MOVED, Coordinators };
