#!/usr/bin/perl
# The lock code a Perl user writes with Redis.pm (Debian libredis-perl)
# or Redis::Fast (libredis-fast-perl), which share one API: SET NX PX to
# acquire, a compare-and-delete script (EVAL, then EVALSHA after SCRIPT
# LOAD) to release, a compare-and-pexpire script to extend, the
# WATCH/MULTI release, pipelined commands with callbacks; the handshake
# (name => CLIENT SETNAME) and the reconnect after the server closed an
# idle connection. The same script runs against one redis-server and
# through redlock-proxy; the test compares what it prints.
#
# Usage: perl pllock.pl HOST PORT KEY Redis|Redis::Fast IDLE_SECONDS
# Prints "ok <check>" or "FAIL <check>: <why>" per check; exits 1 if any
# check failed, 2 if the script itself broke.
use strict;
use warnings;
use Digest::SHA qw(sha1_hex);
use Time::HiRes qw(time sleep);

my ($host, $port, $key, $kind, $idle) = @ARGV;
eval "require $kind; 1" or die $@;

my $RELEASE = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end';
my $EXTEND = 'if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("pexpire",KEYS[1],ARGV[2]) else return 0 end';

$| = 1;
my $failures = 0;
sub check {
    my ($name, $cond, $why) = @_;
    if ($cond) {
        print "ok $name\n";
    } else {
        $failures++;
        print "FAIL $name: ", ($why // ''), "\n";
    }
}
sub def { defined $_[0] ? $_[0] : 'undef' }
sub token { join '', map { sprintf '%02x', int rand 256 } 1 .. 16 }

my $ok = eval {
    my %opt = (server => "$host:$port", reconnect => 5, every => 50_000, read_timeout => 5, cnx_timeout => 5);
    my $r = $kind->new(%opt, name => 'pl-locker');
    my $other = $kind->new(%opt);

    check('ping', $r->ping eq 'PONG');
    check('client setname from name', def($r->client_getname) eq 'pl-locker');

    my $tok = token();
    check('acquire', def($r->set($key, $tok, 'NX', 'PX', 5000)) eq 'OK');
    check('get shows the token', def($r->get($key)) eq $tok);
    my $pttl = $r->pttl($key);
    check('pttl within the ttl', $pttl > 0 && $pttl <= 5000, $pttl);
    check('exists', $r->exists($key) == 1);
    check('contended acquire is undef', !defined $other->set($key, 'other', 'NX', 'PX', 5000));
    check('contended acquire with EX is undef', !defined $other->set($key, 'other', 'EX', 5, 'NX'));

    my $n = $r->eval($EXTEND, 1, $key, $tok, 10_000);
    $pttl = $r->pttl($key);
    check('extend', $n == 1 && $pttl > 5000 && $pttl <= 10_000, "$n $pttl");
    check('extend by a non-owner is 0', $other->eval($EXTEND, 1, $key, 'other', 20_000) == 0);
    check('release by a non-owner is 0', $other->eval($RELEASE, 1, $key, 'other') == 0 && def($r->get($key)) eq $tok);

    my $sha = $r->script_load($RELEASE);
    check('script load returns the sha1', $sha eq sha1_hex($RELEASE), $sha);
    my @exists = $r->script_exists($sha);
    check('script exists', "@exists" eq '1', "@exists");
    check('release with evalsha', $r->evalsha($sha, 1, $key, $tok) == 1);
    check('free after release', !defined $r->get($key) && $r->exists($key) == 0 && $r->pttl($key) == -2);
    check('stale release is 0', $r->evalsha($sha, 1, $key, $tok) == 0);
    check('stale extend is 0', $r->eval($EXTEND, 1, $key, $tok, 5000) == 0 && $r->exists($key) == 0);

    # Pipelined: the commands go out together, the replies come back to
    # the callbacks in order.
    $tok = token();
    my @got;
    my $cb = sub { push @got, defined $_[1] ? "error" : def($_[0]) };
    $r->set($key, $tok, 'NX', 'PX', 5000, $cb);
    $r->set($key, 'again', 'NX', 'PX', 5000, $cb);
    $r->get($key, sub { push @got, def($_[0]) eq $tok ? 'token' : def($_[0]) });
    $r->eval($RELEASE, 1, $key, 'other', $cb);
    $r->wait_all_responses;
    check('pipelined acquire, contended acquire, get and stale release', "@got" eq 'OK undef token 0', "@got");

    # The optimistic release: WATCH, GET, and MULTI only when the token
    # still holds the key.
    my $release_watched = sub {
        my ($c, $t) = @_;
        $c->watch($key);
        if (def($c->get($key)) ne $t) {
            $c->unwatch;
            return 'unwatched';
        }
        $c->multi;
        $c->del($key);
        my @res = $c->exec;
        return "@{[map { ref $_ ? qq(@$_) : def($_) } @res]}";
    };
    check('watch/multi release by a non-owner does nothing', $release_watched->($other, 'other') eq 'unwatched' && def($r->get($key)) eq $tok);
    check('watch/multi release', $release_watched->($r, $tok) eq '1' && $r->exists($key) == 0);

    # Blocking acquire, as a user loops it: another holder's short lock
    # expires, and the loop gets the key.
    check('other holds a short lock', def($other->set($key, 'other', 'NX', 'PX', 700)) eq 'OK');
    $tok = token();
    my $t0 = time;
    my $got;
    until ($got || time - $t0 > 10) {
        $got = $r->set($key, $tok, 'NX', 'PX', 5000);
        sleep 0.05 unless $got;
    }
    my $waited = time - $t0;
    check('blocking acquire gets the key after the expiry', def($got) eq 'OK' && $waited > 0.3, sprintf('%s after %.2fs', def($got), $waited));

    # The server closes the idle connection; with reconnect the next
    # command dials again (and names the connection again).
    if ($idle > 0) {
        my $id = $r->client_id;
        # Wait until the server's close reaches the socket (Redis::Fast
        # keeps its socket in C and tells only the descriptor).
        my $fd = $kind eq 'Redis' ? fileno($r->{sock}) : $r->__sock;
        my $rin = '';
        vec($rin, $fd, 1) = 1;
        check('server closes the idle connection', select(my $rout = $rin, undef, undef, $idle + 10) == 1);
        check('command after the server closed reconnects', def($r->get($key)) eq $tok && $r->client_id != $id);
        check('name set again on reconnect', def($r->client_getname) eq 'pl-locker');
    }
    check('release after reconnect', $r->eval($RELEASE, 1, $key, $tok) == 1 && $other->exists($key) == 0);
    1;
};
if (!$ok) {
    my $err = $@;
    $err =~ s/\s+$//;
    print "BROKE $err\n";
    exit 2;
}
exit($failures > 0 ? 1 : 0);
