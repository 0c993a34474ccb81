<?php
// Drive malkusch/lock 2.2 (Debian php-malkusch-lock): PHPRedisMutex over
// php-redis, or PredisMutex over Predis, with the server at HOST PORT as
// its only Redis. The same script runs against one redis-server and
// through redlock-proxy; the test compares what it prints.
//
// Usage: php malkusch.php HOST PORT NAME phpredis|predis
// Prints "ok <check>" or "FAIL <check>: <why>" per check; exits 1 if any
// check failed, 2 if the script itself broke.

require_once '/usr/share/php/Malkusch/Lock/autoload.php';
require_once '/usr/share/php/Predis/autoload.php';

use malkusch\lock\exception\LockReleaseException;
use malkusch\lock\exception\TimeoutException;
use malkusch\lock\mutex\PHPRedisMutex;
use malkusch\lock\mutex\PredisMutex;

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

// The compare-and-delete a user writes by hand to give a lock back.
const RELEASE = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end';

try {
    [, $host, $port, $name, $kind] = $argv;
    $connect = function () use ($host, $port, $kind) {
        if ($kind === 'phpredis') {
            $r = new \Redis();
            $r->connect($host, (int) $port, 5.0);
            return $r;
        }
        return new \Predis\Client(['host' => $host, 'port' => (int) $port, 'read_write_timeout' => 5]);
    };
    // raw plays a second process: it reads the lock and takes it over.
    $raw = $connect();
    $mutex = function (string $name, int $timeout) use ($connect, $kind) {
        return $kind === 'phpredis'
            ? new PHPRedisMutex([$connect()], $name, $timeout)
            : new PredisMutex([$connect()], $name, $timeout);
    };
    // raw's SET, in each client's spelling; true when it was set.
    $setNX = function (string $key, string $token, int $ms) use ($raw, $kind): bool {
        return $kind === 'phpredis'
            ? $raw->set($key, $token, ['nx', 'px' => $ms]) === true
            : $raw->set($key, $token, 'PX', $ms, 'NX') !== null;
    };
    $release = function (string $key, string $token) use ($raw, $kind) {
        return $kind === 'phpredis' ? $raw->eval(RELEASE, [$key, $token], 1) : $raw->eval(RELEASE, 1, $key, $token);
    };
    $key = "lock_$name"; // malkusch prefixes the name

    // synchronized: the lock is held while the code runs (a random token,
    // an expiry of timeout+1 seconds) and released after.
    $a = $mutex($name, 2);
    $inside = null;
    $result = $a->synchronized(function () use ($raw, $key, &$inside) {
        $inside = [$raw->get($key), $raw->pttl($key)];
        return 42;
    });
    check('synchronized returns the code\'s result', $result === 42, var_export($result, true));
    check('held while the code runs', is_string($inside[0]) && strlen($inside[0]) === 32, var_export($inside[0], true));
    check('pttl within timeout+1 seconds', $inside[1] > 2000 && $inside[1] <= 3000, var_export($inside[1], true));
    check('released after', $raw->exists($key) == 0);

    // A contender gives up with TimeoutException after its timeout; the
    // holder keeps the lock.
    $contended = null;
    $a->synchronized(function () use ($mutex, $name, $raw, $key, &$contended) {
        $token = $raw->get($key);
        $t0 = microtime(true);
        try {
            $mutex($name, 1)->synchronized(function () {
                return 'ran';
            });
            $contended = 'ran';
        } catch (TimeoutException $e) {
            $contended = sprintf('%s after %.1fs', get_class($e), microtime(true) - $t0);
        }
        $contended .= $raw->get($key) === $token ? ', holder kept' : ', holder lost';
    });
    check('contended synchronized times out', preg_match('/^malkusch\\\\lock\\\\exception\\\\TimeoutException after (0\.[89]|[1-4]\.\d)s, holder kept$/', $contended) === 1, $contended);
    check('released after contention', $raw->exists($key) == 0);

    // check()->then(): the double-checked lock runs the code only when the
    // check passes, before and under the lock.
    $ran = 0;
    $no = $mutex($name, 2)->check(function () {
        return false;
    })->then(function () use (&$ran) {
        $ran++;
    });
    $heldInside = false;
    $yes = $mutex($name, 2)->check(function () {
        return true;
    })->then(function () use (&$ran, $raw, $key, &$heldInside) {
        $ran++;
        $heldInside = $raw->exists($key) == 1;
        return 'done';
    });
    check('check false skips the code', $no === false);
    check('check true runs it under the lock', $yes === 'done' && $ran === 1 && $heldInside);
    check('released after check', $raw->exists($key) == 0);

    // A code exception is rethrown, and the lock is released.
    $thrown = null;
    try {
        $mutex($name, 2)->synchronized(function () {
            throw new \DomainException('boom');
        });
    } catch (\DomainException $e) {
        $thrown = $e->getMessage();
    }
    check('exception in the code is rethrown', $thrown === 'boom');
    check('released after the exception', $raw->exists($key) == 0);

    // Blocking acquire: another process holds the key for 1.2s; the mutex
    // spins until it expires, then runs the code.
    check('other process holds the key', $setNX($key, 'other', 1200));
    $t0 = microtime(true);
    $got = $mutex($name, 4)->synchronized(function () use ($raw, $key) {
        return $raw->get($key);
    });
    $waited = microtime(true) - $t0;
    check('blocking synchronized runs after the expiry', is_string($got) && $got !== 'other' && $waited > 0.5 && $waited < 4, sprintf('%s after %.2fs', var_export($got, true), $waited));
    check('released after waiting', $raw->exists($key) == 0);

    // The lock is lost while the code runs (another process released the
    // token and took the key): the stale release fails with
    // LockReleaseException, carrying the code's result, and leaves the
    // new holder's key alone.
    $stale = null;
    try {
        $mutex($name, 2)->synchronized(function () use ($raw, $key, $release, $setNX) {
            $release($key, $raw->get($key));
            $setNX($key, 'thief', 5000);
            return 'lost';
        });
    } catch (LockReleaseException $e) {
        $stale = $e->getCodeResult();
    }
    check('stale release throws LockReleaseException', $stale === 'lost', var_export($stale, true));
    check('new holder keeps the key', $raw->get($key) === 'thief');
    check('new holder releases', $release($key, 'thief') == 1 && $raw->exists($key) == 0);
} catch (\Throwable $e) {
    echo 'BROKE ', get_class($e), ': ', $e->getMessage(), "\n";
    exit(2);
}
exit($failures > 0 ? 1 : 0);
