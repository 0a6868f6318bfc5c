'use strict';
// The client's log lines. Give `logger` an object with debug/info/warn/error methods (console, pino,
// winston...) to route them; by default warnings and errors go to stderr, and REPLOG_LOG_LEVEL=info
// (or debug) adds the rest.

const LEVELS = ['debug', 'info', 'warn', 'error'];

function makeLogger(logger, component) {
  if (logger === false) return Object.fromEntries(LEVELS.map((level) => [level, () => {}]));
  if (logger) return Object.fromEntries(LEVELS.map((level) => [level, (message) => logger[level](`replog ${component}: ${message}`)]));
  const threshold = LEVELS.indexOf(process.env.REPLOG_LOG_LEVEL || 'warn');
  return Object.fromEntries(LEVELS.map((level, index) => [level, index < threshold ? () => {}
    : (message) => process.stderr.write(`${new Date().toISOString()} ${level.toUpperCase()} replog ${component}: ${message}\n`)]));
}

module.exports = { makeLogger };
