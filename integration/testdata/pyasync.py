"""Drive asyncio Redis locks: redis-py's redis.asyncio Lock (Debian
python3-redis 4.3.4), or the lock code an aioredis 1.3 user writes
(Debian python3-aioredis; aioredis 1.3 has no Redis lock of its own).
The same script runs against one redis-server and through
redlock-proxy; the test compares what it prints.

Usage: python3 pyasync.py HOST PORT KEY redis.asyncio|aioredis

Prints one line per check, "ok <check>" or "FAIL <check>: <why>", and
exits 1 if any check failed (2 if the script itself broke). Run it with
Debian's /usr/bin/python3.
"""

import asyncio
import hashlib
import secrets
import sys
import time
import traceback

failures = 0

RELEASE = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end'
EXTEND = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end'


def check(name, cond, why=""):
    global failures
    if cond:
        print("ok " + name, flush=True)
    else:
        failures += 1
        print("FAIL %s: %s" % (name, why), flush=True)


async def redis_asyncio(host, port, key):
    import redis.asyncio as aredis
    from redis.exceptions import LockError, LockNotOwnedError

    r = aredis.Redis(host=host, port=port, socket_timeout=5, socket_connect_timeout=5)
    try:
        lock = r.lock(key, timeout=5, blocking_timeout=1)
        check("acquire", await lock.acquire() is True)
        check("owned", await lock.owned() is True)
        check("locked", await lock.locked() is True)
        pttl = await r.pttl(key)
        check("pttl within the timeout", 0 < pttl <= 5000, "PTTL %s" % pttl)

        check("extend add", await lock.extend(2) is True)
        pttl = await r.pttl(key)
        check("pttl after extend add", 5000 < pttl <= 7000, "PTTL %s" % pttl)
        check("extend replace_ttl", await lock.extend(3, replace_ttl=True) is True)
        pttl = await r.pttl(key)
        check("pttl after extend replace_ttl", 0 < pttl <= 3000, "PTTL %s" % pttl)
        check("reacquire", await lock.reacquire() is True)
        pttl = await r.pttl(key)
        check("pttl after reacquire", 3000 < pttl <= 5000, "PTTL %s" % pttl)

        other = r.lock(key, timeout=5)
        check("contended non-blocking acquire", await other.acquire(blocking=False) is False)
        check("contender does not own", await other.owned() is False)
        t0 = time.monotonic()
        got = await other.acquire(blocking=True, blocking_timeout=0.3)
        took = time.monotonic() - t0
        check("contended acquire with blocking_timeout", got is False and took < 3, "got %s after %.2fs" % (got, took))

        # A blocking acquire waits, and wins once the holder releases.
        async def release_soon():
            await asyncio.sleep(0.3)
            await lock.release()

        t0 = time.monotonic()
        got, _ = await asyncio.gather(other.acquire(blocking=True, blocking_timeout=10), release_soon())
        took = time.monotonic() - t0
        check("blocking acquire wins after the release", got is True and await other.owned() is True and 0.2 < took < 10,
              "got %s after %.2fs" % (got, took))
        await other.release()
        check("release", await r.get(key) is None and await other.locked() is False)

        # A lock whose timeout ran out is no longer owned: release and
        # extend raise.
        stale = r.lock(key + ":stale", timeout=0.2)
        check("acquire short lock", await stale.acquire(blocking=False) is True)
        deadline = time.monotonic() + 10
        while await r.exists(key + ":stale") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        check("short lock expired", await r.exists(key + ":stale") == 0)
        try:
            await stale.extend(1)
            check("stale extend raises LockNotOwnedError", False, "extend returned")
        except LockNotOwnedError:
            check("stale extend raises LockNotOwnedError", True)
        try:
            await stale.release()
            check("stale release raises LockNotOwnedError", False, "release returned")
        except LockNotOwnedError:
            check("stale release raises LockNotOwnedError", True)
        try:
            await r.lock(key + ":none", timeout=1).release()
            check("release of an unacquired lock raises LockError", False, "release returned")
        except LockError:
            check("release of an unacquired lock raises LockError", True)

        async with r.lock(key + ":with", timeout=5, blocking_timeout=1):
            check("async with holds the lock", await r.get(key + ":with") is not None)
        check("async with released the lock", await r.get(key + ":with") is None)
    finally:
        await r.close()


