package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fault scenarios. Each runs loadClients clients making at least
// loadAttempts contended acquisitions over loadKeys keys through a real
// proxy binary, over five real masters each behind an in-process
// toxiproxy, injects its faults at seeded choices, and then runs the
// checkers of history_test.go over everything recorded.

const (
	faultMasters = 5
	// liveBound is how soon after the last fault heals every key must be
	// acquirable again: max_ttl for locks left behind, plus a quarantine
	// of a restarted master, plus slack for a loaded machine.
	liveBound = 2*faultMaxTTL + 2*time.Second
	// loadLimit bounds the workload of one scenario.
	loadLimit = 60 * time.Second
)

// run is one scenario in progress.
type run struct {
	t    *testing.T
	seed uint64
	rng  *rand.Rand
	fc   *faultCluster
	px   []*proxySub
	w    *workload
	po   proxyOpts
	// watchers are the proxies' INFO watchers; stopWatching ends their
	// polling loops and waits for them.
	watchers     []*infoWatcher
	stopWatching func()
}

// startRun starts the masters, the given number of proxies (with po) and
// the workload spread over them.
func startRun(t *testing.T, proxies int, po proxyOpts) *run {
	t.Helper()
	skipLong(t)
	po.defaults(t)
	r := &run{t: t, seed: seedFor(t), po: po}
	r.rng = rand.New(rand.NewPCG(r.seed, 0))
	r.fc = startFaultCluster(t, faultMasters)
	var addrs []string
	for range proxies {
		ps := startProxySub(t, r.fc.addrs(), po)
		ps.h = r.fc.h
		r.fc.waitAllUp(ps, 10*time.Second)
		r.px = append(r.px, ps)
		addrs = append(addrs, ps.Addr)
	}
	r.watch()
	r.w = startWorkload(t, r.fc, r.seed, po.ttl, po.drift(po.ttl), po.families, addrs...)
	return r
}

// watch starts an INFO watcher on each proxy, after a first poll that
// reads every master's state and downs counter to compare with.
func (r *run) watch() {
	r.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var watching sync.WaitGroup
	r.stopWatching = sync.OnceFunc(func() {
		cancel()
		watching.Wait()
	})
	r.t.Cleanup(r.stopWatching)
	for k, ps := range r.px {
		w := r.fc.newWatcher(k, ps)
		if _, err := w.poll(ctx); err != nil {
			r.t.Fatalf("proxy %d: INFO: %v", k, err)
		}
		r.watchers = append(r.watchers, w)
		watching.Go(func() { w.run(ctx) })
	}
	watching.Go(func() { r.fc.h.watchStalls(ctx) })
}

// pick returns k distinct masters chosen by the seed.
func (r *run) pick(k int) []int {
	return r.rng.Perm(faultMasters)[:k]
}

// finish runs the workload until liveBound after healed and until it has
// made its attempts, stops it, probes every key (and extra ones) and
// returns what the checkers report.
func (r *run) finish(healed time.Duration, extra ...string) []string {
	r.t.Helper()
	r.w.runFor(r.t, healed+liveBound-r.fc.h.now(), loadLimit)
	r.w.stop()
	probe(r.t, r.fc.h, r.px[0].Addr, append(extra, r.w.liveKeys()...), r.w.familyOf, r.po.ttl, r.po.drift(r.po.ttl), liveBound)
	r.lastPoll()
	return r.w.check(r.t, healed, liveBound)
}

// lastPoll stops the INFO watchers and polls each proxy once more, now
// that no call is made through it, so that a down spell in the last poll
// interval is in the history before the checkers read it: a master the
// breaker took down just before a release, which then did not call it,
// still holds the key, as Redlock allows.
func (r *run) lastPoll() {
	r.t.Helper()
	r.stopWatching()
	for _, w := range r.watchers {
		since := w.sent
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		spells, err := w.poll(ctx)
		cancel()
		switch {
		case err != nil:
			r.t.Errorf("proxy %d: the last INFO poll failed, so down spells after %v are unknown: %v", w.k, since, err)
		case spells > 0:
			r.t.Logf("proxy %d: the last INFO poll saw %d down spells since %v", w.k, spells, since)
		}
	}
}

