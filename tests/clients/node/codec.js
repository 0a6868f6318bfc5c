'use strict';
// The Node client's codec and partitioner on the command line, for the cross-language tests:
//   node codec.js encode   < JSON [{key, value, headers, timestamp}] (bytes as hex, null for none)  -> hex batch
//   node codec.js decode   < hex batches                                                          -> JSON records
//   node codec.js place N  < JSON [hex keys]                                                      -> JSON partitions
//   node codec.js retriable                                                                       -> JSON error names
//   node codec.js transactions  < JSON [error names]      -> JSON {states, transitions: [[state, event, next]], reactions}
//   node codec.js read_committed < JSON {batches: hex, aborted: [[producer id, first offset]]} -> JSON offsets kept
const { RETRIABLE, decodeBatches, encodeBatch, partitionForKey } = require('../../../clients/node');
const { AbortedTransactions, STATES, nextState, reaction } = require('../../../clients/node/lib/transactions');

const EVENTS = ['init', 'initialized', 'begin', 'commit', 'prepare', 'abort', 'ended', 'abortable', 'fatal'];
const REQUESTS = ['InitProducerId', 'AddPartitionsToTxn', 'AddOffsetsToTxn', 'TxnOffsetCommit', 'EndTxn', 'Produce'];

const hex = (s) => (s === null ? null : Buffer.from(s, 'hex'));
const unhex = (b) => (b === null ? null : Buffer.from(b).toString('hex'));

async function main() {
  const [mode, argument] = process.argv.slice(2);
  const chunks = [];
  if (mode !== 'retriable') for await (const chunk of process.stdin) chunks.push(chunk);
  const input = Buffer.concat(chunks).toString('utf8').trim();
  let output;
  if (mode === 'encode') {
    const records = JSON.parse(input).map((r) => ({ key: hex(r.key), value: hex(r.value), timestamp: r.timestamp,
      headers: r.headers.map(([key, value]) => ({ key, value: hex(value) })) }));
    output = encodeBatch(records).toString('hex');
  } else if (mode === 'decode') {
    output = JSON.stringify(decodeBatches(Buffer.from(input, 'hex')).flatMap((batch) => batch.records.map((r) => ({
      offset: r.offset, timestamp: r.timestamp, key: unhex(r.key), value: unhex(r.value),
      headers: r.headers.map((h) => [h.key, unhex(h.value)]) }))));
  } else if (mode === 'place') {
    output = JSON.stringify(JSON.parse(input).map((key) => partitionForKey(Buffer.from(key, 'hex'), Number(argument))));
  } else if (mode === 'retriable') {
    output = JSON.stringify([...RETRIABLE].sort());
  } else if (mode === 'transactions') {
    const codes = JSON.parse(input);
    const transitions = STATES.flatMap((state) => EVENTS.map((event) => [state, event, nextState(state, event)]))
      .filter(([, , next]) => next !== null);
    const reactions = Object.fromEntries(REQUESTS.map((request) =>
      [request, Object.fromEntries(codes.map((code) => [code, reaction(request, code)]))]));
    output = JSON.stringify({ states: STATES, transitions, reactions });
  } else if (mode === 'read_committed') {
    const { batches, aborted } = JSON.parse(input);
    const filter = new AbortedTransactions(aborted.map(([pid, first]) => ({ producer_id: pid, first_offset: first })));
    output = JSON.stringify(decodeBatches(Buffer.from(batches, 'hex'))
      .filter((batch) => filter.keeps(batch)).flatMap((batch) => batch.records.map((r) => r.offset)));
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  process.stdout.write(output);
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