async def aioredis_idiom(host, port, key):
    import aioredis

    r = await aioredis.create_redis_pool((host, port), encoding="utf-8", timeout=5, minsize=1, maxsize=20)
    try:
        token = secrets.token_hex(16)
        check("acquire", await r.set(key, token, pexpire=5000, exist=r.SET_IF_NOT_EXIST) is True)
        check("get shows the token", await r.get(key) == token)
        pttl = await r.pttl(key)
        check("pttl within the ttl", 0 < pttl <= 5000, "PTTL %s" % pttl)
        check("contended acquire is false", await r.set(key, "other", expire=5, exist=r.SET_IF_NOT_EXIST) is False)

        n = await r.eval(EXTEND, keys=[key], args=[token, 10000])
        pttl = await r.pttl(key)
        check("extend", n == 1 and 5000 < pttl <= 10000, "%s %s" % (n, pttl))
        check("extend by a non-owner is 0", await r.eval(EXTEND, keys=[key], args=["other", 20000]) == 0)
        check("release by a non-owner is 0", await r.eval(RELEASE, keys=[key], args=["other"]) == 0)

        sha = await r.script_load(RELEASE)
        check("script load returns the sha1", sha == hashlib.sha1(RELEASE.encode()).hexdigest(), sha)
        check("script exists", await r.script_exists(sha) == [1])
        check("release with evalsha", await r.evalsha(sha, keys=[key], args=[token]) == 1)
        check("free after release", await r.get(key) is None and await r.exists(key) == 0 and await r.pttl(key) == -2)
        check("stale release is 0", await r.evalsha(sha, keys=[key], args=[token]) == 0)

        # Many tasks race for the key over the pool: exactly one wins.
        tokens = [secrets.token_hex(8) for _ in range(16)]
        won = await asyncio.gather(*(r.set(key, t, pexpire=5000, exist=r.SET_IF_NOT_EXIST) for t in tokens))
        winner = [t for t, w in zip(tokens, won) if w]
        check("16 racing acquires, one winner", len(winner) == 1 and await r.get(key) == winner[0], str(won))

        # The optimistic extend and release on one connection of the
        # pool: WATCH, GET, and MULTI/EXEC only when the token holds.
        async def watched(t, queue):
            with await r as conn:
                await conn.watch(key)
                if await conn.get(key) != t:
                    await conn.unwatch()
                    return None
                tr = conn.multi_exec()
                queue(tr)
                return await tr.execute()

        res = await watched(winner[0], lambda tr: tr.pexpire(key, 8000))
        pttl = await r.pttl(key)
        check("watch/multi_exec pexpire extends", res == [1] and 5000 < pttl <= 8000, "%s %s" % (res, pttl))
        check("watch/multi_exec release by a non-owner does nothing",
              await watched("other", lambda tr: tr.delete(key)) is None and await r.get(key) == winner[0])
        check("watch/multi_exec release", await watched(winner[0], lambda tr: tr.delete(key)) == [1]
              and await r.exists(key) == 0)

        # Blocking acquire, as a user loops it: another holder's short
        # lock expires, and the loop gets the key.
        check("other holds a short lock", await r.set(key, "other", pexpire=700, exist=r.SET_IF_NOT_EXIST) is True)
        token = secrets.token_hex(16)
        t0 = time.monotonic()
        got = False
        while not got and time.monotonic() - t0 < 10:
            got = await r.set(key, token, pexpire=5000, exist=r.SET_IF_NOT_EXIST)
            if not got:
                await asyncio.sleep(0.05)
        took = time.monotonic() - t0
        check("blocking acquire gets the key after the expiry", got and took > 0.3, "%s after %.2fs" % (got, took))
        check("release", await r.eval(RELEASE, keys=[key], args=[token]) == 1 and await r.exists(key) == 0)
    finally:
        r.close()
        await r.wait_closed()


def main():
    host, port, key, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    try:
        asyncio.run({"redis.asyncio": redis_asyncio, "aioredis": aioredis_idiom}[kind](host, port, key))
    except Exception:
        print("BROKE", traceback.format_exc(), flush=True)
        sys.exit(2)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