// checkNoOK fails the test if an acquisition made within [from, to) got
// OK, and unless every one of them got an error reply (or nil, if
// nilToo). One that ends after to may have seen the fault heal.
func (r *run) checkNoOK(from, to time.Duration, nilToo bool, why string) {
	r.t.Helper()
	n := 0
	for _, o := range r.fc.h.snapshot() {
		if o.Op != opAcquire || o.Start < from || o.End >= to {
			continue
		}
		n++
		if !strings.HasPrefix(o.Result, "error: ") && !(nilToo && o.Result == resNil) {
			r.t.Errorf("%s: client %d's SET %s at %v got %s; want an error reply", why, o.Client, o.Key, o.Start, o.Result)
		}
	}
	r.t.Logf("%s: %d acquisitions in [%v, %v), none granted", why, n, from, to)
	if n == 0 {
		r.t.Errorf("%s: no acquisition was tried in [%v, %v)", why, from, to)
	}
}

// wantState fails the test unless proxy k reported master i in state
// (INFO) at some time after from.
func (r *run) wantState(k, i int, state string, from time.Duration) {
	r.t.Helper()
	name := fmt.Sprintf("proxy%d-%s", k, state)
	var seen []string // what the proxy did report of the master, to say why
	for _, o := range r.fc.h.snapshot() {
		if o.Op != opFault || o.Nodes[0] != i || !strings.HasPrefix(o.Result, fmt.Sprintf("proxy%d-", k)) {
			continue
		}
		if o.Result == name && o.Start >= from {
			r.t.Logf("proxy %d reported master %d %s for %v", k, i, state, min(o.End, r.fc.h.now())-o.Start)
			return
		}
		seen = append(seen, fmt.Sprintf("%s [%v, %v)", o.Result, o.Start, o.End))
	}
	r.t.Errorf("proxy %d never reported master %d %s after %v; it reported %v", k, i, state, from, seen)
}

// Contention alone: nothing is ever held twice.
func TestFaultNoFaults(t *testing.T) {
	r := startRun(t, 1, proxyOpts{})
	reportViolations(t, r.fc.h, r.seed, r.finish(0))
}

// Two of five masters crash, then a third: while three are down nothing
// is granted and every client gets an error; once they are back (empty),
// locking resumes.
func TestFaultKillTwoThenThird(t *testing.T) {
	r := startRun(t, 1, proxyOpts{})
	down, to := killTwoThenThird(r)
	for _, i := range down {
		r.wantState(0, i, "quarantined", to)
	}
}

// killTwoThenThird plays the scenario of TestFaultKillTwoThenThird on r
// and checks it: no OK while three are down, no violation. It returns the
// masters killed and when the three were still down.
func killTwoThenThird(r *run) (down []int, to time.Duration) {
	r.t.Helper()
	down = r.pick(3)
	time.Sleep(1500 * time.Millisecond)
	r.fc.kill(down[0])
	r.fc.kill(down[1])
	time.Sleep(2 * time.Second)
	r.fc.kill(down[2])
	time.Sleep(100 * time.Millisecond)
	from := r.fc.h.now()
	time.Sleep(3 * time.Second)
	to = r.fc.h.now()
	for _, i := range down {
		r.fc.restart(i)
	}
	healed := r.fc.h.now()
	r.checkNoOK(from, to, false, "three of five masters down")
	reportViolations(r.t, r.fc.h, r.seed, r.finish(healed))
	return down, to
}

// The same with lock scripts served by their effect: each key is locked
// by another family's scripts.
func TestFaultFamiliesKillTwoThenThird(t *testing.T) {
	killTwoThenThird(startRun(t, 1, proxyOpts{families: []string{famGoZero, famRedisson, famSesame, famSymfony, famRW}}))
}

