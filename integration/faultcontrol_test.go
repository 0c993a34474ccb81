package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The scenarios that need a special setting, and the negative controls:
// the same scenarios over a proxy built with -tags brokenbuild and broken
// on purpose, where the checkers must report a violation. A safety check
// that never fails on a broken build proves nothing.

// noValidityOpts makes validity run out within node_timeout: with a
// drift_factor of 0.5 and a TTL of twice node_timeout, a grant has
// node_timeout - 2ms - elapsed left.
// Probes are slow (a probe's timeout is the probe interval), so that a
// master slower than node_timeout but quicker than that is brought back
// up soon after the breaker took it down.
func noValidityOpts() proxyOpts {
	return proxyOpts{nodeTimeout: faultNodeTimeout, driftFactor: 0.5, ttl: 2 * faultNodeTimeout, probe: time.Second}
}

// noValidityLeft makes two masters answer 10ms after node_timeout, for a
// few seconds, and returns the window of acquisitions made under the
// fault. An acquisition that waits for them waits out node_timeout and
// has no validity left, even if the other three grant at once. The
// breaker takes the two down after a few timeouts, and the probes bring
// them back up about every second; while they are down, acquisitions are
// quick and may be granted. The workload pauses while the fault starts
// and ends, so that no acquisition straddles either edge.
func noValidityLeft(r *run) (from, to time.Duration) {
	time.Sleep(time.Second)
	r.w.pause()
	for _, i := range r.pick(2) {
		r.fc.slow(i, faultNodeTimeout+10*time.Millisecond)
	}
	from = r.fc.h.now()
	r.w.resume()
	time.Sleep(3 * time.Second)
	r.w.pause()
	to = r.fc.h.now()
	for i := range faultMasters {
		r.fc.heal(i)
	}
	r.w.resume()
	return from, to
}

// lateIn returns the late OKs of acquisitions made within [from, to), and
// how many OKs there were.
func lateIn(ops []op, from, to time.Duration) (late []string, oks int) {
	late = checkLateOK(ops, func(o op) bool {
		if o.Start < from || o.End >= to {
			return true
		}
		oks++
		return false
	})
	return late, oks
}

// Two masters answer too late for any validity to be left. The safety
// checkers pass. An OK that arrives late by the client's clock is logged,
// not failed: the margin here is the drift allowance's 2ms, less than
// the time a loaded machine may take to deliver a reply the proxy sent in
// time. The negative control below shows that a proxy that grants
// without validity is caught in this scenario.
func TestFaultNoValidityLeft(t *testing.T) {
	r := startRun(t, 1, noValidityOpts())
	from, to := noValidityLeft(r)
	healed := r.fc.h.now()
	bad := r.finish(healed)
	late, oks := lateIn(r.fc.h.snapshot(), from, to)
	t.Logf("under the fault: %d OKs, %d late by the client's clock", oks, len(late))
	reportViolations(t, r.fc.h, r.seed, bad)
}

// One master's clock jumps forward past a lock's TTL, so that it drops the
// key early. A real jump of a redis-server's clock needs libfaketime; this
// emulates its effect on the key with PEXPIRE on that master alone, which
// the proxy cannot see (its TIME does not move). Held on all five masters
// the lock stays safe: four still hold it. Held on exactly three, a second
// client gets it: the limit the docs document, and checker (a) reports
// it.
func TestFaultClockJumpOnOneMaster(t *testing.T) {
	r := startRun(t, 1, proxyOpts{})
	order := r.pick(faultMasters)
	time.Sleep(time.Second)
	// Held on all five, by each lock family in turn.
	var all []string
	for k, name := range allFamilies {
		key := "clock-all-" + strconv.Itoa(k)
		r.w.extra[key] = family(t, name)
		all = append(all, key)
		contend(r, r.fc.h, r.w.extra[key], key, order[0], faultMasters)
	}

	// Exactly a quorum, in a history of its own: the violation is expected.
	h := newHistory()
	r.fc.blackhole(order[3])
	r.fc.blackhole(order[4])
	time.Sleep(100 * time.Millisecond)
	contend(r, h, r.w.familyOf("clock-quorum"), "clock-quorum", order[0], 3)
	bad := checkExclusion(h.snapshot())
	if len(bad) == 0 {
		t.Errorf("held on exactly three masters, one of which dropped the key early, no second holder was seen; want checker (a) to report one")
	}
	t.Logf("the documented limit, as checker (a) reports it: %s", strings.Join(bad, "; "))
	reportViolations(t, r.fc.h, r.seed, r.finish(r.fc.h.now(), all...))
}

