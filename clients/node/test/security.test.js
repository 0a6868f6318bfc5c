'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const test = require('node:test');
const assert = require('node:assert');
const { channelSecurity } = require('../lib/security');
const { Producer } = require('../lib');

const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'replog-security-'));
const notPem = path.join(folder, 'not.pem');
fs.writeFileSync(notPem, 'not a certificate\n');
const emptyToken = path.join(folder, 'token');
fs.writeFileSync(emptyToken, '\n');

function refused(given, env, says) {
  assert.throws(() => channelSecurity(given, env), (error) => {
    assert.strictEqual(error.error, 'INVALID_CONFIG');
    assert.strictEqual(error.message, says);
    return true;
  });
}

test('without settings or environment the client speaks plaintext; false ignores the environment', () => {
  assert.strictEqual(channelSecurity(undefined, {}).tls, false);
  assert.strictEqual(channelSecurity(false, { REPLOG_SSL_CAFILE: '/nowhere' }).tls, false);
});

test('the REPLOG_SSL_* environment stands in for the security option', () => {
  refused(undefined, { REPLOG_SSL_CAFILE: path.join(folder, 'missing.pem') },
    `cannot read the CA file ${path.join(folder, 'missing.pem')}: no such file`);
  refused(undefined, { REPLOG_BEARER_TOKEN: 't' }, 'a client certificate, a bearer token or a server name is ' +
    'for TLS: set cafile too, the CA the servers\' certificates chain to');
});

test('settings that cannot work are refused in one sentence when the client is made', () => {
  refused({ cafile: notPem, certfile: notPem }, {}, 'a client certificate needs both certfile and keyfile');
  refused({ cafile: notPem }, {}, `the CA file ${notPem} holds no PEM certificate`);
  refused({ cafile: notPem, token: 't', tokenFile: emptyToken }, {},
    'give the security setting token or tokenFile, not both');
  refused({ cafile: notPem, tokenFile: emptyToken }, {}, `the token file ${emptyToken} is empty`);
  refused({ cafile: notPem, ca: notPem }, {}, 'unknown security setting ca; the settings are cafile, certfile, ' +
    'keyfile, serverName, token, tokenFile');
  assert.throws(() => new Producer('127.0.0.1:1', { security: { serverName: 'broker' } }),
    /a server name is for TLS: set cafile too/);
});