// The Redlock page's counterexample: a lock held on exactly three of five
// masters, one of the three restarts empty, and the two that never had it
// come back. No second client may get the lock while the first holds it.
func TestFaultRestartEmptyWhileHeldOnExactlyThree(t *testing.T) {
	r := startRun(t, 1, proxyOpts{families: []string{famSpring, famMutex, famNodeRedisson, famRW}})
	bad := restartWhileHeldOnThree(r, r.fc.restart)
	reportViolations(t, r.fc.h, r.seed, bad)
}

// restartWhileHeldOnThree plays the counterexample on key "victim" while
// the workload runs, wiping one of the three holders with wipe, and
// returns what the checkers report.
func restartWhileHeldOnThree(r *run, wipe func(i int)) []string {
	t := r.t
	t.Helper()
	order := r.pick(faultMasters)
	time.Sleep(time.Second)
	r.fc.blackhole(order[3])
	r.fc.blackhole(order[4])
	holder := proxyClient(t, r.px[0].Addr)
	deadline := time.Now().Add(10 * time.Second)
	for n := 0; ; n++ {
		res, _, _ := acquire(r.fc.h, holder, 100, "victim", fmt.Sprintf("victim-a-%d", n), faultMaxTTL, r.po.drift(faultMaxTTL))
		if res == resOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("victim not acquired with two masters blackholed: last %s", res)
		}
		time.Sleep(20 * time.Millisecond)
	}
	restarted := r.fc.h.now()
	wipe(order[0])
	r.fc.heal(order[3])
	r.fc.heal(order[4])
	healed := r.fc.h.now()
	defer r.wantState(0, order[0], "quarantined", restarted)
	// A second client tries for the whole of the first one's TTL.
	other := proxyClient(t, r.px[0].Addr)
	for n := 0; time.Since(r.fc.h.base) < healed+faultMaxTTL; n++ {
		acquire(r.fc.h, other, 101, "victim", fmt.Sprintf("victim-b-%d", n), faultTTL, r.po.drift(faultTTL))
		time.Sleep(20 * time.Millisecond)
	}
	return r.finish(healed, "victim")
}

// A master stopped (SIGSTOP) for twice max_ttl, then another.
func TestFaultFreezeOneMaster(t *testing.T) {
	r := startRun(t, 1, proxyOpts{families: allFamilies})
	var healed time.Duration
	for _, i := range r.pick(2) {
		time.Sleep(time.Second)
		r.fc.freeze(i)
		time.Sleep(2 * faultMaxTTL)
		r.fc.thaw(i)
		healed = r.fc.h.now()
	}
	reportViolations(t, r.fc.h, r.seed, r.finish(healed))
}

// Two masters blackholed; then two that apply every write but lose the
// replies; then three that do, when nothing may be granted.
func TestFaultBlackholeAndLostReplies(t *testing.T) {
	r := startRun(t, 1, proxyOpts{families: allFamilies})
	time.Sleep(time.Second)
	two := r.pick(2)
	for _, i := range two {
		r.fc.blackhole(i)
	}
	time.Sleep(3 * time.Second)
	for _, i := range two {
		r.fc.heal(i)
	}
	two = r.pick(2)
	for _, i := range two {
		r.fc.loseReplies(i)
	}
	time.Sleep(3 * time.Second)
	for _, i := range two {
		r.fc.heal(i)
	}
	three := r.pick(3)
	for _, i := range three {
		r.fc.loseReplies(i)
	}
	time.Sleep(100 * time.Millisecond)
	from := r.fc.h.now()
	time.Sleep(2 * time.Second)
	to := r.fc.h.now()
	for _, i := range three {
		r.fc.heal(i)
	}
	healed := r.fc.h.now()
	r.checkNoOK(from, to, false, "replies lost from three of five masters")
	reportViolations(t, r.fc.h, r.seed, r.finish(healed))
}

