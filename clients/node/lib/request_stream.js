'use strict';
// The calling side of a request stream (ProduceStream): a call's meaning at a stream message's cost.
// Each request written on the stream gets the next answer read from it, since the broker answers a
// stream's requests in the order they came. Several requests may wait at once. When the stream
// breaks (the server goes away, or an answer is later than its request's timeout) every waiting
// request fails with the same error, as every request on a closed Kafka connection does, and the
// next request opens a new stream.

const grpc = require('@grpc/grpc-js');
const { ReplogError, fromServiceError } = require('./errors');

class RequestStream {
  /**
   * @param {() => import('@grpc/grpc-js').ClientDuplexStream} open starts the call
   * @param {string} what the method, for messages ("ProduceStream to 127.0.0.1:9092")
   */
  constructor(open, what) {
    this.open = open;
    this.what = what;
    this.call = null;
    this.waiting = []; // {resolve, reject, timer}, in the order the requests were written
  }

  /** Send one request; resolves with its answer, rejects with a ReplogError when none comes within timeoutMs. */
  request(message, timeoutMs) {
    return new Promise((resolve, reject) => {
      const call = this._current();
      const waiter = { resolve, reject, timer: null };
      // A late answer means the stream is stuck: every request on it is as late as this one.
      waiter.timer = setTimeout(() => this._break(call, new ReplogError(
        `${this.what}: no answer within ${timeoutMs} ms`, 'REQUEST_TIMED_OUT', { grpcCode: grpc.status.DEADLINE_EXCEEDED },
      )), timeoutMs);
      this.waiting.push(waiter);
      call.write(message);
    });
  }

  /** Fail what waits and end the stream; the next request opens another. */
  close() {
    if (this.call !== null) {
      this._break(this.call, new ReplogError(`${this.what}: the stream was closed`, 'NETWORK_EXCEPTION',
        { grpcCode: grpc.status.CANCELLED }));
    }
  }

  _current() {
    if (this.call !== null) return this.call;
    const call = this.open();
    this.call = call;
    call.on('data', (response) => {
      const waiter = this.waiting.shift();
      if (waiter === undefined) {
        this._break(call, new ReplogError(`${this.what}: the server sent an answer nobody asked for`,
          'UNKNOWN_SERVER_ERROR', { grpcCode: grpc.status.INTERNAL }));
        return;
      }
      clearTimeout(waiter.timer);
      waiter.resolve(response);
    });
    call.on('error', (serviceError) => this._break(call, fromServiceError(serviceError, this.what)));
    call.on('end', () => this._break(call, new ReplogError(`${this.what}: the server ended the stream`,
      'NETWORK_EXCEPTION', { grpcCode: grpc.status.UNAVAILABLE })));
    return call;
  }

  /** Fail every request waiting on `call` and forget it (a newer stream is left alone). */
  _break(call, error) {
    if (call !== this.call) return;
    this.call = null;
    const waiting = this.waiting;
    this.waiting = [];
    call.cancel(); // its 'error' (CANCELLED) then finds the call already forgotten
    for (const waiter of waiting) {
      clearTimeout(waiter.timer);
      waiter.reject(error);
    }
  }
}

module.exports = { RequestStream };
