'use strict';
// Where things are: the metadata service (bootstrap), brokers by id, each partition's leader.
// One gRPC channel per address, shared by the BrokerService and CoordinatorService clients on it;
// every channel (metadata, broker, coordinator, controller) has the client's security (TLS, token).

const grpc = require('@grpc/grpc-js');
const { api, channelOptions } = require('./proto');
const { ReplogError, errorName, fromServiceError } = require('./errors');
const { channelSecurity } = require('./security');
const { RequestStream } = require('./request_stream');

const METADATA_TIMEOUT_MS = 10000;

/** Call a unary method with a deadline; resolves with the answer, rejects with a ReplogError. */
function unary(client, method, request, timeoutMs) {
  return new Promise((resolve, reject) => {
    client[method](request, { deadline: Date.now() + timeoutMs }, (serviceError, response) => {
      if (serviceError) reject(fromServiceError(serviceError, method));
      else resolve(response);
    });
  });
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

class Cluster {
  /**
   * @param {string|string[]} bootstrap metadata service addresses, "host:port"
   * @param {object} [options] clientId; security ({cafile, certfile, keyfile, serverName, token, tokenFile},
   *   else the REPLOG_SSL_* environment; false: plaintext)
   */
  constructor(bootstrap, { clientId = 'replog-node', security } = {}) {
    const addresses = (Array.isArray(bootstrap) ? bootstrap : String(bootstrap).split(','))
      .map((a) => a.trim()).filter(Boolean);
    if (addresses.length === 0) throw new ReplogError('no bootstrap address: give the metadata service\'s host:port');
    this.clientId = clientId;
    this.api = api();
    const secured = channelSecurity(security);
    this.tls = secured.tls;
    this.credentials = secured.credentials;
    this.options = { ...channelOptions(), ...secured.options };
    this.metadataClients = addresses.map((a) => new this.api.MetadataService(a, this.credentials, this.options));
    this.nextMetadata = 0;
    this.brokers = new Map(); // id -> "host:port"
    this.topics = new Map(); // name -> {partitions: Map(partition -> {leader, leaderEpoch})} or {error}
    this.clients = new Map(); // "host:port" -> {broker, coordinator}
    this.produceStreams = new Map(); // "host:port" -> RequestStream of ProduceStream
    this.controllerAddress = null; // the active controller, "host:port"
    this.refreshing = null;
  }

  /** Ask a metadata service about these topics (all known ones when empty) and keep the answer. */
  async refresh(topics = [...this.topics.keys()]) {
    if (this.refreshing) return this.refreshing;
    this.refreshing = this._refresh(topics).finally(() => { this.refreshing = null; });
    return this.refreshing;
  }

  async _refresh(topics) {
    let lastError;
    for (let attempt = 0; attempt < this.metadataClients.length; attempt++) {
      const client = this.metadataClients[this.nextMetadata++ % this.metadataClients.length];
      try {
        const response = await unary(client, 'Metadata', { topics }, METADATA_TIMEOUT_MS);
        this._learn(response);
        return response;
      } catch (error) {
        lastError = error;
      }
    }
    throw new ReplogError(`no metadata service answered: ${lastError.message}; ${this._unreachableHint(lastError)}`,
      lastError.error, { grpcCode: lastError.grpcCode });
  }

  _unreachableHint(error) {
    if (error.grpcCode === grpc.status.UNAUTHENTICATED) {
      return 'the cluster did not accept this client\'s credentials: check the security option\'s token';
    }
    if (!this.tls) {
      return 'is the cluster running at that address? If it serves TLS, give the security option ' +
        '{cafile, certfile, keyfile} (or set REPLOG_SSL_CAFILE, REPLOG_SSL_CERTFILE, REPLOG_SSL_KEYFILE): its CA, ' +
        'and a client certificate and key where it requires them';
    }
    return 'is the cluster running at that address? Check the security option: cafile must be the CA of the ' +
      'cluster\'s certificates, and certfile a certificate it accepts where it requires one';
  }

  _learn(response) {
    this.controllerAddress = response.controller ? `${response.controller.host}:${response.controller.port}` : null;
    for (const broker of response.brokers) this.brokers.set(broker.broker_id, `${broker.host}:${broker.port}`);
    for (const topic of response.topics) {
      const error = errorName(topic.error_code);
      if (error !== 'NONE') {
        this.topics.set(topic.name, { error, message: topic.error_message, partitions: new Map() });
        continue;
      }
      const partitions = new Map(topic.partitions.map((p) => [p.partition, {
        leader: p.leader, leaderEpoch: p.leader_epoch,
      }]));
      this.topics.set(topic.name, { error: 'NONE', partitions });
    }
  }

  /** Learn brokers a Produce or Fetch answer names (node_endpoints), sparing a metadata round trip. */
  learnEndpoints(endpoints) {
    for (const broker of endpoints ?? []) this.brokers.set(broker.broker_id, `${broker.host}:${broker.port}`);
  }

  /** The partitions of a topic (metadata looked up when not known); throws for an unknown topic. */
  async partitions(topic, timeoutMs = 30000) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let known = this.topics.get(topic);
      if (!known || known.error !== 'NONE' || known.partitions.size === 0) {
        await this.refresh([...new Set([...this.topics.keys(), topic])]);
        known = this.topics.get(topic);
      }
      if (known && known.error === 'NONE' && known.partitions.size > 0) return known.partitions;
      if (Date.now() > deadline) {
        throw new ReplogError(`topic ${topic} is not known to the cluster (${known?.error ?? 'no answer'}): ` +
          'create it first', known?.error ?? 'UNKNOWN_TOPIC_OR_PARTITION');
      }
      await sleep(200);
    }
  }

  /** {leader, leaderEpoch} of a partition as last learnt; undefined when not known. */
  leaderOf(topic, partition) {
    return this.topics.get(topic)?.partitions.get(partition);
  }

  /** Record a leader that an answer named (KIP-951's current_leader). */
  setLeader(topic, partition, leader, leaderEpoch) {
    const known = this.topics.get(topic)?.partitions.get(partition);
    if (known && leader >= 0 && leaderEpoch >= known.leaderEpoch) {
      known.leader = leader;
      known.leaderEpoch = leaderEpoch;
    }
  }

  _clientsAt(address) {
    let clients = this.clients.get(address);
    if (!clients) {
      const broker = new this.api.BrokerService(address, this.credentials, this.options);
      const coordinator = new this.api.CoordinatorService(address, this.credentials,
        { ...this.options, channelOverride: broker.getChannel() });
      clients = { broker, coordinator };
      this.clients.set(address, clients);
    }
    return clients;
  }

  /** The BrokerService client of a broker id; throws a retriable error when its address is unknown. */
  broker(brokerId) {
    return this._clientsAt(this._address(brokerId)).broker;
  }

  /** The ProduceStream to a broker id, kept open (opened again after it breaks); throws when its address is unknown. */
  produceStream(brokerId) {
    const address = this._address(brokerId);
    let stream = this.produceStreams.get(address);
    if (!stream) {
      const { broker } = this._clientsAt(address);
      stream = new RequestStream(() => broker.ProduceStream(), `ProduceStream to broker ${brokerId} at ${address}`);
      this.produceStreams.set(address, stream);
    }
    return stream;
  }

  /** A ControllerService client on the active controller (admin requests); metadata first. */
  controller() {
    if (!this.controllerAddress) throw new ReplogError('no active controller is known', 'NOT_CONTROLLER');
    let clients = this.clients.get(this.controllerAddress);
    if (!clients) {
      clients = { controller: new this.api.ControllerService(this.controllerAddress, this.credentials, this.options) };
      this.clients.set(this.controllerAddress, clients);
    }
    return clients.controller;
  }

  coordinatorAt(address) {
    return this._clientsAt(address).coordinator;
  }

  anyBroker() {
    const ids = [...this.brokers.keys()];
    if (ids.length === 0) throw new ReplogError('no broker is known yet', 'BROKER_NOT_AVAILABLE');
    return this._clientsAt(this.brokers.get(ids[Math.floor(Math.random() * ids.length)]));
  }

  _address(brokerId) {
    const address = this.brokers.get(brokerId);
    if (!address) throw new ReplogError(`broker ${brokerId} is not known`, 'LEADER_NOT_AVAILABLE');
    return address;
  }

  close() {
    for (const stream of this.produceStreams.values()) stream.close();
    this.produceStreams.clear();
    for (const clients of this.clients.values()) {
      for (const client of Object.values(clients)) client.close();
    }
    for (const client of this.metadataClients) client.close();
    this.clients.clear();
  }
}

module.exports = { Cluster, sleep, unary };
