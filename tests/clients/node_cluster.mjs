// node-redis 5's cluster client against a cluster, unchanged: it finds
// the slots from one node, routes keys, runs MULTI under a hash tag, and
// keeps every value right while slots move (MOVED and ASK followed by
// the client), until the file named by argv[3] appears.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(`${process.env.LAPSE_NODE_DEPS}/package.json`);
const { createCluster } = require('redis');

const port = Number(process.argv[2]);
const stopFile = process.argv[3];
const cluster = createCluster({ rootNodes: [{ url: `redis://127.0.0.1:${port}` }] });
cluster.on('error', (e) => { console.error('cluster error', e); });
await cluster.connect();

const written = new Map();
let ops = 0;
let round = 0;
do {
  for (let i = 0; i < 200; i++) {
    const key = `node:${i}`;
    const value = `${round}:${i}`;
    assert.equal(await cluster.set(key, value), 'OK');
    written.set(key, value);
    ops++;
  }
  const replies = await cluster.multi()
    .incr('{node}counter')
    .set('{node}last', String(round))
    .get('{node}last')
    .exec();
  assert.equal(replies[2], String(round));
  for (const [key, value] of written) {
    assert.equal(await cluster.get(key), value);
  }
  round++;
} while (stopFile && !existsSync(stopFile));
assert.equal(Number(await cluster.get('{node}counter')), round);
await cluster.close();
console.log(`node cluster: ok ${ops}`);
