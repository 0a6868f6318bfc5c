'use strict';
// Kafka's RecordBatch v2 (magic 2), byte for byte, as docs/RECORD_FORMAT.md lays it out:
//
//   offset  field                 type
//        0  baseOffset            int64
//        8  batchLength           int32   bytes after this field
//       12  partitionLeaderEpoch  int32
//       16  magic                 int8    always 2
//       17  crc                   uint32  CRC-32C of bytes 21 .. end of batch
//       21  attributes            int16   bits 0-2 compression, 3 timestamp type, 4 transactional, 5 control
//       23  lastOffsetDelta       int32
//       27  baseTimestamp         int64
//       35  maxTimestamp          int64
//       43  producerId            int64
//       51  producerEpoch         int16
//       53  baseSequence          int32
//       57  recordsCount          int32
//       61  records: length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
//                    | keyLength varint (-1: null) | key | valueLength varint | value
//                    | headers count varint | per header: keyLength varint | key (UTF-8) | valueLength | value
//
// Integers are big-endian; record fields are zig-zag varints. JavaScript numbers hold offsets and
// timestamps exactly up to 2^53, far beyond what a log reaches.

const zlib = require('node:zlib');
const { crc32c } = require('./crc32c');

const MAGIC = 2;
const HEADER_SIZE = 61;
const LOG_OVERHEAD = 12; // baseOffset and batchLength: a batch's size is LOG_OVERHEAD + batchLength
const CRC_START = 21;
const RECORD_SIZE_MIN = 7;
const COMPRESSION_MASK = 0x07;
const TIMESTAMP_TYPE_BIT = 0x08;
const TRANSACTIONAL_BIT = 0x10;
const CONTROL_BIT = 0x20;
const COMPRESSION = Object.freeze({ none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 });
const COMPRESSION_NAMES = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];

class CorruptBatchError extends Error {
  constructor(position, reason) {
    super(`batch at byte ${position}: ${reason}`);
    this.name = 'CorruptBatchError';
    this.position = position;
  }
}

// -- varints ---------------------------------------------------------------------------------------

function zigzag(value) {
  return value >= 0 ? value * 2 : -value * 2 - 1;
}

function unzigzag(raw) {
  return raw % 2 === 0 ? raw / 2 : -(raw + 1) / 2;
}

function uvarintSize(raw) {
  let size = 1;
  while (raw >= 0x80) {
    raw = Math.floor(raw / 128);
    size++;
  }
  return size;
}

function varintSize(value) {
  return uvarintSize(zigzag(value));
}

function writeVarint(buf, pos, value) {
  let raw = zigzag(value);
  while (raw >= 0x80) {
    buf[pos++] = (raw % 128) | 0x80;
    raw = Math.floor(raw / 128);
  }
  buf[pos++] = raw;
  return pos;
}

/**
 * Reads a batch's records field by field, keeping its place itself: a decoder that returned [value,
 * position] pairs made an array for every field of every record, a fifth of a consumer's time in
 * garbage collection.
 */
class FieldReader {
  constructor(data) {
    this.data = data;
    this.pos = 0;
  }

  /** A zigzag varint ending before `end`; throws on one cut short or longer than 10 bytes. */
  varint(end) {
    const data = this.data;
    let pos = this.pos;
    let raw = 0;
    let scale = 1;
    const limit = Math.min(end, pos + 10);
    while (pos < limit) {
      const byte = data[pos++];
      raw += (byte & 0x7f) * scale;
      if (byte < 0x80) {
        this.pos = pos;
        return unzigzag(raw);
      }
      scale *= 128;
    }
    throw new Error('a varint is cut short or longer than its type allows');
  }

  /** `length` bytes (a view, not a copy), or null for a length of -1. */
  bytes(length) {
    if (length < 0) return null;
    const start = this.pos;
    this.pos += length;
    return this.data.subarray(start, this.pos);
  }
}

// -- encoding --------------------------------------------------------------------------------------

function asBytes(data, what) {
  if (data === null || data === undefined) return null;
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (data instanceof Uint8Array) return data;
  throw new TypeError(`a record's ${what} must be a Buffer, a string or null, not ${typeof data}`);
}

function encodedHeaders(headers) {
  if (!headers || headers.length === 0) return null;
  return headers.map(({ key, value }) => [Buffer.from(String(key), 'utf8'), asBytes(value, 'header value')]);
}

function headersSize(headers) {
  if (headers === null) return 1;
  let size = varintSize(headers.length);
  for (const [key, value] of headers) {
    size += varintSize(key.length) + key.length + (value === null ? 1 : varintSize(value.length) + value.length);
  }
  return size;
}

