'use strict';
// CRC-32C of the Node client (clients/node/lib/crc32c.js): `crc32c` as the client calls it (the
// native addon from 256 bytes on, where it loads) against `crc32cJs`, its JavaScript alone. Each
// buffer is hashed from byte 21 to its end, with start and end given as records.js gives them. Each
// function runs in processes of its own, the two taking turns, so that neither one's warm-up shapes
// how V8 compiles the other. Prints MB/s (10^6 bytes per second) per buffer size side by side:
// medians over runs and processes.
//   node bench/node_crc32c.js [PROCESSES_PER_FUNCTION]   (3 by default: about 2 seconds)
const { execFileSync } = require('node:child_process');
const crypto = require('node:crypto');

const SIZES = [100, 256, 1024, 64 * 1024, 1024 * 1024];
const CRC_START = 21;
const RUNS = 5; // timed runs per size in each process
const BYTES_PER_RUN = 8e6; // a few milliseconds per run

const { crc32c: CRC32C, crc32cJs: JS, nativeCrc32c } = require('../clients/node/lib/crc32c');

function median(values) {
  const sorted = values.slice().sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

// In a child process: MB/s of one function per size, as JSON on stdout.
function measure(which) {
  const crc32c = which === 'js' ? JS : CRC32C;
  const buffers = SIZES.map((size) => crypto.randomBytes(CRC_START + size));
  // Warm up and check the answers against the JavaScript: short inputs first, so that every loop has
  // run before V8 compiles it, then mixed lengths and starts. The figures are then steady-state
  // speeds; warmed up on long inputs first, a table loop at times stayed at a third of its speed on
  // 100-byte inputs, the loop after its main loop lacking type feedback.
  const mixed = crypto.randomBytes(5000);
  for (let k = 0; k < 500; k++) {
    if (crc32c(mixed, k % 7, 9 + (k % 50)) !== JS(mixed, k % 7, 9 + (k % 50))) throw new Error(`${which}: wrong CRC`);
  }
  for (let k = 0; k < 3000; k++) {
    const start = k % 29, end = mixed.length - ((k * 7) % 4000);
    if (crc32c(mixed, start, end) !== JS(mixed, start, end)) throw new Error(`${which}: wrong CRC`);
  }
  for (const buffer of buffers) {
    const end = buffer.length;
    if (crc32c(buffer, CRC_START, end) !== JS(buffer, CRC_START, end)) throw new Error(`${which}: wrong CRC`);
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
  const rates = { js: SIZES.map(() => []), crc32c: SIZES.map(() => []) };
  for (let p = 0; p < processes; p++) {
    for (const which of p % 2 ? ['crc32c', 'js'] : ['js', 'crc32c']) {
      const out = execFileSync(process.execPath, [__filename, '--child', which], { encoding: 'utf8' });
      JSON.parse(out).rates.forEach((rate, s) => rates[which][s].push(rate));
    }
  }
  const sizeName = (n) => (n >= 1024 * 1024 ? `${n / 1024 / 1024} MiB` : n >= 1024 ? `${n / 1024} KiB` : `${n} B`);
  console.log(`CRC-32C in MB/s, node ${process.version}, ${RUNS} runs in each of ${processes} processes per function; ` +
    `the native addon ${nativeCrc32c ? 'loaded' : 'did not load: both columns are JavaScript'}`);
  console.log(`${'size'.padStart(8)}${'js'.padStart(8)}${'crc32c'.padStart(8)}${'ratio'.padStart(9)}`);
  SIZES.forEach((size, s) => {
    const before = median(rates.js[s]);
    const after = median(rates.crc32c[s]);
    const row = [before.toFixed(0).padStart(8), after.toFixed(0).padStart(8), `${(after / before).toFixed(2)}x`.padStart(9)];
    console.log(sizeName(size).padStart(8) + row.join(''));
  });
}

if (process.argv[2] === '--child') measure(process.argv[3]);
else main();
