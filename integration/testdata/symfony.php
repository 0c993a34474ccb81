<?php
// Drive Symfony Lock 5.4's RedisStore (Debian php-symfony-lock) through
// redlock-proxy, with php-redis or Predis as its client.
//
// Usage: php symfony.php HOST PORT KEY phpredis|predis
// Prints "ok <check>" or "FAIL <check>: <why>" per check; exits 1 if any
// check failed, 2 if the script itself broke.

require_once '/usr/share/php/Symfony/Component/Lock/autoload.php';
require_once '/usr/share/php/Predis/autoload.php';

use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\RedisStore;

$failures = 0;
function check(string $name, bool $cond, string $why = ''): void
{
    global $failures;
    if ($cond) {
        echo "ok $name\n";
    } else {
        $failures++;
        echo "FAIL $name: $why\n";
    }
}

try {
    [, $host, $port, $key, $kind] = $argv;
    if ($kind === 'phpredis') {
        $redis = new \Redis();
        $redis->connect($host, (int) $port, 5.0);
        $raw = $redis;
    } else {
        $redis = new \Predis\Client(['host' => $host, 'port' => (int) $port, 'read_write_timeout' => 5]);
        $raw = $redis;
    }
    $factory = new LockFactory(new RedisStore($redis));

    $a = $factory->createLock($key, 3.0, false);
    check('acquire', $a->acquire() === true);
    check('isAcquired', $a->isAcquired() === true);
    $left = $a->getRemainingLifetime();
    check('remaining lifetime', $left !== null && $left > 0 && $left <= 3.0, var_export($left, true));
    $pttl = $raw->pttl($key);
    check('pttl of the sorted set', $pttl > 0 && $pttl <= 3000, var_export($pttl, true));

    $b = $factory->createLock($key, 3.0, false);
    check('contended acquire is false', $b->acquire() === false);
    check('contender does not hold', $b->isAcquired() === false);

    $a->refresh(6.0);
    $pttl = $raw->pttl($key);
    check('refresh', $pttl > 3000 && $pttl <= 6000, var_export($pttl, true));

    $conflict = false;
    try {
        $b->refresh(6.0);
    } catch (LockConflictedException $e) {
        $conflict = true;
    }
    check('refresh by a non-owner conflicts', $conflict);

    $b->release(); // not the owner: a no-op, the owner keeps the lock
    check('stale release leaves the owner', $a->isAcquired() === true && $raw->exists($key) == 1);

    $a->release();
    check('release', $a->isAcquired() === false && $raw->exists($key) == 0);

    // A blocking acquire waits until the holder's lock expires.
    $short = $factory->createLock($key, 1.5, false);
    $short->acquire();
    $waiter = $factory->createLock($key, 3.0, false);
    $t0 = microtime(true);
    $got = $waiter->acquire(true);
    $waited = microtime(true) - $t0;
    check('blocking acquire wakes after expiry', $got === true && $waited > 0.5 && $waited < 10, sprintf('%.2fs', $waited));
    $waiter->release();
    check('released after waiting', $raw->exists($key) == 0);
} catch (\Throwable $e) {
    echo 'BROKEN ' . get_class($e) . ': ' . $e->getMessage() . "\n" . $e->getTraceAsString() . "\n";
    exit(2);
}
exit($failures > 0 ? 1 : 0);
