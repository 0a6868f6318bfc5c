'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { crc32c: chosen, crc32cJs, nativeCrc32c } = require('../lib/crc32c');

// A bit at a time, straight from the definition: too slow for use, too simple to share a bug with
// the table-driven code.
function reference(bytes, start = 0, end = bytes.length, crc = 0) {
  let c = ~crc >>> 0;
  for (let i = start; i < end; i++) {
    c ^= bytes[i];
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
  }
  return ~c >>> 0;
}

// Seeded, so that a failure comes back the same on the next run.
function randomBytes(n, seed) {
  const out = new Uint8Array(n);
  let x = seed | 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x ^= x >>> 17; x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

// `bytes` copied into a larger ArrayBuffer at `byteOffset`, the way a Buffer sliced from Node's pool
// or from a received message sits at any offset of its memory. The bytes around it are not zero, so
// reading past either end would change the result.
function placed(bytes, byteOffset, asBuffer) {
  const memory = new ArrayBuffer(byteOffset + bytes.length + 5);
  new Uint8Array(memory).fill(0xa5);
  const view = asBuffer
    ? Buffer.from(memory, byteOffset, bytes.length)
    : new Uint8Array(memory, byteOffset, bytes.length);
  view.set(bytes);
  return view;
}

test('the native CRC-32C loads where a prebuilt binary exists (Linux on x64 with glibc)', (t) => {
  const glibc = process.report?.getReport().header.glibcVersionRuntime !== undefined;
  if (!(process.platform === 'linux' && process.arch === 'x64' && glibc)) {
    t.skip('no prebuilt binary for this platform');
    return;
  }
  assert.equal(nativeCrc32c, process.env.REPLOG_NODE_CRC32C !== 'js');
});

// Every test below runs on `crc32c` as the client calls it (the native addon from 256 bytes on) and
// on the JavaScript alone, the fallback where the addon does not load.
for (const [name, crc32c] of [['crc32c', chosen], ['crc32cJs', crc32cJs]]) {
  test(`${name}: CRC-32C of "123456789" is the check value 0xE3069283, however the bytes are held`, () => {
    const ascii = Buffer.from('123456789');
    assert.equal(crc32c(ascii), 0xe3069283);
    for (let offset = 0; offset < 4; offset++) {
      assert.equal(crc32c(placed(ascii, offset, true)), 0xe3069283);
      assert.equal(crc32c(placed(ascii, offset, false)), 0xe3069283);
    }
    assert.equal(crc32c([...ascii]), 0xe3069283);
    // A plain array too when long enough for the word path: it has no memory to view as words.
    const long = randomBytes(1000, 11);
    assert.equal(crc32c([...long], 3), reference(long, 3));
  });

  test(`${name}: CRC-32C gives what Python's crc32c package gives`, () => {
    // Expected values from .venv/bin/python -c "import crc32c; print(crc32c.crc32c(...))" on the same bytes.
    const FOX = 0x22620404; // b'The quick brown fox jumps over the lazy dog'
    const COUNTING = 0x23b62c98; // bytes(range(256)) * 5
    const PATTERN = 0xb97add4f; // bytes((i * 7 + 3) % 251 for i in range(70000))
    assert.equal(crc32c(Buffer.from('The quick brown fox jumps over the lazy dog')), FOX);
    const counting = Buffer.alloc(1280);
    for (let i = 0; i < counting.length; i++) counting[i] = i & 0xff;
    assert.equal(crc32c(counting), COUNTING);
    const pattern = Buffer.alloc(70000);
    for (let i = 0; i < pattern.length; i++) pattern[i] = (i * 7 + 3) % 251;
    assert.equal(crc32c(pattern), PATTERN);
    assert.equal(crc32c(placed(pattern, 3, true)), PATTERN);
  });

  test(`${name}: CRC-32C matches the bitwise reference for lengths 0 to 300, at odd starts, ends and byteOffsets`, () => {
    for (let length = 0; length <= 300; length++) {
      const bytes = randomBytes(length, 0x9e3779b9 + length);
      for (let byteOffset = 0; byteOffset < 4; byteOffset++) {
        const held = placed(bytes, byteOffset, byteOffset % 2 === 1);
        for (const start of [0, 1, 2, 3, 5]) {
          for (const end of [length, length - 1, length - 2, length - 7]) {
            if (start > end) continue;
            assert.equal(crc32c(held, start, end), reference(bytes, start, end),
              `length ${length}, byteOffset ${byteOffset}, [${start}, ${end})`);
          }
        }
      }
    }
  });

  test(`${name}: CRC-32C matches the bitwise reference on large buffers`, () => {
    for (const [length, seed] of [[1024, 1], [4099, 2], [65536, 3], [65536 + 61, 4], [1024 * 1024 + 13, 5]]) {
      const bytes = randomBytes(length, seed);
      const expected = reference(bytes);
      for (let byteOffset = 0; byteOffset < 4; byteOffset++) {
        const held = placed(bytes, byteOffset, true);
        assert.equal(crc32c(held), expected, `length ${length}, byteOffset ${byteOffset}`);
        const end = length - 3;
        assert.equal(crc32c(held, 21, end), reference(bytes, 21, end), `length ${length}, [21, ${end})`);
      }
    }
  });

  test(`${name}: CRC-32C continues from an earlier result: pieces give what the whole gives`, () => {
    const bytes = placed(randomBytes(5000, 7), 1, true);
    const n = bytes.length;
    const whole = crc32c(bytes, 0, n);
    for (const k of [0, 1, 3, 4, 15, 16, 17, 63, 64, 65, 255, 256, 257, 1000, 2047, 4096, 4999, 5000]) {
      assert.equal(crc32c(bytes, k, n, crc32c(bytes, 0, k)), whole, `split at ${k}`);
    }
    // Three pieces, the middle one long enough to be read in words from an unaligned start.
    assert.equal(crc32c(bytes, 1001, n, crc32c(bytes, 6, 1001, crc32c(bytes, 0, 6))), whole);
    // An empty range leaves the running value as it is.
    assert.equal(crc32c(bytes, 10, 10, 0xdeadbeef), 0xdeadbeef);
    assert.equal(crc32c(bytes, 10, 10), 0);
  });

  test(`${name}: CRC-32C is an unsigned 32-bit number`, () => {
    for (let seed = 1; seed < 200; seed++) {
      const value = crc32c(randomBytes(40 + seed, seed));
      assert.ok(Number.isInteger(value) && value >= 0 && value < 2 ** 32, String(value));
    }
  });
}
