// node-redis 5's client-side cache (RESP3, CLIENT TRACKING, invalidation
// pushes) against the server on the port given: a repeated read is
// served from the cache, another client's write and FLUSHALL empty it.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

// node-redis from the folder .ci/run installs it into (LAPSE_NODE_DEPS).
const require = createRequire(`${process.env.LAPSE_NODE_DEPS}/package.json`);
const { createClient } = require('redis');

const port = Number(process.argv[2]);
const cached = createClient({
  socket: { port },
  RESP: 3,
  clientSideCache: { ttl: 0, maxEntries: 0, evictPolicy: 'LRU' },
});
const other = createClient({ socket: { port } });
await cached.connect();
await other.connect();
const cache = cached.clientSideCache;
const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

await other.set('k', '1');
assert.equal(await cached.get('k'), '1');
assert.equal(await cached.get('k'), '1');
assert.equal(cache.stats().hitCount, 1, 'the second read was not cached');
await other.set('k', '2');
await settle();
assert.equal(await cached.get('k'), '2', 'a stale value was served');
await other.flushAll();
await settle();
assert.equal(cache.size(), 0, 'FLUSHALL left entries');
assert.equal(await cached.get('k'), null);
await cached.quit();
await other.quit();
console.log('node cache: ok');
