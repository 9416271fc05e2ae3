// The README's read-through helper for GETLEASE (issue 42), with
// node-redis's plain sendCommand, against the lapse on the port given:
// ten clients reading a missing key at once compute it once (the others
// wait for it), and a stale key is refreshed once while the old value is
// served.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(`${process.env.LAPSE_NODE_DEPS}/package.json`);
const { createClient } = require('redis');

async function cached(client, key, compute, ttl = 60, grace = 30, leaseMs = 5000) {
  const [value, state, token] = await client.sendCommand(
    ['GETLEASE', key, String(leaseMs), 'WAIT', String(leaseMs)]);
  if (state === 'fill' || state === 'refresh') {
    let fresh;
    try {
      fresh = await compute();
    } catch (err) {
      await client.sendCommand(['LEASE', 'RELEASE', key, String(token)]);
      throw err;
    }
    await client.sendCommand(
      ['SET', key, fresh, 'EX', String(ttl), 'STALE', String(grace), 'LEASE', String(token)]);
    return state === 'fill' ? fresh : value;
  }
  return value;
}

const port = Number(process.argv[2]);
const clients = await Promise.all(
  Array.from({ length: 10 }, () => createClient({ socket: { port } }).connect()));
let calls = 0;
const slow = () => new Promise((resolve) => {
  calls += 1;
  setTimeout(() => resolve('computed'), 200);
});
const results = await Promise.all(clients.map((c) => cached(c, 'node:page', slow)));
assert.equal(calls, 1);
assert.deepEqual(results, Array(10).fill('computed'));

const [c] = clients;
await c.sendCommand(['SET', 'node:old', 'v1', 'PX', '1', 'PSTALE', '60000']);
await new Promise((resolve) => setTimeout(resolve, 10));
assert.equal(await cached(c, 'node:old', async () => 'v2'), 'v1');
assert.equal(await c.get('node:old'), 'v2');
await Promise.all(clients.map((client) => client.quit()));
console.log('node stampede: ok');
