'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { Membership, partitionKey } = require('../lib/membership');

let ids = 0;
const member = () => new Membership({ rebalanceTimeoutMs: 300000, newMemberId: () => `m${++ids}` });
const keys = (...ps) => ps.map((p) => partitionKey('t', p));
const ok = (epoch, assignment) => ({ error: 'NONE', message: '', memberEpoch: epoch, heartbeatIntervalMs: 500, assignment });

test('a member joins with epoch 0 and its subscription, then takes what it is given', () => {
  const m = member();
  m.subscribe(['t'], 0);
  const join = m.nextHeartbeat();
  assert.deepStrictEqual([join.memberEpoch, join.topics], [0, ['t']]);
  assert.deepStrictEqual(m.onAnswer(ok(1, keys(0, 1)), 10, 100), [{ type: 'assign', keys: new Set(keys(0, 1)) }]);
  const next = m.nextHeartbeat();
  assert.deepStrictEqual([next.memberEpoch, next.topics, next.owned], [1, null, keys(0, 1)]);
});

test('partitions are given up before new ones are taken, and the heartbeat after leaves them out', () => {
  const m = member();
  m.subscribe(['t'], 0);
  m.nextHeartbeat();
  m.onAnswer(ok(1, keys(0, 1)), 10, 100);
  m.nextHeartbeat();
  assert.deepStrictEqual(m.onAnswer(ok(2, keys(1, 2)), 20, 100), [{ type: 'revoke', keys: new Set(keys(0)) }]);
  assert.deepStrictEqual(m.revoked(keys(0), 30), [{ type: 'assign', keys: new Set(keys(2)) }]);
  assert.strictEqual(m.heartbeatDueMs(), 30); // at once, not an interval (500 ms) after the last answer
  assert.deepStrictEqual(m.nextHeartbeat().owned.sort(), keys(1, 2));
});

test('a fenced member loses its partitions and rejoins with the same id; an unknown one takes a new id', () => {
  const m = member();
  m.subscribe(['t'], 0);
  m.nextHeartbeat();
  m.onAnswer(ok(1, keys(0)), 10, 100);
  const id = m.memberId;
  m.nextHeartbeat();
  assert.deepStrictEqual(m.onAnswer({ error: 'FENCED_MEMBER_EPOCH', message: '' }, 20, 100),
    [{ type: 'lose', keys: new Set(keys(0)) }]);
  assert.deepStrictEqual([m.state, m.memberId, m.nextHeartbeat().memberEpoch], ['joining', id, 0]);
  m.onAnswer({ error: 'UNKNOWN_MEMBER_ID', message: '' }, 30, 100);
  assert.notStrictEqual(m.memberId, id);
});

test('a leave is epoch -1 and ends the membership once answered; a refusal for good fails it', () => {
  const m = member();
  m.subscribe(['t'], 0);
  m.nextHeartbeat();
  m.onAnswer(ok(1, keys(0)), 10, 100);
  assert.strictEqual(m.leave(20), true);
  assert.strictEqual(m.nextHeartbeat().memberEpoch, -1);
  m.onAnswer(ok(-1, null), 30, 100);
  assert.strictEqual(m.state, 'unsubscribed');
  const refused = member();
  refused.subscribe(['t'], 0);
  refused.nextHeartbeat();
  refused.onAnswer({ error: 'INVALID_GROUP_ID', message: 'empty' }, 10, 100);
  assert.deepStrictEqual([refused.state, refused.error.error], ['failed', 'INVALID_GROUP_ID']);
});

test('a regex subscription travels in place of names, once, and names replace it again', () => {
  const m = member();
  m.subscribe({ regex: 'orders-.*' }, 0);
  const join = m.nextHeartbeat();
  assert.deepStrictEqual([join.topics, join.regex], [null, 'orders-.*']);
  m.onAnswer(ok(1, keys(0)), 10, 100);
  assert.deepStrictEqual([m.nextHeartbeat().regex], [null]);
  m.onAnswer(ok(1, null), 20, 100);
  m.subscribe(['t'], 30);
  const changed = m.nextHeartbeat();
  assert.deepStrictEqual([changed.topics, changed.regex], [['t'], null]);
});

test('a member not polled in time leaves, loses its partitions, and joins again with the next poll', () => {
  const m = member();
  m.subscribe(['t'], 0);
  m.nextHeartbeat();
  m.onAnswer(ok(1, keys(0, 1)), 10, 100);
  assert.deepStrictEqual(m.pollTimerExpired(20), [{ type: 'lose', keys: new Set(keys(0, 1)) }]);
  const leave = m.nextHeartbeat();
  assert.deepStrictEqual([leave.memberEpoch, m.polled(25)], [-1, true]); // polled again before the answer
  m.onAnswer(ok(-1, null), 30, 100); // the leave's answer changes nothing now
  const join = m.nextHeartbeat();
  assert.deepStrictEqual([join.memberEpoch, join.topics, m.state], [0, ['t'], 'joining']);
  assert.strictEqual(m.polled(40), false);
  assert.deepStrictEqual(m.pollTimerExpired(40), [], 'only a member leaves for it');
});
