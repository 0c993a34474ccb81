// node-redisson (over ioredis) through two proxies: lock through A, a
// contended tryLock through B that fails, a tryLock through B that waits
// and wakes when A unlocks, a stale unlock, and B's unlock. Prints one
// JSON object with what each step gave.
'use strict';
const { Redisson } = require('node-redisson');
const Redis = require('ioredis');

const [proxyA, proxyB, master] = process.argv.slice(2);
const opts = (addr) => {
  const [host, port] = addr.split(':');
  return { host, port: Number(port), maxRetriesPerRequest: 1, retryStrategy: () => null };
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const outcome = (p) => p.then((v) => (v === undefined ? 'ok' : v), (e) => 'error: ' + e.message.split('\n')[0]);

(async () => {
  const a = new Redisson({ redis: { options: opts(proxyA) } });
  const b = new Redisson({ redis: { options: opts(proxyB) } });
  const direct = new Redis(opts(master));
  const name = 'nr:lock';
  const channel = 'redisson_lock__channel:{nr:lock}';
  const la = a.getLock(name);
  const lb = b.getLock(name);
  const out = {};
  out.lock = await outcome(la.tryLock(0, 20000));
  out.contended = await outcome(lb.tryLock(0, 20000));
  out.isLocked = await outcome(lb.isLocked());

  const waiting = outcome(lb.tryLock(15000, 20000));
  // Unlock only once B's subscription reached the masters, so that the
  // wake-up can come only from the unlock's message.
  const deadline = Date.now() + 5000;
  while ((await direct.pubsub('NUMSUB', channel))[1] < 1 && Date.now() < deadline) {
    await sleep(10);
  }
  await sleep(50);
  const unlockedAt = Date.now();
  out.unlock = await outcome(la.unlock());
  out.waited = await waiting;
  out.wokeAfterMs = Date.now() - unlockedAt;
  out.staleUnlock = await outcome(la.unlock());
  out.unlockB = await outcome(lb.unlock());
  out.freeAfter = await outcome(la.isLocked());
  console.log(JSON.stringify(out));
  // node-redisson leaves the waiter's timeout armed after the message
  // came; it would UNSUBSCRIBE on a closed connection later.
  process.exit(0);
})().catch((e) => {
  console.log(JSON.stringify({ fatal: e.message }));
  process.exit(1);
});