/**
 * Appends records to one batch as they come, into a buffer that grows as needed; `build()` writes
 * the header and the CRC. The producer keeps one per partition being filled.
 */
class BatchBuilder {
  constructor({ capacityBytes = 16384, baseTimestamp = Date.now() } = {}) {
    this.buf = Buffer.allocUnsafe(Math.max(capacityBytes, HEADER_SIZE + 64));
    this.pos = HEADER_SIZE;
    this.count = 0;
    this.baseTimestamp = baseTimestamp;
    this.maxTimestamp = baseTimestamp;
  }

  get sizeBytes() {
    return this.pos;
  }

  /**
   * Append one record ({key, value, headers, timestamp}); returns the bytes it took, or -1 (and
   * appends nothing) when it would take a batch that holds records already past `limitBytes`.
   */
  append(record, limitBytes = Infinity) {
    const key = asBytes(record.key, 'key');
    const value = asBytes(record.value, 'value');
    const headers = encodedHeaders(record.headers);
    const timestamp = record.timestamp ?? this.baseTimestamp;
    const timestampDelta = timestamp - this.baseTimestamp;
    const offsetDelta = this.count;
    const body = 1 + varintSize(timestampDelta) + varintSize(offsetDelta) +
      (key === null ? 1 : varintSize(key.length) + key.length) +
      (value === null ? 1 : varintSize(value.length) + value.length) + headersSize(headers);
    const size = varintSize(body) + body;
    if (this.count > 0 && this.pos + size > limitBytes) return -1;
    this._reserve(size);
    const buf = this.buf;
    let pos = writeVarint(buf, this.pos, body);
    buf[pos++] = 0; // record attributes: unused, always zero
    pos = writeVarint(buf, pos, timestampDelta);
    pos = writeVarint(buf, pos, offsetDelta);
    pos = writeBytes(buf, pos, key);
    pos = writeBytes(buf, pos, value);
    if (headers === null) {
      buf[pos++] = 0;
    } else {
      pos = writeVarint(buf, pos, headers.length);
      for (const [headerKey, headerValue] of headers) {
        pos = writeBytes(buf, pos, headerKey);
        pos = writeBytes(buf, pos, headerValue);
      }
    }
    this.pos = pos;
    this.count++;
    if (timestamp > this.maxTimestamp) this.maxTimestamp = timestamp;
    return size;
  }

  /**
   * Append values[from], values[from + 1], ... as records without key or headers at the batch's base
   * timestamp (what `append` makes of {value}), without an object per record: the bulk path of the
   * producer's sendMany. Stops before a record that would take a batch holding records past
   * `limitBytes`, and after the record that brings what this call appended to `budgetBytes` (the
   * sticky partitioner's share). Returns the index of the first value not appended;
   * `lastAppendedBytes` is what the call appended. A value that is not a Buffer, a string or null
   * ends the call before it; it throws only when it is the first.
   */
  appendValues(values, from, limitBytes = Infinity, budgetBytes = Infinity) {
    let i = from;
    let pos = this.pos;
    let count = this.count;
    let appended = 0;
    while (i < values.length && appended < budgetBytes) {
      let value = values[i] ?? null;
      if (typeof value === 'string') value = Buffer.from(value, 'utf8');
      else if (value !== null && !(value instanceof Uint8Array)) {
        if (i === from) asBytes(value, 'value'); // throws, saying what the value is
        break;
      }
      const valueSize = value === null ? 1 : varintSize(value.length) + value.length;
      // attributes, timestamp delta 0, offset delta, key null, value, header count 0
      const body = 4 + varintSize(count) + valueSize;
      const size = varintSize(body) + body;
      if (count > 0 && pos + size > limitBytes) break;
      if (pos + size > this.buf.length) {
        this.pos = pos;
        this._reserve(size);
      }
      const buf = this.buf;
      pos = writeVarint(buf, pos, body);
      buf[pos++] = 0; // attributes
      buf[pos++] = 0; // timestamp delta: zigzag 0
      pos = writeVarint(buf, pos, count);
      buf[pos++] = 1; // key length -1 (null), zigzagged
      pos = writeBytes(buf, pos, value);
      buf[pos++] = 0; // no headers
      count++;
      appended += size;
      i++;
    }
    this.pos = pos;
    this.count = count;
    this.lastAppendedBytes = appended;
    return i;
  }

