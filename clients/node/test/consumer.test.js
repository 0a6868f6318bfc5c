'use strict';
const test = require('node:test');
const assert = require('node:assert');
const { Consumer } = require('../lib');

test('a subscription is topic names or a RegExp without flags', () => {
  const consumer = new Consumer('127.0.0.1:1', { groupId: 'g' });
  assert.throws(() => consumer.subscribe(/orders/i), /has flags, which cannot be sent to the coordinator: write them inline/);
  assert.throws(() => consumer.subscribe('orders'), /takes a list of topic names or a RegExp/);
});
