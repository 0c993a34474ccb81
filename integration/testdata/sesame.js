// Drive @sesamecare-oss/redlock (node-redlock v5 scripts behind
// redis.pcall("SELECT", tonumber(ARGV[1]))) through redlock-proxy, with one
// ioredis client: the proxy is the single Redis the library sees.
//
// Usage: node sesame.js HOST PORT KEY
// Prints "ok <check>" or "FAIL <check>: <why>" per check; exits 1 if any
// check failed, 2 if the script itself broke.
const { Redis } = require("ioredis");
const { Redlock, ExecutionError } = require("@sesamecare-oss/redlock");

let failures = 0;
function check(name, cond, why) {
  if (cond) {
    console.log("ok " + name);
  } else {
    failures++;
    console.log("FAIL " + name + ": " + (why || ""));
  }
}

async function rejects(p) {
  try {
    await p;
    return null;
  } catch (e) {
    return e;
  }
}

async function main() {
  const [host, port, key] = process.argv.slice(2);
  const client = new Redis({ host, port: Number(port), maxRetriesPerRequest: 1, lazyConnect: false });
  const redlock = new Redlock([client], { retryCount: 0 });
  const other = new Redlock([client], { retryCount: 0 });

  const lock = await redlock.acquire([key], 5000);
  check("acquire", typeof lock.value === "string" && lock.expiration > Date.now());
  check("owner holds the key", (await client.get(key)) === lock.value);
  const pttl = await client.pttl(key);
  check("pttl within the duration", pttl > 0 && pttl <= 5000, "pttl " + pttl);

  let e = await rejects(other.acquire([key], 5000));
  check("contended acquire fails with ExecutionError", e instanceof ExecutionError, String(e));
  check("holder unchanged", (await client.get(key)) === lock.value);

  const extended = await lock.extend(8000);
  const pttl2 = await client.pttl(key);
  check("extend", extended.expiration > lock.expiration || extended.expiration > Date.now() + 5000);
  check("pttl after extend", pttl2 > 5000 && pttl2 <= 8000, "pttl " + pttl2);

  await extended.release();
  check("release", (await client.exists(key)) === 0);

  e = await rejects(extended.release());
  check("stale release fails with ExecutionError", e instanceof ExecutionError, String(e));

  // Two resources at once, all or nothing.
  const multi = await redlock.acquire([key + ":a", key + ":b"], 5000);
  check("multi-key acquire", (await client.get(key + ":a")) === multi.value && (await client.get(key + ":b")) === multi.value);
  e = await rejects(other.acquire([key + ":b", key + ":c"], 5000));
  check("overlapping multi-key acquire fails", e instanceof ExecutionError && (await client.exists(key + ":c")) === 0, String(e));
  await multi.release();
  check("multi-key release", (await client.exists(key + ":a", key + ":b")) === 0);

  // db 1: the proxy serves database 0 only.
  const db1 = new Redlock([client], { retryCount: 0, db: 1 });
  e = await rejects(db1.acquire([key], 5000));
  check("db 1 is refused", e instanceof ExecutionError && (await client.exists(key)) === 0, String(e));

  // A waiting acquire (retries) wakes once the holder releases.
  const held = await redlock.acquire([key + ":wait"], 5000);
  const patient = new Redlock([client], { retryCount: 40, retryDelay: 50, retryJitter: 10 });
  const t0 = Date.now();
  const waiting = patient.acquire([key + ":wait"], 5000);
  setTimeout(() => held.release(), 300);
  const woke = await waiting;
  const waited = Date.now() - t0;
  check("waiting acquire wakes after the release", (await client.get(key + ":wait")) === woke.value && waited >= 250 && waited < 4000, waited + "ms");
  await woke.release();

  // using(): a routine under the lock, auto-extended.
  let inside = false;
  await redlock.using([key + ":using"], 1000, async () => {
    inside = (await client.exists(key + ":using")) === 1;
  });
  check("using holds the lock", inside);
  check("using released the lock", (await client.exists(key + ":using")) === 0);

  client.disconnect();
  process.exit(failures > 0 ? 1 : 0);
}

main().catch((e) => {
  console.log("BROKEN " + (e && e.stack ? e.stack : e));
  process.exit(2);
});