  _reserve(size) {
    if (this.pos + size <= this.buf.length) return;
    // Four times larger each time: a batch filled up to ~1 MiB from 16 KiB is copied three times, not six.
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 4, this.pos + size));
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  /**
   * The batch's bytes. Options: compression ('none' or 'gzip'), producerId, producerEpoch,
   * baseSequence (-1 each when not idempotent), transactional (the batch belongs to a transaction),
   * partitionLeaderEpoch, baseOffset.
   */
  build(options = {}) {
    if (this.count === 0) throw new Error('a record batch holds at least one record');
    const codec = compressionId(options.compression ?? 'none');
    let out = this.buf.subarray(0, this.pos);
    if (codec !== COMPRESSION.none) {
      const payload = compress(codec, this.buf.subarray(HEADER_SIZE, this.pos));
      out = Buffer.allocUnsafe(HEADER_SIZE + payload.length);
      payload.copy(out, HEADER_SIZE);
    }
    writeHeader(out, {
      baseOffset: options.baseOffset ?? 0,
      partitionLeaderEpoch: options.partitionLeaderEpoch ?? -1,
      attributes: codec | (options.transactional ? TRANSACTIONAL_BIT : 0),
      lastOffsetDelta: this.count - 1,
      baseTimestamp: this.baseTimestamp,
      maxTimestamp: this.maxTimestamp,
      producerId: options.producerId ?? -1,
      producerEpoch: options.producerEpoch ?? -1,
      baseSequence: options.baseSequence ?? -1,
      recordsCount: this.count,
    });
    return out;
  }
}

function writeBytes(buf, pos, bytes) {
  if (bytes === null) return writeVarint(buf, pos, -1);
  pos = writeVarint(buf, pos, bytes.length);
  buf.set(bytes, pos);
  return pos + bytes.length;
}

function writeHeader(out, h) {
  out.writeBigInt64BE(BigInt(h.baseOffset), 0);
  out.writeInt32BE(out.length - LOG_OVERHEAD, 8);
  out.writeInt32BE(h.partitionLeaderEpoch, 12);
  out.writeInt8(MAGIC, 16);
  out.writeInt16BE(h.attributes, 21);
  out.writeInt32BE(h.lastOffsetDelta, 23);
  out.writeBigInt64BE(BigInt(h.baseTimestamp), 27);
  out.writeBigInt64BE(BigInt(h.maxTimestamp), 35);
  out.writeBigInt64BE(BigInt(h.producerId), 43);
  out.writeInt16BE(h.producerEpoch, 51);
  out.writeInt32BE(h.baseSequence, 53);
  out.writeInt32BE(h.recordsCount, 57);
  out.writeUInt32BE(crc32c(out, CRC_START, out.length), 17);
}

/** One batch of records ({key, value, headers, timestamp}) in one call. */
function encodeBatch(records, options = {}) {
  const builder = new BatchBuilder({ baseTimestamp: options.baseTimestamp ?? records[0]?.timestamp ?? Date.now() });
  for (const record of records) builder.append(record);
  return builder.build(options);
}

function compressionId(name) {
  const id = COMPRESSION[name];
  if (id === undefined) throw new Error(`unknown compression ${JSON.stringify(name)}: use none or gzip`);
  if (id !== COMPRESSION.none && id !== COMPRESSION.gzip) {
    throw new Error(`the Node client compresses with gzip only, not ${name}`);
  }
  return id;
}

function compress(codec, data) {
  return zlib.gzipSync(data);
}

function decompress(codec, data, position) {
  if (codec === COMPRESSION.gzip) return zlib.gunzipSync(data);
  throw new CorruptBatchError(position, `${COMPRESSION_NAMES[codec] ?? `compression ${codec}`} is not ` +
    'supported by the Node client (it reads none and gzip)');
}

// -- decoding --------------------------------------------------------------------------------------

/** The header of the batch at `pos`, without checks. */
function readHeader(buf, pos = 0) {
  return {
    position: pos,
    baseOffset: Number(buf.readBigInt64BE(pos)),
    batchLength: buf.readInt32BE(pos + 8),
    partitionLeaderEpoch: buf.readInt32BE(pos + 12),
    magic: buf.readInt8(pos + 16),
    crc: buf.readUInt32BE(pos + 17),
    attributes: buf.readInt16BE(pos + 21),
    lastOffsetDelta: buf.readInt32BE(pos + 23),
    baseTimestamp: Number(buf.readBigInt64BE(pos + 27)),
    maxTimestamp: Number(buf.readBigInt64BE(pos + 35)),
    producerId: Number(buf.readBigInt64BE(pos + 43)),
    producerEpoch: buf.readInt16BE(pos + 51),
    baseSequence: buf.readInt32BE(pos + 53),
    recordsCount: buf.readInt32BE(pos + 57),
  };
}

