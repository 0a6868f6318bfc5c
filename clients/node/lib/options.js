'use strict';
// The options a client is made with. A name it does not know, or a number of milliseconds or bytes
// that is not a number, is refused when the client is made: otherwise a typo (`linger_ms`,
// `lingerMS`) would leave the default in place without a word.

const { ReplogError } = require('./errors');

const SHARED = ['logger', 'security'];

/**
 * `defaults` with `options` over it. `extra`: the option names without a default.
 * An option given as undefined keeps its default.
 */
function withDefaults(what, options, defaults, extra = []) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new ReplogError(`${what} options must be an object, not ${describe(options)}`, 'INVALID_CONFIG');
  }
  const known = [...Object.keys(defaults), ...extra, ...SHARED];
  const config = { ...defaults };
  for (const [name, value] of Object.entries(options)) {
    if (!known.includes(name)) {
      const hint = suggestion(name, known);
      throw new ReplogError(`${what} has no option ${JSON.stringify(name)}${hint}`, 'INVALID_CONFIG');
    }
    if (value === undefined) continue;
    const unit = name.endsWith('Ms') ? 'milliseconds' : name.endsWith('Bytes') ? 'bytes' : null;
    if (unit !== null && !(Number.isFinite(value) && value >= 0)) {
      throw new ReplogError(`${what} option ${name} must be a number of ${unit} (0 or more), not ${describe(value)}`,
        'INVALID_CONFIG');
    }
    config[name] = value;
  }
  return config;
}

function describe(value) {
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return 'an array';
  return String(value);
}

// "; did you mean lingerMs?" for a name that differs from a known one only in case, `_`, `.` or `-`
// (Kafka's linger.ms) or by a letter or two.
function suggestion(name, known) {
  const plain = (text) => text.toLowerCase().replace(/[._-]/g, '');
  const near = known.find((k) => plain(k) === plain(name)) ?? known.find((k) => editDistance(k, name) <= 2);
  return near === undefined ? `; it takes ${known.join(', ')}` : `; did you mean ${near}?`;
}

function editDistance(a, b) {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}

module.exports = { withDefaults };