// Every master answers later than the TTL: nothing is ever granted.
func TestFaultAllMastersSlowerThanTTL(t *testing.T) {
	r := startRun(t, 1, proxyOpts{families: []string{famGoZero, famSpring, famMutex}})
	time.Sleep(time.Second)
	for i := range faultMasters {
		r.fc.slow(i, faultTTL+100*time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	from := r.fc.h.now()
	time.Sleep(3 * time.Second)
	to := r.fc.h.now()
	for i := range faultMasters {
		r.fc.heal(i)
	}
	healed := r.fc.h.now()
	r.checkNoOK(from, to, false, "every master slower than the TTL")
	reportViolations(t, r.fc.h, r.seed, r.finish(healed))
}

// The proxy is killed (SIGKILL) in the middle of acquisitions and started
// again; later it is stopped (SIGSTOP) for longer than max_ttl while
// acquisitions wait on the masters. Nothing leaks past a TTL, and no OK
// arrives after its validity (checker a).
func TestFaultProxyKilledAndPaused(t *testing.T) {
	r := startRun(t, 1, proxyOpts{families: []string{famGoZero, famRedisson, famSesame, famSpring, famMutex, famRW}})
	px := r.px[0]
	time.Sleep(2 * time.Second)
	px.kill()
	time.Sleep(300 * time.Millisecond)
	px.start()
	time.Sleep(2 * time.Second)
	// Delay the masters a little so that every acquisition in flight is
	// waiting on them, not between its validity check and its reply,
	// when the proxy stops.
	for i := range faultMasters {
		r.fc.toxic(i, "slow", "latency", "upstream", `"latency":60`)
	}
	time.Sleep(40 * time.Millisecond)
	px.freeze()
	time.Sleep(2 * faultMaxTTL)
	px.thaw()
	time.Sleep(200 * time.Millisecond)
	for i := range faultMasters {
		r.fc.heal(i)
	}
	healed := r.fc.h.now()
	reportViolations(t, r.fc.h, r.seed, r.finish(healed))
}

// Two proxies serve the same masters, one master is blackholed and
// another restarts empty, and one proxy pauses for a moment.
func TestFaultTwoProxies(t *testing.T) {
	r := startRun(t, 2, proxyOpts{families: []string{famNodeRedisson, famShedLock, famSetNX, famSymfony, famRW}})
	m := r.pick(2)
	time.Sleep(time.Second)
	r.fc.blackhole(m[0])
	time.Sleep(time.Second)
	restarted := r.fc.h.now()
	r.fc.restart(m[1])
	time.Sleep(time.Second)
	r.px[1].freeze()
	time.Sleep(300 * time.Millisecond) // less than a grant's validity: see TestFaultProxyKilledAndPaused
	r.px[1].thaw()
	r.fc.heal(m[0])
	healed := r.fc.h.now()
	reportViolations(t, r.fc.h, r.seed, r.finish(healed))
	r.wantState(0, m[1], "quarantined", restarted)
	r.wantState(1, m[1], "quarantined", restarted)
}

// A down spell that begins after the watchers' last loop poll is in the
// history the checkers read: finish polls every proxy once more.
func TestFaultLastPollRecordsLateDownSpell(t *testing.T) {
	skipLong(t)
	r := &run{t: t, fc: startFaultCluster(t, 3)}
	ps := startProxySub(t, r.fc.addrs(), proxyOpts{})
	r.fc.waitAllUp(ps, 10*time.Second)
	r.px = []*proxySub{ps}
	r.watch()
	r.stopWatching()
	// Killed behind the harness's back: only the proxy can report it.
	r.fc.masters[0].proc.Kill()
	rdb := proxyClient(t, ps.Addr)
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := rdb.Info(t.Context()).Result()
		_, node0, _ := strings.Cut(info, "\r\nnode0:")
		node0, _, _ = strings.Cut(node0, "\r\n")
		if err == nil && node0 != "" && !strings.Contains(node0, ",downs=0,") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy did not mark the killed master down within 10s: %v\n%s", err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.lastPoll()
	for _, o := range r.fc.h.snapshot() {
		if o.Op == opFault && o.Nodes[0] == 0 && o.Result == "proxy0-down-spell" {
			return
		}
	}
	t.Errorf("history after the last poll: %+v; want a proxy0-down-spell on master 0", r.fc.h.snapshot())
}