// contend has client 100 acquire key with family f for max_ttl on
// exactly held masters (jump among them), heals every master, has master
// jump drop the key, and has client 101 try for the key for the rest of
// the TTL, recording in h.
func contend(r *run, h *history, f *lockFamily, key string, jump, held int) {
	t := r.t
	t.Helper()
	holder := proxyClient(t, r.px[0].Addr)
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; ; n++ {
		token := fmt.Sprintf("%s-a-%d", key, n)
		res, _, _ := acquireWith(h, f, holder, 100, key, token, faultMaxTTL, r.po.drift(faultMaxTTL))
		if res == resOK {
			if got := r.fc.holders(f, key, token); len(got) == held && slices.Contains(got, jump) {
				break
			}
			releaseWith(h, f, holder, 100, key, token) // a node missed it under load: again
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not acquired within 10s: last %s", key, res)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for i := range faultMasters {
		r.fc.heal(i)
	}
	if err := r.fc.masters[jump].direct.PExpire(context.Background(), key, time.Millisecond).Err(); err != nil {
		t.Fatalf("PEXPIRE %s on master %d: %v", key, jump, err)
	}
	other := proxyClient(t, r.px[0].Addr)
	start := time.Now()
	for n := 0; time.Since(start) < faultMaxTTL-200*time.Millisecond; n++ {
		acquireWith(h, f, other, 101, key, fmt.Sprintf("%s-b-%d", key, n), faultTTL, r.po.drift(faultTTL))
		time.Sleep(20 * time.Millisecond)
	}
}

// FLUSHALL on one of exactly three masters holding a lock: the same
// process, so no connection breaks and no run_id changes, and the proxy
// learns of it only when a probe finds its membership record gone. Until
// then a second client can get the lock: a documented limit, bounded by
// the probe interval. The counterexample runs in a history of its own,
// which must show the gap closing: every second holder got its OK within
// flushBound of the flush. The workload pauses for that long, so that its
// own keys (held on the same three) are not caught in the gap. Two
// proxies run, the holder on one and the second client on the other:
// both must quarantine the master, whichever saw the record gone.
func TestFaultFlushAllWhileHeldOnExactlyThree(t *testing.T) {
	const flushBound = 600 * time.Millisecond // probe_interval 100ms, plus slack for load
	r := startRun(t, 2, proxyOpts{})
	order := r.pick(faultMasters)
	h := newHistory()
	time.Sleep(time.Second)
	r.fc.blackhole(order[3])
	r.fc.blackhole(order[4])
	time.Sleep(100 * time.Millisecond)
	holder := proxyClient(t, r.px[0].Addr)
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; ; n++ {
		token := fmt.Sprintf("flush-a-%d", n)
		res, _, _ := acquire(h, holder, 100, "flush", token, faultMaxTTL, r.po.drift(faultMaxTTL))
		if res == resOK {
			if got := r.fc.holders(r.w.familyOf("flush"), "flush", token); len(got) == 3 && slices.Contains(got, order[0]) {
				break
			}
			release(h, holder, 100, "flush", token)
		}
		if time.Now().After(deadline) {
			t.Fatalf("flush not acquired on exactly three masters within 10s: last %s", res)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.w.pause()
	flushed := h.now()
	r.fc.flushAll(order[0])
	r.fc.heal(order[3])
	r.fc.heal(order[4])
	// The second client goes through the other proxy, which may not see
	// the record empty: it learns of the flush from the first's mark.
	other := proxyClient(t, r.px[1].Addr)
	for n := 0; h.now() < flushed+faultMaxTTL; n++ {
		if h.now() > flushed+flushBound {
			r.w.resume()
		}
		acquire(h, other, 101, "flush", fmt.Sprintf("flush-b-%d", n), faultTTL, r.po.drift(faultTTL))
		time.Sleep(20 * time.Millisecond)
	}
	r.w.resume()
	ws := windows(h.snapshot(), "flush")
	gap := 0
	for _, a := range ws {
		for _, b := range ws {
			if a.client != 100 || b.client != 101 || b.begin >= a.end || b.end <= a.begin {
				continue
			}
			if b.begin >= flushed+flushBound {
				t.Errorf("client 101 held the lock [%v, %v) while client 100 held it [%v, %v), %v after the FLUSHALL; want no second holder after %v",
					b.begin, b.end, a.begin, a.end, b.begin-flushed, flushBound)
				continue
			}
			gap++
			t.Logf("in the gap before the proxy saw the FLUSHALL, client 101 held the lock [%v, %v) while client 100 held it [%v, %v)", b.begin, b.end, a.begin, a.end)
		}
	}
	t.Logf("%d second holders in the gap", gap)
	reportViolations(t, r.fc.h, r.seed, r.finish(r.fc.h.now()))
	r.wantState(0, order[0], "quarantined", flushed)
	r.wantState(1, order[0], "quarantined", flushed)
}

// wantViolation fails t unless the checkers reported a violation that
// contains want.
func wantViolation(t *testing.T, bad []string, want string) {
	t.Helper()
	for _, b := range bad {
		if strings.Contains(b, want) {
			t.Logf("the checkers caught the broken proxy (%d violations), e.g. %s", len(bad), b)
			return
		}
	}
	t.Errorf("the checkers reported %d violations over a broken proxy, none containing %q; want at least one:\n%s", len(bad), want, joinLines(bad))
}

// Proxies that count one node's grant as a quorum give the same lock to
// several clients under plain contention. Two of them: one proxy writes
// each call to the nodes in one order from the caller's goroutine, so its
// contenders reach every node in nearly the same order and rarely split;
// two proxies' connections reach the nodes in orders of their own.
func TestFaultNegativeControlQuorumOfOne(t *testing.T) {
	r := startRun(t, 2, proxyOpts{bin: buildBrokenBinary(t), env: []string{"REDLOCK_PROXY_BROKEN=quorum1"}})
	wantViolation(t, r.finish(0), " held [")
}

// A proxy that counts one node's grant as a quorum lets a writer of
// Redisson's read-write lock in beside a reader, and the checker, which
// lets readers share, still reports it.
func TestFaultNegativeControlReadWriteQuorumOfOne(t *testing.T) {
	r := startRun(t, 1, proxyOpts{bin: buildBrokenBinary(t), env: []string{"REDLOCK_PROXY_BROKEN=quorum1"}, families: []string{famRW}})
	bad := r.finish(0)
	for _, b := range bad {
		if strings.Contains(b, ", shared) held [") && strings.Contains(b, ", exclusive) held [") {
			t.Logf("the checker caught a writer beside a reader (%d violations), e.g. %s", len(bad), b)
			return
		}
	}
	t.Errorf("the checkers reported %d violations over a broken proxy, none a writer beside a reader:\n%s", len(bad), joinLines(bad))
}

// A proxy that grants without validity left gives OKs the client cannot
// use, when the masters are slow.
func TestFaultNegativeControlNoValidity(t *testing.T) {
	po := noValidityOpts()
	po.bin, po.env = buildBrokenBinary(t), []string{"REDLOCK_PROXY_BROKEN=novalidity"}
	r := startRun(t, 1, po)
	from, to := noValidityLeft(r)
	r.finish(r.fc.h.now())
	late, oks := lateIn(r.fc.h.snapshot(), from, to)
	t.Logf("under the fault: %d OKs, %d late", oks, len(late))
	wantViolation(t, late, "late OK")
}

// A proxy that lets a restarted master's grants count gives the victim of
// the Redlock counterexample a second holder.
func TestFaultNegativeControlNoQuarantine(t *testing.T) {
	r := startRun(t, 1, proxyOpts{bin: buildBrokenBinary(t), env: []string{"REDLOCK_PROXY_BROKEN=noquarantine"}})
	wantViolation(t, restartWhileHeldOnThree(r, r.fc.restart), "key victim: client 101")
}
