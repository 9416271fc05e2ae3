// bullmq's basic flow against the server on the port given (a job queue
// on streams and Lua scripts): jobs added, a worker processes them, one
// fails once and is retried after a backoff, QueueEvents (XREAD BLOCK on
// the queue's event stream) reports each completion. Prints a summary.
import { createRequire } from 'node:module';

// bullmq from the folder .ci/run installs it into (LAPSE_NODE_DEPS).
const require = createRequire(`${process.env.LAPSE_NODE_DEPS}/package.json`);
const { Queue, Worker, QueueEvents } = require('bullmq');

const connection = { host: '127.0.0.1', port: Number(process.argv[2]) };
const queue = new Queue('jobs', { connection });
const events = new QueueEvents('jobs', { connection });
await events.waitUntilReady();
let completed = 0;
let failedOnce = false;
const done = new Promise((resolve) => {
  events.on('completed', () => {
    completed += 1;
    if (completed === 5) resolve();
  });
});
const worker = new Worker('jobs', async (job) => {
  if (job.data.n === 3 && !failedOnce) {
    failedOnce = true;
    throw new Error('flaky');
  }
  return job.data.n * 2;
}, { connection });
for (let n = 1; n <= 5; n++) {
  await queue.add('double', { n }, { attempts: 2, backoff: { type: 'fixed', delay: 10 } });
}
const timer = setTimeout(() => {
  console.log(`timeout: ${completed} completed`);
  process.exit(1);
}, 20000);
await done;
clearTimeout(timer);
const counts = await queue.getJobCounts('completed', 'failed', 'waiting', 'active');
const third = (await queue.getJobs(['completed'])).find((j) => j.data.n === 3);
const events_logged = await queue.client.then((c) => c.xlen('bull:jobs:events'));
console.log(JSON.stringify({
  counts,
  third: { attemptsMade: third.attemptsMade, returnvalue: third.returnvalue },
  events: events_logged > 0,
}));
await worker.close();
await queue.close();
await events.close();
process.exit(0);
