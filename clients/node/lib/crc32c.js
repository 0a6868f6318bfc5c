'use strict';
// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of RecordBatch v2.
// Speed matters because the producer hashes every byte it sends and the consumer every byte it
// reads. `crc32c` calls @node-rs/crc32 (a native addon using the CPU's CRC-32C instruction) where
// its prebuilt binary loads, for ranges from NATIVE_FROM bytes on; below that, or on a platform
// without the binary, it runs the JavaScript below (`crc32cJs`).
// The JavaScript is slicing-by-16: sixteen tables let one step consume sixteen bytes. From a few
// hundred bytes on, the input is read as 32-bit words through an Int32Array over its 4-byte-aligned
// middle: one load per four bytes instead of four.
// bench/node_crc32c.js measures the two side by side.

const POLYNOMIAL = 0x82f63b78;
// Below this, lining up on a 4-byte boundary and making the view cost more than the words save.
const WORDS_FROM = 256;
// An Int32Array reads in the platform's byte order; the CRC wants the first byte in the low bits,
// so big-endian machines keep to the byte loops.
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

function buildTables() {
  const tables = Array.from({ length: 16 }, () => new Int32Array(256));
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLYNOMIAL : c >>> 1;
    tables[0][n] = c;
  }
  for (let n = 0; n < 256; n++) {
    for (let t = 1; t < 16; t++) {
      const previous = tables[t - 1][n];
      tables[t][n] = (previous >>> 8) ^ tables[0][previous & 0xff];
    }
  }
  return tables;
}

// Tn[b] is byte b's entry carried through n more zero bytes. One module constant per table rather
// than an array unpacked on each call: that alone nearly doubled the speed, presumably because V8
// can then treat the tables as fixed. One flat table indexed with offsets measured a little slower.
const [T0, T1, T2, T3, T4, T5, T6, T7, T8, T9, T10, T11, T12, T13, T14, T15] = buildTables();

/**
 * CRC-32C of bytes[start, end), continuing from `crc` (0 to start).
 * @param {Uint8Array} bytes
 * @returns {number} unsigned 32-bit
 */
function crc32c(bytes, start = 0, end = bytes.length, crc = 0) {
  if (end - start >= NATIVE_FROM && NATIVE !== null && bytes instanceof Uint8Array && start >= 0 &&
      end <= bytes.length) {
    return NATIVE(bytes.subarray(start, end), crc) >>> 0;
  }
  return crc32cJs(bytes, start, end, crc);
}

/** crc32c in JavaScript alone (any array of bytes). */
function crc32cJs(bytes, start = 0, end = bytes.length, crc = 0) {
  let c = ~crc;
  let i = start;
  // Only in-bounds ranges of a real Uint8Array take the word path; anything else gets what the
  // byte loops always gave.
  if (LITTLE_ENDIAN && end - i >= WORDS_FROM && i >= 0 && end <= bytes.length && bytes instanceof Uint8Array) {
    // An Int32Array must start on a multiple of 4 of the underlying buffer, not of the Buffer.
    const lead = -(bytes.byteOffset + i) & 3;
    c = bytewise(bytes, i, i + lead, c);
    i += lead;
    const n = (end - i) >>> 2;
    const w = new Int32Array(bytes.buffer, bytes.byteOffset + i, n);
    c = words16(w, 0, n & ~3, c);
    c = words4(w, n & ~3, n, c);
    i += n << 2;
  }
  const stop = end - i >= 16 ? end - ((end - i) & 15) : i;
  c = sixteens(bytes, i, stop, c);
  return ~bytewise(bytes, stop, end, c) >>> 0;
}

// One loop per function: V8 may optimize a function in the middle of its first long loop, and a
// loop after it that had not run yet would then lack type feedback, and that code was seen to
// deoptimize on every call (a run that began with 1 MiB inputs took twice as long).

// Sixteen bytes, the first four already folded into c: V8 inlines this small function.
function step16(c, b, d, e) {
  return T15[c & 0xff] ^ T14[(c >>> 8) & 0xff] ^ T13[(c >>> 16) & 0xff] ^ T12[c >>> 24] ^
    T11[b & 0xff] ^ T10[(b >>> 8) & 0xff] ^ T9[(b >>> 16) & 0xff] ^ T8[b >>> 24] ^
    T7[d & 0xff] ^ T6[(d >>> 8) & 0xff] ^ T5[(d >>> 16) & 0xff] ^ T4[d >>> 24] ^
    T3[e & 0xff] ^ T2[(e >>> 8) & 0xff] ^ T1[(e >>> 16) & 0xff] ^ T0[e >>> 24];
}

function words16(w, j, stop, c) {
  for (; j < stop; j += 4) c = step16(c ^ w[j], w[j + 1], w[j + 2], w[j + 3]);
  return c;
}

function words4(w, j, stop, c) {
  for (; j < stop; j++) {
    c ^= w[j];
    c = T3[c & 0xff] ^ T2[(c >>> 8) & 0xff] ^ T1[(c >>> 16) & 0xff] ^ T0[c >>> 24];
  }
  return c;
}

function sixteens(bytes, i, stop, c) {
  for (; i < stop; i += 16) {
    c ^= bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24);
    c = T15[c & 0xff] ^ T14[(c >>> 8) & 0xff] ^ T13[(c >>> 16) & 0xff] ^ T12[c >>> 24] ^
      T11[bytes[i + 4]] ^ T10[bytes[i + 5]] ^ T9[bytes[i + 6]] ^ T8[bytes[i + 7]] ^
      T7[bytes[i + 8]] ^ T6[bytes[i + 9]] ^ T5[bytes[i + 10]] ^ T4[bytes[i + 11]] ^
      T3[bytes[i + 12]] ^ T2[bytes[i + 13]] ^ T1[bytes[i + 14]] ^ T0[bytes[i + 15]];
  }
  return c;
}

function bytewise(bytes, i, end, c) {
  for (; i < end; i++) c = T0[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return c;
}

function loadNative() {
  if (process.env.REPLOG_NODE_CRC32C === 'js') return null;
  try {
    return require('@node-rs/crc32').crc32c;
  } catch {
    return null; // no prebuilt binary for this platform: the JavaScript serves
  }
}

const NATIVE = loadNative();
// Under this many bytes a call into the addon costs more than the JavaScript takes.
const NATIVE_FROM = 256;

module.exports = { crc32c, crc32cJs, nativeCrc32c: NATIVE !== null };
