# The locks a Django user takes through django-redis 5.2 (Debian
# python3-django-redis, over python3-redis 4.3): cache.lock(), redis-py's
# Lock on the cache's connection pool (acquire, owned, locked, extend,
# reacquire, contention with blocking_timeout, a blocking acquire woken by
# the release, release, a stale release, the with block), and the
# cache.add() mutex of Celery's "one task at a time" recipe (add, a
# contended add, get, delete; add without a timeout). The same script runs
# against one redis-server and through redlock-proxy; the test compares
# what it prints.
#
# Usage: python3 djlock.py HOST PORT KEY
# Prints "ok <check>" or "FAIL <check>: <why>" per check; exits 1 if any
# check failed, 2 if the script itself broke.

import sys
import threading
import time
import traceback

host, port, key = sys.argv[1], int(sys.argv[2]), sys.argv[3]

from django.conf import settings

settings.configure(
    CACHES={
        "default": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": "redis://%s:%d/0" % (host, port),
            "OPTIONS": {"CLIENT_CLASS": "django_redis.client.DefaultClient"},
        }
    }
)

import django

django.setup()

from django.core.cache import cache
from redis.exceptions import LockNotOwnedError

failures = 0


def check(name, cond, why=""):
    global failures
    if cond:
        print("ok " + name)
    else:
        failures += 1
        print("FAIL %s: %s" % (name, why))
    sys.stdout.flush()


def main():
    lock = cache.lock(key, timeout=5)
    check("lock acquire", lock.acquire(blocking=False))
    check("owned and locked", lock.owned() and lock.locked())
    ttl = cache.ttl(key)
    check("cache.ttl within the timeout", 0 < ttl <= 5, ttl)

    other = cache.lock(key, timeout=5)
    check("contended acquire with blocking_timeout is false", not other.acquire(blocking_timeout=0.3))
    check("contender does not own", not other.owned())

    check("extend", lock.extend(10) and 5 < cache.ttl(key) <= 15, cache.ttl(key))
    check("reacquire", lock.reacquire() and 0 < cache.ttl(key) <= 5, cache.ttl(key))
    lock.release()
    check("release", not cache.has_key(key))
    short = cache.lock(key, timeout=0.5)
    check("acquire a short lock", short.acquire(blocking=False))
    time.sleep(0.7)
    try:
        short.release()
        check("stale release raises LockNotOwnedError", False, "no error")
    except LockNotOwnedError:
        check("stale release raises LockNotOwnedError", True)

    # A blocking acquire wins once the holder releases.
    holder = cache.lock(key, timeout=5, thread_local=False)  # released by another thread
    holder.acquire()
    t = threading.Timer(0.3, holder.release)
    t.start()
    waiter = cache.lock(key, timeout=5, sleep=0.05)
    t0 = time.monotonic()
    got = waiter.acquire(blocking_timeout=5)
    waited = time.monotonic() - t0
    t.join()
    check("blocking acquire wins after the release", got and waited >= 0.25, "%s after %.2fs" % (got, waited))
    waiter.release()

    with cache.lock(key, timeout=5):
        check("with block holds the lock", cache.has_key(key))
    check("with block released the lock", not cache.has_key(key))

    # Celery's recipe: cache.add as a mutex, cache.delete to release.
    mutex = key + ":add"
    check("add", cache.add(mutex, "true", timeout=3))
    check("contended add is false", not cache.add(mutex, "other", timeout=3))
    check("get shows the value", cache.get(mutex) == "true", cache.get(mutex))
    try:
        check("delete releases", cache.delete(mutex) and not cache.has_key(mutex))
    except Exception as e:  # the proxy refuses DEL
        check("delete refused: " + str(e), True)
        deadline = time.monotonic() + 10
        while cache.has_key(mutex) and time.monotonic() < deadline:
            time.sleep(0.1)
        check("the add mutex expires", not cache.has_key(mutex))
    forever = key + ":forever"
    try:
        added = cache.add(forever, "true", timeout=None)
        check("add without a timeout never expires", added and cache.ttl(forever) is None, cache.ttl(forever))
        cache.delete(forever)
    except Exception as e:  # the proxy refuses a lock without a TTL
        check("add without a timeout refused: " + str(e), not cache.has_key(forever))


try:
    main()
except Exception:
    print("BROKE " + traceback.format_exc())
    sys.exit(2)
sys.exit(1 if failures else 0)
