'use strict';
// Which partition a record goes to. Keys: Kafka's default partitioner, toPositive(murmur2(key)) %
// partitions, so that a key lands where Kafka's clients and replog's Python producer put it.
// Records without a key stick to one partition per topic until `switchBytes` went there (KIP-794),
// which fills big batches instead of scattering small ones over every leader.

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** Kafka's Utils.murmur2: MurmurHash2, 32-bit, seed 0x9747b28c, as a signed 32-bit integer. */
function murmur2(data) {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M) ^ k;
  }
  switch (length & 3) {
    case 3:
      h ^= data[whole + 2] << 16;
    // falls through
    case 2:
      h ^= data[whole + 1] << 8;
    // falls through
    case 1:
      h ^= data[whole];
      h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** Kafka's Utils.toPositive: clear the sign bit (not Math.abs, which differs for negatives). */
function toPositive(number) {
  return number & 0x7fffffff;
}

function partitionForKey(key, partitionCount) {
  const bytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  return toPositive(murmur2(bytes)) % partitionCount;
}

class StickyPartitioner {
  constructor(switchBytes) {
    this.switchBytes = switchBytes;
    this.current = new Map(); // topic -> partition
    this.produced = new Map(); // topic -> bytes sent to the current partition
  }

  /** The sticky partition of `topic`; `available` lists partitions with a leader (preferred). */
  partition(topic, partitionCount, available) {
    let current = this.current.get(topic);
    if (current === undefined || current >= partitionCount) {
      current = choose(partitionCount, available, undefined);
      this.current.set(topic, current);
    }
    return current;
  }

  /** The bytes the sticky partition of `topic` takes before the partitioner moves on (1 or more). */
  remainingBytes(topic) {
    return Math.max(1, this.switchBytes - (this.produced.get(topic) ?? 0));
  }

  /** sizeBytes went to the sticky partition; once switchBytes have, move on to another. */
  record(topic, partitionCount, sizeBytes, available) {
    let produced = (this.produced.get(topic) ?? 0) + sizeBytes;
    if (produced >= this.switchBytes) {
      this.current.set(topic, choose(partitionCount, available, this.current.get(topic)));
      produced = 0;
    }
    this.produced.set(topic, produced);
  }
}

function choose(partitionCount, available, exclude) {
  const pool = available && available.length ? available : Array.from({ length: partitionCount }, (_, i) => i);
  const candidates = pool.filter((p) => p !== exclude);
  const from = candidates.length ? candidates : pool;
  return from[Math.floor(Math.random() * from.length)];
}

module.exports = { StickyPartitioner, murmur2, partitionForKey, toPositive };
