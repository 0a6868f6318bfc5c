'use strict';
// CRC-32C of the Node client (clients/node/lib/crc32c.js) against the slicing-by-8 it replaced, kept
// below as the baseline. Each buffer is hashed from byte 21 to its end, with start and end given as
// records.js gives them (the old function, warmed up so and then called without an end, lost two
// thirds of its speed on 100-byte inputs). Each function runs in processes of its own, old and new
// taking turns, so that neither one's warm-up shapes how V8 compiles the other. Prints MB/s (10^6
// bytes per second) per buffer size, old and new side by side: medians over runs and processes.
//   node bench/node_crc32c.js [PROCESSES_PER_FUNCTION]   (3 by default: about 2 seconds)
const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');

const SIZES = [100, 1024, 64 * 1024, 1024 * 1024];
const CRC_START = 21;
const RUNS = 5; // timed runs per size in each process
const BYTES_PER_RUN = 8e6; // a few milliseconds per run

// The former implementation, as it was, the baseline.
const OLD = (() => {
  const POLYNOMIAL = 0x82f63b78;
  const TABLES = buildTables();

  function buildTables() {
    const tables = Array.from({ length: 8 }, () => new Int32Array(256));
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLYNOMIAL : c >>> 1;
      tables[0][n] = c;
    }
    for (let n = 0; n < 256; n++) {
      for (let t = 1; t < 8; t++) {
        const previous = tables[t - 1][n];
        tables[t][n] = (previous >>> 8) ^ tables[0][previous & 0xff];
      }
    }
    return tables;
  }

  function crc32c(bytes, start = 0, end = bytes.length, crc = 0) {
    const [t0, t1, t2, t3, t4, t5, t6, t7] = TABLES;
    let c = ~crc;
    let i = start;
    for (; i + 8 <= end; i += 8) {
      c ^= bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24);
      c = t7[c & 0xff] ^ t6[(c >>> 8) & 0xff] ^ t5[(c >>> 16) & 0xff] ^ t4[c >>> 24] ^
        t3[bytes[i + 4]] ^ t2[bytes[i + 5]] ^ t1[bytes[i + 6]] ^ t0[bytes[i + 7]];
    }
    for (; i < end; i++) c = t0[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
    return ~c >>> 0;
  }

  return crc32c;
})();

function median(values) {
  const sorted = values.slice().sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

// In a child process: MB/s of one function per size, as JSON on stdout.
function measure(which) {
  const crc32c = which === 'old' ? OLD : require('../clients/node/lib/crc32c').crc32c;
  const buffers = SIZES.map((size) => crypto.randomBytes(CRC_START + size));
  // Warm up and check the answers: short inputs first, so that every loop of either function has run
  // before V8 compiles it, then mixed lengths and starts. The figures are then steady-state speeds;
  // warmed up on long inputs first, the old function at times stayed at a third of its speed on
  // 100-byte inputs, the loop after its main loop lacking type feedback.
  const mixed = crypto.randomBytes(5000);
  for (let k = 0; k < 500; k++) {
    if (crc32c(mixed, k % 7, 9 + (k % 50)) !== OLD(mixed, k % 7, 9 + (k % 50))) throw new Error(`${which}: wrong CRC`);
  }
  for (let k = 0; k < 3000; k++) {
    const start = k % 29, end = mixed.length - ((k * 7) % 4000);
    if (crc32c(mixed, start, end) !== OLD(mixed, start, end)) throw new Error(`${which}: wrong CRC`);
  }
  for (const buffer of buffers) {
    const end = buffer.length;
    if (crc32c(buffer, CRC_START, end) !== OLD(buffer, CRC_START, end)) throw new Error(`${which}: wrong CRC`);
  }
  const rates = SIZES.map(() => []);
  let sink = 0;
  for (let run = 0; run < RUNS; run++) {
    buffers.forEach((buffer, s) => {
      const calls = Math.ceil(BYTES_PER_RUN / SIZES[s]);
      const started = process.hrtime.bigint();
      for (let call = 0; call < calls; call++) sink ^= crc32c(buffer, CRC_START, buffer.length);
      const ns = Number(process.hrtime.bigint() - started);
      rates[s].push((calls * SIZES[s] * 1e3) / ns);
    });
  }
  process.stdout.write(JSON.stringify({ rates: rates.map(median), sink }));
}

function main() {
  const processes = Number(process.argv[2] ?? 3);
  const rates = { old: SIZES.map(() => []), new: SIZES.map(() => []) };
  for (let p = 0; p < processes; p++) {
    for (const which of p % 2 ? ['new', 'old'] : ['old', 'new']) {
      const out = execFileSync(process.execPath, [__filename, '--child', which], { encoding: 'utf8' });
      JSON.parse(out).rates.forEach((rate, s) => rates[which][s].push(rate));
    }
  }
  const sizeName = (n) => (n >= 1024 * 1024 ? `${n / 1024 / 1024} MiB` : n >= 1024 ? `${n / 1024} KiB` : `${n} B`);
  console.log(`CRC-32C in MB/s, node ${process.version}, ${RUNS} runs in each of ${processes} processes per function`);
  console.log(`${'size'.padStart(8)}${'old'.padStart(8)}${'new'.padStart(8)}${'new/old'.padStart(9)}`);
  SIZES.forEach((size, s) => {
    const before = median(rates.old[s]);
    const after = median(rates.new[s]);
    const row = [before.toFixed(0).padStart(8), after.toFixed(0).padStart(8), `${(after / before).toFixed(2)}x`.padStart(9)];
    console.log(sizeName(size).padStart(8) + row.join(''));
  });
}

if (process.argv[2] === '--child') measure(process.argv[3]);
else main();
