"""Drive redis-py's Lock through redlock-proxy.

Usage: python3 pylock.py HOST PORT KEY

Prints one line per check, "ok <check>" or "FAIL <check>: <why>", and
exits 1 if any check failed (2 if the script itself broke). Run it with
Debian's /usr/bin/python3, which has python3-redis 4.3.4.
"""

import sys
import time

import redis
from redis.exceptions import LockNotOwnedError

failures = 0


def check(name, cond, why=""):
    global failures
    if cond:
        print("ok " + name, flush=True)
    else:
        failures += 1
        print("FAIL %s: %s" % (name, why), flush=True)


def main():
    host, port, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    r = redis.Redis(host=host, port=port, socket_timeout=5, socket_connect_timeout=5)

    lock = r.lock(key, timeout=5, blocking_timeout=1)
    check("acquire", lock.acquire() is True)
    check("owned", lock.owned() is True)
    check("locked", lock.locked() is True)

    # extend(2) adds 2s to what is left of 5s; PTTL is conservative, so
    # it is above 5000 only if the add happened.
    check("extend add", lock.extend(2) is True)
    pttl = r.pttl(key)
    check("pttl after extend add", 5000 < pttl <= 7000, "PTTL %s" % pttl)

    check("extend replace_ttl", lock.extend(3, replace_ttl=True) is True)
    pttl = r.pttl(key)
    check("pttl after extend replace_ttl", 0 < pttl <= 3000, "PTTL %s" % pttl)

    check("reacquire", lock.reacquire() is True)
    pttl = r.pttl(key)
    check("pttl after reacquire", 3000 < pttl <= 5000, "PTTL %s" % pttl)

    other = r.lock(key, timeout=5)
    check("contended non-blocking acquire", other.acquire(blocking=False) is False)
    t0 = time.monotonic()
    got = other.acquire(blocking=True, blocking_timeout=0.3)
    took = time.monotonic() - t0
    check("contended acquire with blocking_timeout", got is False and took < 3, "got %s after %.2fs" % (got, took))

    lock.release()
    check("release", lock.locked() is False and r.get(key) is None)

    check("acquire after release", other.acquire(blocking=False) is True)
    other.release()
    check("release of the second lock", r.get(key) is None)

    # A lock whose TTL ran out is no longer owned: release raises.
    stale = r.lock(key + ":stale", timeout=0.2)
    check("acquire short lock", stale.acquire(blocking=False) is True)
    time.sleep(0.5)
    check("short lock expired", r.get(key + ":stale") is None)
    try:
        stale.release()
        check("stale release raises LockNotOwnedError", False, "release returned")
    except LockNotOwnedError:
        check("stale release raises LockNotOwnedError", True)

    with r.lock(key + ":with", timeout=5, blocking_timeout=1):
        check("with block holds the lock", r.get(key + ":with") is not None)
    check("with block released the lock", r.get(key + ":with") is None)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a check that broke is a failure too
        print("FAIL unexpected %s: %s" % (type(e).__name__, e), flush=True)
        sys.exit(2)
    sys.exit(1 if failures else 0)
