// node-redis 5 over TLS against the server's TLS port (argv[2]) with the
// test certificates in argv[3]: the CA checked, a client certificate
// shown; a pipeline, pub/sub and a 1 MB value.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(`${process.env.LAPSE_NODE_DEPS}/package.json`);
const { createClient } = require('redis');

const [port, certs] = [Number(process.argv[2]), process.argv[3]];
const file = (name) => readFileSync(`${certs}/${name}`);
const connect = async () => {
  const client = createClient({
    socket: {
      tls: true,
      host: 'localhost',
      port,
      ca: file('ca.crt'),
      cert: file('client.crt'),
      key: file('client.key'),
    },
  });
  await client.connect();
  return client;
};

const client = await connect();
assert.equal(await client.ping(), 'PONG');
const multi = client.multi();
for (let i = 0; i < 100; i++) multi.set(`n:${i}`, String(i));
multi.get('n:99');
const replies = await multi.exec();
assert.equal(replies[100], '99');
const big = 'x'.repeat(1024 * 1024);
await client.set('big', big);
assert.equal(await client.get('big'), big);

const subscriber = await connect();
const got = [];
await subscriber.subscribe('news', (message) => got.push(message));
await client.publish('news', 'hello');
for (let i = 0; i < 100 && got.length === 0; i++) {
  await new Promise((resolve) => setTimeout(resolve, 20));
}
assert.deepEqual(got, ['hello']);
await subscriber.quit();
await client.quit();
console.log('node tls: ok');