function checkedHeader(buf, pos) {
  if (buf.length - pos < HEADER_SIZE) throw new CorruptBatchError(pos, 'shorter than a batch header');
  const header = readHeader(buf, pos);
  const end = pos + LOG_OVERHEAD + header.batchLength;
  if (header.batchLength < HEADER_SIZE - LOG_OVERHEAD || end > buf.length) {
    throw new CorruptBatchError(pos, `batchLength ${header.batchLength} does not fit the ${buf.length - pos} bytes left`);
  }
  if (header.magic !== MAGIC) throw new CorruptBatchError(pos, `magic ${header.magic}, not ${MAGIC}`);
  const crc = crc32c(buf, pos + CRC_START, end);
  if (crc !== header.crc) {
    throw new CorruptBatchError(pos, `CRC-32C is ${crc.toString(16)}, the header says ${header.crc.toString(16)}`);
  }
  header.end = end;
  header.compression = COMPRESSION_NAMES[header.attributes & COMPRESSION_MASK] ?? 'unknown';
  header.isTransactional = (header.attributes & TRANSACTIONAL_BIT) !== 0;
  header.isControl = (header.attributes & CONTROL_BIT) !== 0;
  header.lastOffset = header.baseOffset + header.lastOffsetDelta;
  return header;
}

/**
 * The records of one batch. With `where` ({topic, partition}) each record also carries its topic,
 * partition and the batch's leader epoch, made in one object, as the consumer hands them out.
 */
function decodeRecords(header, data, where = null) {
  if (header.recordsCount * RECORD_SIZE_MIN > data.length) {
    throw new Error(`${header.recordsCount} records cannot fit in ${data.length} bytes`);
  }
  const logAppendTime = (header.attributes & TIMESTAMP_TYPE_BIT) !== 0;
  const timestampType = logAppendTime ? 'LogAppendTime' : 'CreateTime'; // the topic's message.timestamp.type
  const records = new Array(header.recordsCount);
  const end = data.length;
  const read = new FieldReader(data);
  for (let i = 0; i < header.recordsCount; i++) {
    const length = read.varint(end);
    const recordEnd = read.pos + length;
    if (length < RECORD_SIZE_MIN - 1 || recordEnd > end) throw new Error(`record ${i} runs past the batch`);
    read.pos += 1; // attributes
    const timestampDelta = read.varint(recordEnd);
    const offsetDelta = read.varint(recordEnd);
    const key = read.bytes(read.varint(recordEnd));
    const value = read.bytes(read.varint(recordEnd));
    const headerCount = read.varint(recordEnd);
    const headers = [];
    for (let h = 0; h < headerCount; h++) {
      const headerKey = read.bytes(read.varint(recordEnd)).toString('utf8');
      headers.push({ key: headerKey, value: read.bytes(read.varint(recordEnd)) });
    }
    if (read.pos !== recordEnd) throw new Error(`record ${i}'s fields do not add up to its length ${length}`);
    const offset = header.baseOffset + offsetDelta;
    const timestamp = logAppendTime ? header.maxTimestamp : header.baseTimestamp + timestampDelta;
    records[i] = where === null ? { offset, timestamp, key, value, headers }
      : { topic: where.topic, partition: where.partition, offset, timestamp, timestampType, key, value, headers,
        leaderEpoch: header.partitionLeaderEpoch };
  }
  if (read.pos !== end) throw new Error(`${end - read.pos} bytes follow the last record`);
  return records;
}

/**
 * Every whole batch in `buf` (a Fetch answer's records), with its records decoded. Stops quietly at
 * a trailing partial batch (a fetch cut at its byte limit); throws CorruptBatchError at the first
 * batch that is not sound.
 */
function decodeBatches(buf, where = null) {
  const batches = [];
  let pos = 0;
  while (buf.length - pos >= LOG_OVERHEAD) {
    const batchLength = buf.readInt32BE(pos + 8);
    if (pos + LOG_OVERHEAD + batchLength > buf.length) break;
    const header = checkedHeader(buf, pos);
    let data = buf.subarray(pos + HEADER_SIZE, header.end);
    const codec = header.attributes & COMPRESSION_MASK;
    if (codec !== COMPRESSION.none) data = decompress(codec, data, pos);
    try {
      header.records = decodeRecords(header, data, where);
    } catch (error) {
      if (error instanceof CorruptBatchError) throw error;
      throw new CorruptBatchError(pos, error.message);
    }
    batches.push(header);
    pos = header.end;
  }
  return batches;
}

module.exports = {
  BatchBuilder,
  CorruptBatchError,
  HEADER_SIZE,
  decodeBatches,
  encodeBatch,
  readHeader,
  varintSize,
};
