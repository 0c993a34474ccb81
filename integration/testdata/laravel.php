<?php
// Drive Laravel's cache locks (Debian php-illuminate-cache 8.83, over
// php-illuminate-redis's connections): PhpRedisLock over php-redis, or
// RedisLock over Predis, as Cache::lock() builds them; and the Redis
// funnel (ConcurrencyLimiter). The same script runs against one
// redis-server and through redlock-proxy; the test compares what it
// prints.
//
// Usage: php laravel.php HOST PORT NAME phpredis|predis
// Prints "ok <check>" or "FAIL <check>: <why>" per check; exits 1 if any
// check failed, 2 if the script itself broke. A check that names a
// refusal is printed only where the server refused.

require_once '/usr/share/php/Illuminate/Cache/autoload.php';
require_once '/usr/share/php/Illuminate/Redis/autoload.php';
require_once '/usr/share/php/Predis/autoload.php';

use Illuminate\Cache\PhpRedisLock;
use Illuminate\Cache\RedisLock;
use Illuminate\Contracts\Cache\LockTimeoutException;
use Illuminate\Redis\Connections\PhpRedisConnection;
use Illuminate\Redis\Connections\PredisConnection;
use Illuminate\Redis\Limiters\ConcurrencyLimiter;

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

// firstLine is an error's text up to its first comma: the refusal,
// without what follows it (Predis may append the arguments).
function firstLine(string $msg): string
{
    return trim(explode(',', $msg)[0]);
}

try {
    [, $host, $port, $name, $kind] = $argv;
    if ($kind === 'phpredis') {
        $r = new \Redis();
        $r->connect($host, (int) $port, 5.0);
        $conn = new PhpRedisConnection($r);
        $lock = function (string $name, int $seconds, ?string $owner = null) use ($conn) {
            return new PhpRedisLock($conn, $name, $seconds, $owner);
        };
    } else {
        $conn = new PredisConnection(new \Predis\Client(['host' => $host, 'port' => (int) $port, 'read_write_timeout' => 5]));
        $lock = function (string $name, int $seconds, ?string $owner = null) use ($conn) {
            return new RedisLock($conn, $name, $seconds, $owner);
        };
    }

    // Cache::lock($name, 5)->get(): SET name owner EX 5 NX.
    $a = $lock($name, 5);
    check('get acquires', $a->get() === true);
    check('the key holds the owner', $conn->get($name) === $a->owner());
    $ttl = $conn->ttl($name);
    check('ttl within the seconds', $ttl > 0 && $ttl <= 5, var_export($ttl, true));
    $b = $lock($name, 5);
    check('contended get is false', $b->get() === false);
    check('release by a non-owner is false', $b->release() === false && $conn->get($name) === $a->owner());

    // restoreLock: the same owner in another process releases it.
    $restored = $lock($name, 5, $a->owner());
    check('a restored lock releases', $restored->release() === true && $conn->exists($name) == 0);
    check('stale release is false', $a->release() === false);

    // get(callback): runs the code under the lock and releases it.
    $inside = null;
    $result = $lock($name, 5)->get(function () use ($conn, $name, &$inside) {
        $inside = $conn->exists($name);
        return 'done';
    });
    check('get with a callback runs it under the lock', $result === 'done' && $inside == 1);
    check('released after the callback', $conn->exists($name) == 0);

    // block(): waits for another holder's lock to expire, or times out.
    $holder = $lock($name, 1);
    $holder->get();
    $t0 = microtime(true);
    $timedOut = false;
    try {
        $lock($name, 5)->betweenBlockedAttemptsSleepFor(50)->block(0);
    } catch (LockTimeoutException $e) {
        $timedOut = true;
    }
    check('block(0) of a held lock times out', $timedOut);
    $waiter = $lock($name, 5)->betweenBlockedAttemptsSleepFor(50);
    $got = $waiter->block(5);
    $waited = microtime(true) - $t0;
    check('block waits for the expiry', $got === true && $conn->get($name) === $waiter->owner() && $waited > 0.3, sprintf('%.2fs', $waited));
    check('released after block', $waiter->release() === true && $conn->exists($name) == 0);

    // forceRelease is a plain DEL. php-redis returns an error reply as
    // false and keeps it in getLastError; Predis throws it.
    $c = $lock($name, 5);
    $c->get();
    $refused = null;
    try {
        $c->forceRelease();
        if ($kind === 'phpredis' && $conn->exists($name) == 1) {
            $refused = firstLine((string) $conn->client()->getLastError());
            $conn->client()->clearLastError();
        }
    } catch (\Throwable $e) {
        $refused = firstLine($e->getMessage());
    }
    if ($refused === null) {
        check('forceRelease deletes', $conn->exists($name) == 0);
    } else {
        check("forceRelease refused: $refused", true);
        check('the owner still releases', $c->release() === true && $conn->exists($name) == 0);
    }

    // Redis::funnel(): a concurrency limiter over slots name1..nameN,
    // taken by an MGET script.
    // php-redis's false for the refused script reads as no free slot, so
    // the funnel times out; Predis throws the refusal.
    $funnel = new ConcurrencyLimiter($conn, "$name:funnel", 2, 5);
    try {
        $ran = $funnel->block(1, function () use ($conn, $name) {
            return $conn->exists("$name:funnel1");
        });
        check('funnel runs the callback in a slot', $ran == 1);
        check('funnel slot released', $conn->exists("$name:funnel1") == 0);
    } catch (\Throwable $e) {
        if ($kind === 'phpredis') {
            $why = $conn->client()->getLastError();
            check('funnel refused: ' . get_class($e) . ' after ' . $why, true);
        } else {
            check('funnel refused: ' . firstLine($e->getMessage()), true);
        }
    }
} catch (\Throwable $e) {
    echo 'BROKE ', get_class($e), ': ', $e->getMessage(), "\n";
    exit(2);
}
exit($failures > 0 ? 1 : 0);
