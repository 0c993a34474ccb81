// node-redis's RESET: client.reset() after a subscription and a WATCH,
// and its pool, which sends RESET when a client comes back with a WATCH
// still on. Prints one line per step, to be compared with the same run
// against one redis-server.
// Usage: node nodereset.mjs host port key
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, 'npm', 'package.json'));
const { createClient, createClientPool } = require('redis');

const [host, port, key] = process.argv.slice(2);
const socket = { host, port: Number(port), reconnectStrategy: false };
const step = async (name, f) => {
  try {
    console.log(`${name}: ${JSON.stringify(await f())}`);
  } catch (err) {
    console.log(`${name}: error ${err.message}`);
  }
};

const client = createClient({ socket });
client.on('error', (err) => console.log(`client error: ${err.message}`));
await client.connect();
await step('acquire', () => client.set(key, 'tok', { NX: true, PX: 10000 }));
await step('subscribe', () => client.subscribe(`${key}:ch`, () => {}));
await step('reset after subscribe', () => client.reset());
await step('get after reset', () => client.get(key));
await step('watch', () => client.watch(key));
await step('reset after watch', () => client.reset());
await step('contended acquire', () => client.set(key, 'other', { NX: true, PX: 10000 }));
await client.close();

const pool = createClientPool({ socket }, { minimum: 1, maximum: 1 });
pool.on('error', (err) => console.log(`pool error: ${err.message}`));
await pool.connect();
// The client comes back to the pool with its WATCH on: the pool resets it.
await step('pool watch and get', () => pool.execute(async (c) => { await c.watch(key); return c.get(key); }));
await step('pool get after reset', () => pool.get(key));
await step('pool release', () => pool.eval(
  'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end',
  { keys: [key], arguments: ['tok'] }));
await pool.close();
