# The lock code a Perl user writes with AnyEvent::Redis 0.24 (Debian
# libanyevent-redis-perl), a non-blocking client: SET NX PX, contention,
# GET, PTTL, a compare-and-pexpire extend and a compare-and-delete release
# by EVAL and by EVALSHA after SCRIPT LOAD, 16 acquires in flight at once
# on one connection (one winner), the WATCH/MULTI/EXEC release, INFO as
# it parses it, and a waiter woken by the release's PUBLISH on a
# subscribed connection. The same script runs against one redis-server
# and through redlock-proxy; the test compares what it prints.
#
# Usage: perl aelock.pl HOST PORT KEY
# Prints "ok <check>" or "FAIL <check>: <why>" per check; exits 1 if any
# check failed, 2 if the script itself broke.

use strict;
use warnings;
use AnyEvent;
use AnyEvent::Redis;
use Digest::SHA qw(sha1_hex);

my ($host, $port, $key) = @ARGV;
$| = 1;

my $failures = 0;
sub check {
    my ($name, $ok, $why) = @_;
    if ($ok) {
        print "ok $name\n";
    } else {
        $failures++;
        print "FAIL $name: ", (defined $why ? $why : ''), "\n";
    }
}

my $RELEASE = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end';
my $EXTEND = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end';
my $RELEASE_NOTIFY = 'if redis.call("get",KEYS[1]) == ARGV[1] then redis.call("del",KEYS[1]) redis.call("publish",ARGV[2],"released") return 1 end return 0';

# run waits for a command's reply; an error reply dies with its text.
sub run { my $cv = shift; return $cv->recv }

my $ok = eval {
    my $r = AnyEvent::Redis->new(host => $host, port => $port, on_error => sub { die @_ });
    my $other = AnyEvent::Redis->new(host => $host, port => $port, on_error => sub { die @_ });

    check('ping', run($r->ping) eq 'PONG');
    my $token = 'tok-' . $$;
    check('acquire', run($r->set($key, $token, 'NX', 'PX', 5000)) eq 'OK');
    check('get shows the token', run($r->get($key)) eq $token);
    my $pttl = run($r->pttl($key));
    check('pttl within the ttl', $pttl > 0 && $pttl <= 5000, $pttl);
    check('contended acquire is undef', !defined run($other->set($key, 'other', 'NX', 'PX', 5000)));
    check('extend', run($r->eval($EXTEND, 1, $key, $token, 8000)) == 1 && run($r->pttl($key)) > 5000);
    check('extend by a non-owner is 0', run($other->eval($EXTEND, 1, $key, 'other', 8000)) == 0);
    check('release by a non-owner is 0', run($other->eval($RELEASE, 1, $key, 'other')) == 0);
    my $sha = run($r->script('LOAD', $RELEASE));
    check('script load returns the sha1', $sha eq sha1_hex($RELEASE), $sha);
    check('release with evalsha', run($r->evalsha($sha, 1, $key, $token)) == 1);
    check('free after release', run($r->exists($key)) == 0);
    check('stale release is 0', run($r->evalsha($sha, 1, $key, $token)) == 0);

    # 16 acquires in flight at once on one connection, then their replies.
    my @cvs = map { $r->set($key, "racer-$_", 'NX', 'PX', 5000) } 1 .. 16;
    my @won = grep { defined $cvs[$_]->recv } 0 .. 15;
    my $holder = run($r->get($key));
    check('16 acquires in flight, one winner', @won == 1 && $holder eq 'racer-' . ($won[0] + 1), scalar(@won));

    # WATCH, GET, MULTI, DEL, EXEC: the release of a client without scripts.
    run($other->watch($key));
    my $seen = run($other->get($key));
    run($other->multi);
    my $del = $other->del($key);
    my $exec = run($other->exec);
    check('watch/multi/exec release', ref $exec eq 'ARRAY' && $exec->[0] == 1 && $del->recv == 1 && run($r->exists($key)) == 0,
        defined $exec ? "@$exec" : 'undef');

    my $info = run($r->info);
    check('info parses, redis_version', ref $info eq 'HASH' && defined $info->{redis_version});

    # A waiter subscribed to the lock's channel wakes on the release.
    my $sub = AnyEvent::Redis->new(host => $host, port => $port, on_error => sub { die @_ });
    my $woken = AE::cv;
    my $channel = "$key:released";
    my $messages = 0;
    $sub->subscribe($channel, sub { my ($msg, $ch) = @_; $messages++; $woken->send("$ch $msg") });
    run($r->set($key, $token, 'NX', 'PX', 5000));
    my $w = AE::timer 0.3, 0, sub { $r->eval($RELEASE_NOTIFY, 1, $key, $token, $channel) };
    my $t = AE::timer 5, 0, sub { $woken->send('timeout') };
    my $got = $woken->recv;
    check('waiter woken by the release', $got eq "$channel released", $got);
    my $settle = AE::cv;
    my $s = AE::timer 0.3, 0, sub { $settle->send };
    $settle->recv;
    check('one message', $messages == 1, $messages);
    check('released', run($r->exists($key)) == 0);
    1;
};
if (!$ok) {
    print "BROKE $@\n";
    exit 2;
}
exit($failures ? 1 : 0);
