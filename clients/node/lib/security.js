'use strict';
// How the client reaches TLS listeners: the CA that servers' certificates chain to, a client
// certificate and key for clusters that require one (mTLS), a server name to verify instead of the
// address dialled, and a bearer token sent with each call as `authorization: Bearer <token>`.
// Without the `security` option the client reads REPLOG_SSL_CAFILE, REPLOG_SSL_CERTFILE,
// REPLOG_SSL_KEYFILE, REPLOG_SSL_SERVER_NAME and REPLOG_BEARER_TOKEN, as replog's other clients do;
// none of them set (or `security: false`): plaintext. A certificate or token is only sent over TLS.

const fs = require('node:fs');
const tls = require('node:tls');
const grpc = require('@grpc/grpc-js');
const { ReplogError } = require('./errors');

const FIELDS = ['cafile', 'certfile', 'keyfile', 'serverName', 'token', 'tokenFile'];
const ENV = {
  cafile: 'REPLOG_SSL_CAFILE',
  certfile: 'REPLOG_SSL_CERTFILE',
  keyfile: 'REPLOG_SSL_KEYFILE',
  serverName: 'REPLOG_SSL_SERVER_NAME',
  token: 'REPLOG_BEARER_TOKEN',
};

function invalid(message) {
  return new ReplogError(message, 'INVALID_CONFIG');
}

/** The security settings given, else the environment's; `false` for plaintext whatever the environment. */
function settings(given, env) {
  if (given === false) return {};
  if (given === undefined || given === null) {
    return Object.fromEntries(Object.entries(ENV).map(([field, name]) => [field, env[name] || '']));
  }
  if (typeof given !== 'object') throw invalid(`the security option must be an object of ${FIELDS.join(', ')}`);
  const unknown = Object.keys(given).filter((name) => !FIELDS.includes(name));
  if (unknown.length) throw invalid(`unknown security setting ${unknown[0]}; the settings are ${FIELDS.join(', ')}`);
  return given;
}

function readFile(path, what) {
  try {
    return fs.readFileSync(path);
  } catch (error) {
    throw invalid(`cannot read the ${what} ${path}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`);
  }
}

/** A function giving the token for each call: the string, the caller's function, or the file read again. */
function tokenSource({ token, tokenFile }) {
  if (token && tokenFile) throw invalid('give the security setting token or tokenFile, not both');
  if (tokenFile) {
    if (!String(readFile(tokenFile, 'token file')).trim()) throw invalid(`the token file ${tokenFile} is empty`);
    return () => String(fs.readFileSync(tokenFile)).trim(); // a rotated token file is followed
  }
  if (typeof token === 'function') return token;
  return token ? () => token : null;
}

/**
 * The channel credentials and extra channel options for these settings; throws a ReplogError of one
 * sentence when they cannot work (a missing file, a certificate without its key, a key that is not
 * the certificate's).
 * @returns {{tls: boolean, credentials: grpc.ChannelCredentials, options: object}}
 */
function channelSecurity(given, env = process.env) {
  const chosen = settings(given, env);
  const { cafile, certfile, keyfile, serverName } = chosen;
  const token = tokenSource(chosen);
  if (Boolean(certfile) !== Boolean(keyfile)) throw invalid('a client certificate needs both certfile and keyfile');
  if ((certfile || token || serverName) && !cafile) {
    throw invalid('a client certificate, a bearer token or a server name is for TLS: set cafile too, ' +
      'the CA the servers\' certificates chain to');
  }
  if (!cafile) return { tls: false, credentials: grpc.credentials.createInsecure(), options: {} };
  const ca = readFile(cafile, 'CA file');
  if (!ca.includes('-----BEGIN CERTIFICATE-----')) throw invalid(`the CA file ${cafile} holds no PEM certificate`);
  const cert = certfile ? readFile(certfile, 'certificate file') : null;
  const key = keyfile ? readFile(keyfile, 'key file') : null;
  try {
    tls.createSecureContext({ ca, cert: cert ?? undefined, key: key ?? undefined });
  } catch (error) {
    const files = [cafile, certfile, keyfile].filter(Boolean).join(', ');
    throw invalid(`the TLS files ${files} do not load (${error.message}): the CA file must hold PEM ` +
      'certificates and the key must be the certificate\'s');
  }
  let credentials = grpc.credentials.createSsl(ca, key, cert);
  if (token) {
    credentials = grpc.credentials.combineChannelCredentials(credentials,
      grpc.credentials.createFromMetadataGenerator((_params, callback) => {
        Promise.resolve().then(token).then((value) => {
          const metadata = new grpc.Metadata();
          metadata.set('authorization', `Bearer ${value}`);
          callback(null, metadata);
        }, callback);
      }));
  }
  return { tls: true, credentials, options: serverName ? { 'grpc.ssl_target_name_override': serverName } : {} };
}

module.exports = { channelSecurity, ENV };
