// Drive Redis lock libraries from npm (pinned in .ci/npm-packages) with
// the server at HOST PORT as their only Redis. The same script runs
// against one redis-server and through redlock-proxy; the test compares
// what it prints.
//
// Usage: node npmlocks.js HOST PORT KEY LIBRARY
// LIBRARY: redis-semaphore | redlock4 | redlock5 | redlock-universal-ioredis |
// redlock-universal-node-redis | warlock | simple-redis-mutex | redis-lock |
// ioredis-reconnect
// Prints "ok <check>" or "FAIL <check>: <why>" per check; exits 1 if any
// check failed, 2 if the script itself broke.
'use strict';

const [host, portText, key, library] = process.argv.slice(2);
const port = Number(portText);

let failures = 0;
function check(name, cond, why = '') {
  if (cond) {
    console.log(`ok ${name}`);
  } else {
    failures++;
    console.log(`FAIL ${name}: ${why}`);
  }
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// waitFor polls cond until it holds or 10s pass.
async function waitFor(cond) {
  const deadline = Date.now() + 10000;
  while (!(await cond())) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

function ioredis() {
  const Redis = require('ioredis');
  return new Redis({ host, port, maxRetriesPerRequest: 1, lazyConnect: false });
}

// redis-semaphore 5.8 over ioredis: Mutex (SET NX PX, its compare-and-
// pexpire refresh and compare-and-delete release, its TimeoutError, the
// lost-lock callback) and Semaphore (a sorted set, released by ZREM).
async function redisSemaphore() {
  const { Mutex, Semaphore, TimeoutError, LostLockError } = require('redis-semaphore');
  const r = ioredis();
  const raw = ioredis();
  try {
    const m = new Mutex(r, key, { lockTimeout: 3000, acquireTimeout: 500, retryInterval: 20, refreshInterval: 0 });
    await m.acquire();
    check('acquire', m.isAcquired === true);
    const token = await raw.get(`mutex:${key}`);
    check('key holds the identifier', token === m.identifier, token);
    const pttl = await raw.pttl(`mutex:${key}`);
    check('pttl within lockTimeout', pttl > 0 && pttl <= 3000, pttl);

    const m2 = new Mutex(r, key, { lockTimeout: 3000, acquireTimeout: 300, retryInterval: 20, refreshInterval: 0 });
    check('contended tryAcquire is false', (await m2.tryAcquire()) === false && m2.isAcquired === false);
    let err = null;
    const t0 = Date.now();
    try {
      await m2.acquire();
    } catch (e) {
      err = e;
    }
    check('contended acquire throws TimeoutError', err instanceof TimeoutError && Date.now() - t0 >= 250, String(err));

    const m3 = new Mutex(r, key, { lockTimeout: 6000, identifier: m.identifier, acquiredExternally: true, refreshInterval: 0 });
    const refreshed = await m3.tryAcquire(); // acquiredExternally: a refresh
    const pttl2 = await raw.pttl(`mutex:${key}`);
    check('refresh extends', refreshed === true && pttl2 > 3000 && pttl2 <= 6000, pttl2);

    await m2.release(); // never acquired: nothing is sent
    check('release by a non-holder leaves the key', (await raw.get(`mutex:${key}`)) === m.identifier);
    await m.release();
    check('release', m.isAcquired === false && (await raw.exists(`mutex:${key}`)) === 0);

    // The blocking acquire wins once the holder releases.
    const holder = new Mutex(r, key, { lockTimeout: 3000, refreshInterval: 0 });
    await holder.acquire();
    const waiter = new Mutex(r, key, { lockTimeout: 3000, acquireTimeout: 10000, retryInterval: 20, refreshInterval: 0 });
    const waited = waiter.acquire();
    await sleep(200);
    await holder.release();
    await waited;
    check('blocking acquire wins after the release', waiter.isAcquired === true && (await raw.get(`mutex:${key}`)) === waiter.identifier);
    await waiter.release();

    // Refreshing a lock that another client took over fails: onLockLost
    // gets a LostLockError.
    let lost = null;
    const victim = new Mutex(r, key, { lockTimeout: 2000, refreshInterval: 100, onLockLost: (e) => { lost = e; } });
    await victim.acquire();
    const RELEASE = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end';
    await raw.eval(RELEASE, 1, `mutex:${key}`, victim.identifier);
    await raw.set(`mutex:${key}`, 'thief', 'PX', 3000, 'NX');
    check('lost lock reported by the refresh', await waitFor(() => lost !== null) && lost instanceof LostLockError, String(lost));
    check('the new holder keeps the key', (await raw.get(`mutex:${key}`)) === 'thief' && victim.isAcquired === false);
    await raw.eval(RELEASE, 1, `mutex:${key}`, 'thief');

    // Semaphore: two of limit 2 acquire, the third does not. Through the
    // proxy its acquire is refused: it scores its member by the client's
    // clock at acquisition, which is no expiry (the check names the
    // refusal, and nothing of it is kept). Its release is a plain ZREM.
    const s = [0, 1, 2].map(() => new Semaphore(r, key, 2, { lockTimeout: 1000, acquireTimeout: 300, retryInterval: 20, refreshInterval: 0 }));
    const got = [];
    try {
      for (const x of s) got.push(await x.tryAcquire());
    } catch (e) {
      check(`semaphore acquire refused: ${e.message.split(';')[0]}`, true);
      check('semaphore refused acquire keeps nothing', (await raw.exists(`semaphore:${key}`)) === 0);
      return;
    }
    check('semaphore grants 2 of limit 2', got.join(',') === 'true,true,false', got.join(','));
    try {
      await s[0].release();
      check('semaphore release frees a slot', (await s[2].tryAcquire()) === true);
      await s[1].release();
      await s[2].release();
      check('semaphore released', (await raw.exists(`semaphore:${key}`)) === 0);
    } catch (e) {
      check(`semaphore release refused: ${e.message.split(',')[0]}`, true);
      check('semaphore key expires', await waitFor(async () => (await raw.exists(`semaphore:${key}`)) === 0));
    }
  } finally {
    r.disconnect();
    raw.disconnect();
  }
}

// redlock 4.2 (node-redlock v4) over ioredis: lock, extend, unlock, and
// contention, each by its own scripts.
async function redlock4() {
  const Redlock = require('redlock');
  const r = ioredis();
  const redlock = new Redlock([r], { retryCount: 0 });
  try {
    const lock = await redlock.lock(key, 3000);
    check('lock', (await r.get(key)) === lock.value);
    const pttl = await r.pttl(key);
    check('pttl within the ttl', pttl > 0 && pttl <= 3000, pttl);
    let err = null;
    try {
      await redlock.lock(key, 3000);
    } catch (e) {
      err = e;
    }
    check('contended lock fails with LockError', err instanceof Redlock.LockError, String(err));
    const extended = await lock.extend(6000);
    const pttl2 = await r.pttl(key);
    check('extend', pttl2 > 3000 && pttl2 <= 6000 && extended.value === lock.value, pttl2);
    await lock.unlock();
    check('unlock', (await r.exists(key)) === 0);
    err = null;
    try {
      await lock.extend(1000);
    } catch (e) {
      err = e;
    }
    check('extend after unlock fails with LockError', err instanceof Redlock.LockError, String(err));
    err = null;
    try {
      await lock.unlock();
    } catch (e) {
      err = e;
    }
    check('stale unlock fails with LockError', err instanceof Redlock.LockError, String(err));

    // A retrying lock wins once the holder unlocks.
    const waiting = new Redlock([r], { retryCount: 200, retryDelay: 20, retryJitter: 5 });
    const holder = await redlock.lock(key, 3000);
    const p = waiting.lock(key, 3000);
    await sleep(200);
    await holder.unlock();
    const won = await p;
    check('retrying lock wins after the unlock', (await r.get(key)) === won.value);
    await won.unlock();

    // Multiple resources in one lock.
    const multi = await redlock.lock([`${key}:a`, `${key}:b`], 3000);
    check('multi-resource lock', (await r.get(`${key}:a`)) === multi.value && (await r.get(`${key}:b`)) === multi.value);
    await multi.unlock();
    check('multi-resource unlock', (await r.exists(`${key}:a`, `${key}:b`)) === 0);
  } finally {
    r.disconnect();
  }
}

// redlock 5.0.0-beta.2 (node-redlock v5, installed as redlock5) over
// ioredis: acquire, contention, extend, release, a retrying acquire woken
// by the release, several resources in one lock, and using() with its
// automatic extension, also when the lock is lost while the routine runs.
async function redlock5() {
  const Redlock = require('redlock5').default;
  const { ExecutionError } = require('redlock5');
  const r = ioredis();
  const redlock = new Redlock([r], { retryCount: 0 });
  const rejects = async (p) => {
    try {
      await p;
      return null;
    } catch (e) {
      return e;
    }
  };
  try {
    const lock = await redlock.acquire([key], 3000);
    check('acquire', (await r.get(key)) === lock.value);
    const pttl = await r.pttl(key);
    check('pttl within the duration', pttl > 0 && pttl <= 3000, pttl);
    let err = await rejects(redlock.acquire([key], 3000));
    check('contended acquire fails with ExecutionError', err instanceof ExecutionError, String(err));
    check('holder unchanged', (await r.get(key)) === lock.value);
    const extended = await lock.extend(6000);
    const pttl2 = await r.pttl(key);
    check('extend', pttl2 > 3000 && pttl2 <= 6000 && extended.value === lock.value, pttl2);
    await extended.release();
    check('release', (await r.exists(key)) === 0);
    err = await rejects(extended.release());
    check('stale release fails with ExecutionError', err instanceof ExecutionError, String(err));
    err = await rejects(extended.extend(1000));
    check('extend after release fails with ExecutionError', err instanceof ExecutionError, String(err));

    // A retrying acquire wins once the holder releases.
    const waiting = new Redlock([r], { retryCount: 200, retryDelay: 20, retryJitter: 5 });
    const holder = await redlock.acquire([key], 3000);
    const p = waiting.acquire([key], 3000);
    await sleep(200);
    await holder.release();
    const won = await p;
    check('retrying acquire wins after the release', (await r.get(key)) === won.value);
    await won.release();

    // Several resources in one lock, all or nothing.
    const [a, b, c] = [`${key}:a`, `${key}:b`, `${key}:c`];
    const multi = await redlock.acquire([a, b], 3000);
    check('multi-resource acquire', (await r.get(a)) === multi.value && (await r.get(b)) === multi.value);
    err = await rejects(redlock.acquire([b, c], 3000));
    check('overlapping multi-resource acquire fails and takes none', err instanceof ExecutionError && (await r.exists(c)) === 0, String(err));
    const multi2 = await multi.extend(5000);
    const pttlB = await r.pttl(b);
    check('multi-resource extend', pttlB > 3000 && pttlB <= 5000, pttlB);
    await multi2.release();
    check('multi-resource release', (await r.exists(a, b)) === 0);

    // using(): the lock is extended automatically past its duration while
    // the routine runs, and released after it.
    const result = await redlock.using([key], 1500, { automaticExtensionThreshold: 500 }, async (signal) => {
      await sleep(2500);
      const left = await r.pttl(key);
      check('using extends the lock past its duration', !signal.aborted && left > 0 && left <= 1500, `aborted ${signal.aborted}, pttl ${left}`);
      return 'done';
    });
    check('using returns the routine result and releases', result === 'done' && (await r.exists(key)) === 0);

    // using() whose lock is lost: the extension fails, the routine sees
    // the abort, and the final release fails.
    const other = new Redlock([r], { retryCount: 0 });
    let taken = null;
    err = await rejects(
      redlock.using([key], 1500, { automaticExtensionThreshold: 500 }, async (signal) => {
        const value = await r.get(key);
        const release = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end';
        await r.eval(release, 1, key, value);
        taken = await other.acquire([key], 5000);
        check('aborted signal is not set before the extension', !signal.aborted);
        await waitFor(async () => signal.aborted);
        check('lost lock aborts the routine with ExecutionError', signal.aborted && signal.error instanceof ExecutionError, String(signal.error));
      }),
    );
    check('using with a lost lock rejects with ExecutionError', err instanceof ExecutionError, String(err));
    check('the new holder keeps the key', taken !== null && (await r.get(key)) === taken.value);
    if (taken) await taken.release();
  } finally {
    r.disconnect();
  }
}

// redlock-universal 0.8.5 over ioredis and over node-redis (its
// IoredisAdapter and NodeRedisAdapter): createLock's acquire, contention,
// extend, isLocked, release, a stale release, using() with its automatic
// extension (its atomic extend script reads PTTL first), the adapter's
// inspect script, and LockManager's acquireBatch (every key or none, one
// value per key) and releaseBatch.
async function redlockUniversal(client) {
  const ru = require('redlock-universal');
  let r;
  let adapter;
  if (client === 'node-redis') {
    const { createClient } = require('redis');
    r = createClient({ socket: { host, port } });
    await r.connect();
    adapter = new ru.NodeRedisAdapter(r);
  } else {
    r = ioredis();
    adapter = new ru.IoredisAdapter(r);
  }
  // node-redis names PTTL pTTL and takes EXISTS's keys as an array.
  const pttl = (k) => (client === 'node-redis' ? r.pTTL(k) : r.pttl(k));
  const exists = (...ks) => (client === 'node-redis' ? r.exists(ks) : r.exists(...ks));
  const rejects = async (p) => {
    try {
      await p;
      return null;
    } catch (e) {
      return e;
    }
  };
  try {
    const lock = ru.createLock({ adapter, key, ttl: 3000, retryAttempts: 0 });
    const handle = await lock.acquire();
    check('acquire', (await r.get(key)) === handle.value);
    const ttl = await pttl(key);
    check('pttl within the ttl', ttl > 0 && ttl <= 3000, ttl);
    const other = ru.createLock({ adapter, key, ttl: 3000, retryAttempts: 1, retryDelay: 20 });
    let err = await rejects(other.acquire());
    check('contended acquire fails with LockAcquisitionError', err instanceof ru.LockAcquisitionError, String(err));
    check('extend', (await lock.extend(handle, 6000)) === true && (await pttl(key)) > 3000);
    check('isLocked', (await lock.isLocked(key)) === true);
    const seen = await adapter.inspect(key);
    check('inspect shows the value and ttl', seen && seen.value === handle.value && seen.ttl > 3000 && seen.ttl <= 6000, JSON.stringify(seen));
    check('release', (await lock.release(handle)) === true && (await exists(key)) === 0);
    check('stale release is false', (await lock.release(handle)) === false);
    check('stale extend is false', (await lock.extend(handle, 1000)) === false);
    check('isLocked after release', (await lock.isLocked(key)) === false);
    check('inspect of a free key is null', (await adapter.inspect(key)) === null);

    // using(): extended automatically past its ttl, released after. (At
    // 1300ms it extends when a fifth is left; at 1000ms or less, at once
    // and again after each extension.)
    const short = ru.createLock({ adapter, key, ttl: 1300, retryAttempts: 0 });
    const result = await short.using(async (signal) => {
      await sleep(2000);
      const left = await pttl(key);
      check('using extends the lock past its ttl', !signal.aborted && left > 0 && left <= 1300, `aborted ${signal.aborted} (${signal.error}), pttl ${left}`);
      return 'done';
    });
    check('using returns the result and releases', result === 'done' && (await exists(key)) === 0);

    // LockManager: a batch of keys, all or nothing.
    const manager = new ru.LockManager({ nodes: [adapter], defaultTTL: 3000, defaultRetryAttempts: 0 });
    const [a, b, c] = [`${key}:a`, `${key}:b`, `${key}:c`];
    const handles = await manager.acquireBatch([a, b]);
    check('acquireBatch', handles.length === 2 && (await r.get(a)) === handles.find((h) => h.key === a).value && (await r.get(b)) === handles.find((h) => h.key === b).value);
    err = await rejects(manager.acquireBatch([b, c]));
    check('overlapping acquireBatch fails and takes none', err !== null && (await exists(c)) === 0, String(err));
    const released = await manager.releaseBatch(handles);
    check('releaseBatch', released.every((x) => x === true) && (await exists(a, b)) === 0, JSON.stringify(released));
  } finally {
    if (client === 'node-redis') await r.quit();
    else r.disconnect();
  }
}

// node-redis-warlock 1.0 over ioredis: lock, contention, touch, unlock
// by its scripts (EVALSHA, SCRIPT LOAD on NOSCRIPT), optimistic retrying.
// (Over node-redis v5's or v6's legacy client it cannot run even against
// one Redis: that client has no script or evalsha method.)
async function warlock() {
  const client = ioredis();
  const close = () => client.disconnect();
  const get = (k) => new Promise((resolve, reject) => client.get(k, (e, v) => (e ? reject(e) : resolve(v))));
  const pttl = (k) => new Promise((resolve, reject) => client.pttl(k, (e, v) => (e ? reject(e) : resolve(Number(v)))));
  try {
    const w = require('node-redis-warlock')(client);
    const lock = (k, ttl) => new Promise((resolve, reject) => w.lock(k, ttl, (e, unlock, id) => (e ? reject(e) : resolve([unlock, id]))));
    const [unlock, id] = await lock(key, 3000);
    check('lock', typeof unlock === 'function' && (await get(`${key}:lock`)) === id);
    const t = await pttl(`${key}:lock`);
    check('pttl within the ttl', t > 0 && t <= 3000, t);
    const [unlock2] = await lock(key, 3000);
    check('contended lock gets no unlock', unlock2 === false);
    const touched = await w.touch(key, id, 6000);
    const t2 = await pttl(`${key}:lock`);
    check('touch extends', touched === 'OK' && t2 > 3000 && t2 <= 6000, `${touched} ${t2}`);
    check('touch by a non-owner is 0', Number(await w.touch(key, 'other', 6000)) === 0);
    const n = await new Promise((resolve, reject) => unlock((e, res) => (e ? reject(e) : resolve(res))));
    check('unlock', Number(n) === 1 && (await get(`${key}:lock`)) === null, n);
    const n2 = await new Promise((resolve, reject) => w.unlock(key, id, (e, res) => (e ? reject(e) : resolve(res))));
    check('stale unlock is 0', Number(n2) === 0, n2);

    // optimistic: retries until the short lock expires.
    const [, other] = await lock(key, 400);
    const t0 = Date.now();
    const unlock3 = await new Promise((resolve, reject) => w.optimistic(key, 3000, 200, 20, (e, u) => (e ? reject(e) : resolve(u))));
    check('optimistic lock wins after the expiry', typeof unlock3 === 'function' && (await get(`${key}:lock`)) !== other && Date.now() - t0 > 150);
    await new Promise((resolve, reject) => unlock3((e) => (e ? reject(e) : resolve())));
    check('released', (await get(`${key}:lock`)) === null);
  } finally {
    close();
  }
}

// simple-redis-mutex 3.0 over node-redis v6: tryLock, contention, the
// fencing token, refreshTimeout, release (its script publishes the
// release), and a waiting lock woken by that message. Its tryLock takes
// the fencing token with INCR after the SET, which the proxy refuses:
// through the proxy the check names the refusal, and the lock it did
// take expires.
async function simpleRedisMutex() {
  const { createClient } = require('redis');
  const { lock, tryLock } = require('simple-redis-mutex');
  const r = createClient({ socket: { host, port } });
  await r.connect();
  const lockKey = `@simple-redis-mutex:lock-${key}`;
  try {
    let hasLock;
    let release;
    try {
      [hasLock, release] = await tryLock(r, key, { timeout: 1500 });
    } catch (e) {
      check(`tryLock refused: ${e.message}`, true);
      check('the lock taken expires', await waitFor(async () => (await r.exists(lockKey)) === 0));
      return;
    }
    check('tryLock', hasLock === true && release.fencingToken >= 1);
    const [again] = await tryLock(r, key, { timeout: 1500 });
    check('contended tryLock is false', again === false);
    await release.refreshTimeout();
    const t = await r.pTTL(lockKey);
    check('refreshTimeout', t > 1000 && t <= 1500, t);
    const waiting = lock(r, key, { timeout: 3000, pollingInterval: 100000, failAfter: 10000 });
    await sleep(100);
    const t0 = Date.now();
    await release();
    const release2 = await waiting;
    check('waiting lock woken by the release', Date.now() - t0 < 5000 && release2.fencingToken > release.fencingToken);
    await release2();
    check('released', (await r.exists(lockKey)) === 0);
  } catch (e) {
    console.log(`BROKE ${e && e.stack ? e.stack : e}`);
    process.exit(2);
  } finally {
    await r.quit().catch(() => {});
    process.exit(failures > 0 ? 1 : 0); // its subscriber would keep node running
  }
}

// redis-lock 1.0 over node-redis v4 (installed as redis4): a lock is
// SET NX PX of the expiry time, retried every 50ms while taken; done()
// deletes the key with a plain DEL when the holder's own clock says it
// has not expired. The proxy refuses DEL: through it done() rejects with
// the refusal, and the lock expires with its TTL.
async function redisLock() {
  const { createClient } = require('redis4');
  const r = createClient({ socket: { host, port } });
  await r.connect();
  try {
    const lock = require('redis-lock')(r);
    const done = await lock(key, 1500);
    const lockKey = `lock.${key}`;
    const v = await r.get(lockKey);
    check('lock', v !== null && Number(v) > Date.now());
    const t = await r.pTTL(lockKey);
    check('pttl within the timeout', t > 0 && t <= 1500, t);
    // A second lock waits, retrying, until the first is done.
    let second = null;
    const waiting = lock(key, 1500).then((d) => { second = d; });
    await sleep(150);
    check('contended lock waits', second === null);
    try {
      const n = await done();
      check('done releases', n === 1, n);
    } catch (e) {
      check(`done refused: ${e.message}`, true);
    }
    await waiting;
    check('the waiting lock gets it', typeof second === 'function' && (await r.exists(lockKey)) === 1);
    try {
      const n = await second();
      check('second done releases', n === 1 && (await r.exists(lockKey)) === 0, n);
    } catch (e) {
      check(`second done refused: ${e.message}`, true);
      check('the lock expires', await waitFor(async () => (await r.exists(lockKey)) === 0));
    }
  } finally {
    await r.quit().catch(() => {});
  }
}

// ioredis's own reconnect, which every ioredis-based lock above relies
// on: the server closes the idle connection (IDLE_SECONDS), ioredis dials
// again, names the connection again, and the lock code goes on.
async function ioredisReconnect() {
  const Redis = require('ioredis');
  const r = new Redis({ host, port, connectionName: 'io-locker', retryStrategy: () => 50 });
  try {
    const RELEASE = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end';
    check('acquire', (await r.set(key, 'tok', 'PX', 5000, 'NX')) === 'OK');
    check('client setname from connectionName', (await r.client('GETNAME')) === 'io-locker');
    const id = await r.client('ID');
    let closed = false;
    r.once('close', () => { closed = true; });
    check('server closes the idle connection', await waitFor(() => closed));
    check('reconnected', await waitFor(() => r.status === 'ready'));
    check('command after the reconnect', (await r.get(key)) === 'tok' && (await r.client('ID')) !== id);
    check('name set again on reconnect', (await r.client('GETNAME')) === 'io-locker');
    check('release', (await r.eval(RELEASE, 1, key, 'tok')) === 1);
  } finally {
    r.disconnect();
  }
}

const libraries = {
  'ioredis-reconnect': ioredisReconnect,
  'redis-lock': redisLock,
  'redis-semaphore': redisSemaphore,
  redlock4,
  redlock5,
  'redlock-universal-ioredis': () => redlockUniversal('ioredis'),
  'redlock-universal-node-redis': () => redlockUniversal('node-redis'),
  warlock,
  'simple-redis-mutex': simpleRedisMutex,
};

libraries[library]().then(
  () => process.exit(failures > 0 ? 1 : 0),
  (e) => {
    console.log(`BROKE ${e && e.stack ? e.stack : e}`);
    process.exit(2);
  },
);
