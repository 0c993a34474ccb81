// node-redis with RESP3 through the proxy: a lock cycle, a contended
// acquire and a script. Prints one "ok <check>" line per check that
// passed, and exits non-zero at the first that did not.
// Usage: node noderesp3.mjs host port key
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, 'npm', 'package.json'));
const { createClient } = require('redis');

const [host, port, key] = process.argv.slice(2);
const release = 'if redis.call("get",KEYS[1]) == ARGV[1] then\n    return redis.call("del",KEYS[1])\nelse\n    return 0\nend';

function check(name, ok, got) {
  if (!ok) {
    console.log(`FAIL ${name}: got ${JSON.stringify(got)}`);
    process.exit(1);
  }
  console.log(`ok ${name}`);
}

const client = createClient({ socket: { host, port: Number(port), reconnectStrategy: false }, RESP: 3 });
client.on('error', (err) => { console.log(`FAIL client error: ${err}`); process.exit(1); });
await client.connect();

const hello = await client.sendCommand(['HELLO']);
const proto = hello instanceof Map ? hello.get('proto') : hello.proto;
check('HELLO reports proto 3', proto === 3, hello);

let r = await client.set(key, 'tok-node', { NX: true, PX: 5000 });
check('acquire', r === 'OK', r);
r = await client.set(key, 'other', { NX: true, PX: 5000 });
check('contended acquire gets null', r === null, r);
r = await client.get(key);
check('get returns the token', r === 'tok-node', r);
r = await client.eval(release, { keys: [key], arguments: ['other'] });
check('release with another token returns 0', r === 0, r);
r = await client.eval(release, { keys: [key], arguments: ['tok-node'] });
check('release returns 1', r === 1, r);
r = await client.get(key);
check('get after release is null', r === null, r);
r = await client.set(key, 'tok-2', { NX: true, PX: 5000 });
check('acquire after release', r === 'OK', r);
r = await client.evalSha('e950836ed1e694540c503ef9972b8de518044d3b', { keys: [key], arguments: ['tok-2'] });
check('EVALSHA of redsync delete returns 1', r === 1, r);
await client.quit();
