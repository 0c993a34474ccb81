package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Sizes of every scenario's workload.
const (
	loadClients  = 16
	loadAttempts = 1000 // contended acquisition attempts at least
	loadKeys     = 3
)

// workload is loadClients clients contending for a few keys through one
// or more proxies. Each one that gets OK checks which masters hold its
// token, increments the key's counter on the resource server with a
// pause in the middle (a second holder would lose an update), releases,
// and checks again.
type workload struct {
	fc       *faultCluster
	ttl      time.Duration // of every acquisition
	drift    time.Duration // the proxy's drift allowance for ttl
	keys     []string
	families map[string]*lockFamily // how each key is locked
	// extra is how keys a scenario locks itself are, if not by SET NX;
	// only the scenario's goroutine reads or writes it.
	extra    map[string]*lockFamily
	seed     uint64
	attempts atomic.Int64
	oks      atomic.Int64
	pauseMu  sync.RWMutex // read-held by every turn; see pause
	paused   bool         // guarded by pauseMu
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	// longHolds counts the holds renewed past their take's validity
	// (reenterAndRenew).
	longHolds atomic.Int64
}

// startWorkload starts the clients, acquiring with ttl through proxies
// whose drift allowance for it is drift; client c talks to
// addrs[c%len(addrs)]. Key k is locked by the lock family named
// families[k%len(families)], or by SET NX without families; there are
// loadKeys keys, or one per family if more; and one more, locked by
// Redisson's RFencedLock, so that every scenario judges its tokens.
func startWorkload(t *testing.T, fc *faultCluster, seed uint64, ttl, drift time.Duration, families []string, addrs ...string) *workload {
	t.Helper()
	w := &workload{fc: fc, seed: seed, ttl: ttl, drift: drift, families: map[string]*lockFamily{}, extra: map[string]*lockFamily{}}
	if len(families) == 0 {
		families = []string{famSetNX}
	}
	w.families[""] = family(t, famSetNX)
	for k := range max(loadKeys, len(families)) {
		key := "fault-" + strconv.Itoa(k)
		w.keys = append(w.keys, key)
		w.families[key] = family(t, families[k%len(families)])
	}
	if !slices.Contains(families, famFenced) {
		key := "fault-" + strconv.Itoa(len(w.keys))
		w.keys = append(w.keys, key)
		w.families[key] = family(t, famFenced)
	}
	var names []string
	for _, key := range w.keys {
		names = append(names, key+": "+w.families[key].name)
	}
	t.Logf("lock families: %s", strings.Join(names, ", "))
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	t.Cleanup(w.stop)
	for c := range loadClients {
		rdb := proxyClient(t, addrs[c%len(addrs)])
		rng := rand.New(rand.NewPCG(seed, uint64(c)))
		w.wg.Go(func() { w.client(ctx, c, rdb, rng) })
	}
	return w
}

// proxyClient is a go-redis client to a proxy with one connection, so a
// connection lost to a fault is replaced at once.
func proxyClient(t testing.TB, addr string) *redis.Client {
	return newClient(t, addr, func(o *redis.Options) {
		o.PoolSize = 1
		o.DialTimeout = time.Second
		o.ReadTimeout, o.WriteTimeout = 2*time.Second, 2*time.Second
	})
}

// stop ends the workload and waits for its clients.
func (w *workload) stop() {
	w.cancel()
	w.wg.Wait()
}

// runFor lets the workload run for at least d and until it has made
// loadAttempts attempts, or fails t after limit.
func (w *workload) runFor(t *testing.T, d, limit time.Duration) {
	t.Helper()
	start := time.Now()
	for time.Since(start) < d || w.attempts.Load() < loadAttempts {
		if time.Since(start) > limit {
			t.Errorf("%d acquisition attempts within %v; want %d", w.attempts.Load(), limit, loadAttempts)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *workload) client(ctx context.Context, c int, rdb *redis.Client, rng *rand.Rand) {
	for n := 0; ctx.Err() == nil; n++ {
		w.pauseMu.RLock()
		if w.paused {
			w.pauseMu.RUnlock()
			time.Sleep(5 * time.Millisecond)
			continue
		}
		w.turn(c, rdb, rng, n)
		w.pauseMu.RUnlock()
	}
}

// pause stops the clients from starting calls and waits for the calls
// under way; resume lets them go on.
func (w *workload) pause() {
	w.pauseMu.Lock()
	defer w.pauseMu.Unlock()
	w.paused = true
}

func (w *workload) resume() {
	w.pauseMu.Lock()
	defer w.pauseMu.Unlock()
	w.paused = false
}

// turn is one attempt of client c: acquire, and on OK use and release.
func (w *workload) turn(c int, rdb *redis.Client, rng *rand.Rand, n int) {
	key := w.keys[rng.IntN(len(w.keys))]
	token := fmt.Sprintf("c%d-%d", c, n)
	w.attempts.Add(1)
	res, start, _ := acquireWith(w.fc.h, w.families[key], rdb, c, key, token, w.ttl, w.drift)
	switch {
	case res == resOK:
		w.oks.Add(1)
		w.hold(c, rdb, key, token, start)
	case res == resNil:
		time.Sleep(time.Duration(1+rng.IntN(3)) * time.Millisecond)
	default: // an error or no reply: back off a little longer
		time.Sleep(time.Duration(10+rng.IntN(20)) * time.Millisecond)
	}
}

// hold uses a granted lock: checks the masters, increments the counter if
// the validity leaves time, releases, and checks the masters again.
func (w *workload) hold(c int, rdb *redis.Client, key, token string, start time.Duration) {
	h := w.fc.h
	end := start + w.ttl - w.drift
	f := w.families[key]
	arg, fenced := f.fenceAs(token)
	fenced = fenced && fences(c)
	w.fc.readHolders(c, opHeld, f, key, token)
	if fenced {
		fence(h, rdb, c, key, token, arg)
	}
	if f.getToken != nil && h.now() < end-w.ttl/5 {
		getToken(h, f, rdb, c, key, token)
	}
	holds, known := 1, true
	if f.renew != nil {
		end, holds, known = w.reenterAndRenew(c, rdb, f, key, token, end)
	}
	switch {
	case h.now() >= end-w.ttl/5:
	case f.sharedHold(token):
		// A reader shares the key: it holds a moment, so that readers
		// overlap and writers wait, but writes nothing.
		time.Sleep(2 * time.Millisecond)
	default:
		w.increment(c, key, token, end)
		// The fencing checker holds a FENCE current within its take's
		// TTL: a hold renewed past it repeats none.
		if fenced && (f.renew == nil || h.now() < start+w.ttl-w.drift) {
			fence(h, rdb, c, key, token, arg) // a repeat: the same token, or a higher one after a loss
		}
	}
	for i := range holds {
		// A hold taken again is released once per take; with a count
		// down unanswered, what the masters keep is not known.
		if res := releaseWith(h, f, rdb, c, key, token); i < holds-1 && (res == resUnknown || strings.HasPrefix(res, "error: ")) {
			known = false
		}
	}
	if known {
		w.fc.readHolders(c, opGone, f, key, token)
	}
}

// increment reads the key's counter, pauses, and writes it back plus one,
// on the resource server. It is recorded as done only if the write
// happened before the lock's validity ended.
func (w *workload) increment(c int, key, token string, end time.Duration) {
	h := w.fc.h
	ctx := context.Background()
	start := h.now()
	v, err := w.fc.resource.Get(ctx, "counter:"+key).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		h.add(op{Client: c, Op: opWork, Key: key, Token: token, Start: start, End: h.now(), Result: "error: " + err.Error()})
		return
	}
	time.Sleep(2 * time.Millisecond)
	err = w.fc.resource.Set(ctx, "counter:"+key, v+1, 0).Err()
	o := op{Client: c, Op: opWork, Key: key, Token: token, Start: start, End: h.now(), Result: resOK}
	if err != nil {
		o.Result = "error: " + err.Error()
	}
	if o.End >= end {
		o.Note = "ran past the validity"
	}
	h.add(o)
}

// counters reads every key's counter from the resource server.
func (w *workload) counters(t *testing.T) map[string]int64 {
	t.Helper()
	m := map[string]int64{}
	for _, key := range w.keys {
		v, err := w.fc.resource.Get(t.Context(), "counter:"+key).Int64()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("read counter of %s: %v", key, err)
		}
		m[key] = v
	}
	return m
}

// acquire sends SET key token NX PX ttl and records it, with the drift
// allowance of the proxy (0 for the default).
func acquire(h *history, rdb *redis.Client, c int, key, token string, ttl, drift time.Duration) (res string, start, end time.Duration) {
	start = h.now()
	err := rdb.SetArgs(context.Background(), key, token, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	end = h.now()
	res = result(err, resOK)
	h.add(op{Client: c, Op: opAcquire, Key: key, Token: token, TTL: ttl, Drift: drift, Start: start, End: end, Result: res})
	return res, start, end
}

// release runs the compare-and-delete script and records it.
func release(h *history, rdb *redis.Client, c int, key, token string) string {
	return releaseByScript(h, rdb, c, key, token, distlockRelease)
}

// releaseByScript runs a compare-and-delete script and records it.
func releaseByScript(h *history, rdb *redis.Client, c int, key, token, script string) string {
	start := h.now()
	n, err := rdb.Eval(context.Background(), script, []string{key}, token).Int64()
	res := result(err, strconv.FormatInt(n, 10))
	h.add(op{Client: c, Op: opRelease, Key: key, Token: token, Start: start, End: h.now(), Result: res})
	return res
}

// result names the outcome of a call: ok (the reply), nil, an error
// reply, or unknown when no reply came.
func result(err error, ok string) string {
	var re redis.Error
	switch {
	case err == nil:
		return ok
	case errors.Is(err, redis.Nil):
		return resNil
	case errors.As(err, &re):
		return "error: " + err.Error()
	}
	return resUnknown
}

// readHolders reads key on every master directly, at once, and records
// which hold token (as family f shows it) and which could not be read.
func (fc *faultCluster) readHolders(c int, kind string, f *lockFamily, key, token string) {
	start := fc.h.now()
	held := make([]bool, len(fc.masters))
	unread := make([]bool, len(fc.masters))
	var wg sync.WaitGroup
	for i, m := range fc.masters {
		wg.Go(func() {
			ok, err := f.holds(context.Background(), m.direct, key, token)
			unread[i] = err != nil
			held[i] = ok && err == nil
		})
	}
	wg.Wait()
	o := op{Client: c, Op: kind, Key: key, Token: token, Start: start, End: fc.h.now()}
	for i := range fc.masters {
		if held[i] {
			o.Nodes = append(o.Nodes, i)
		}
		if unread[i] {
			o.Unread = append(o.Unread, i)
		}
	}
	fc.h.add(o)
}

// probe, for each key in turn, tries to acquire it (and release it), as
// familyOf says it is locked, until it succeeds or limit passes.
func probe(t *testing.T, h *history, addr string, keys []string, familyOf func(key string) *lockFamily, ttl, drift, limit time.Duration) {
	t.Helper()
	rdb := proxyClient(t, addr)
	deadline := time.Now().Add(limit)
	for i, key := range keys {
		for n := 0; time.Now().Before(deadline); n++ {
			token := fmt.Sprintf("probe-%d-%d", i, n)
			f := familyOf(key)
			if res, _, _ := acquireWith(h, f, rdb, probeClient, key, token, ttl, drift); res == resOK {
				releaseWith(h, f, rdb, probeClient, key, token)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// check runs every checker over the history and fails t on a violation.
// healed is when the last fault healed, and probes must have acquired
// every key within bound of it.
func (w *workload) check(t *testing.T, healed, bound time.Duration) []string {
	t.Helper()
	ops := w.fc.h.snapshot()
	var bad []string
	bad = append(bad, checkExclusion(ops)...)
	bad = append(bad, checkCounter(ops, w.counters(t))...)
	live := w.liveKeys()
	if len(live) < len(w.keys) {
		t.Logf("a quorum of masters lost their counters: the %s key is not judged for liveness", famFenced)
	}
	bad = append(bad, checkLiveness(ops, live, healed, bound)...)
	bad = append(bad, w.checkFamiliesUsed(t, ops)...)
	fenced, tokens, differ := checkFencing(ops)
	bad = append(bad, fenced...)
	held, judged := checkQuorumHeld(ops, len(w.fc.masters), time.Second, faultNodeTimeout)
	bad = append(bad, held...)
	if w.ttl-w.drift >= 400*time.Millisecond {
		// A thinner window is judged by its scenario: on a loaded
		// machine, a reply can take longer than a few milliseconds to
		// reach the client.
		bad = append(bad, checkLateOK(ops, nil)...)
	}
	t.Logf("%d attempts by %d clients, %d OK, %d ops recorded, %d quorum checks (d) judged, %d fencing tokens judged (%d repeats got another; no token: %v)",
		w.attempts.Load(), loadClients, w.oks.Load(), len(ops), judged, tokens, differ, fenceFailures(ops))
	if tokens == 0 && w.oks.Load() > 0 {
		bad = append(bad, "no FENCE returned a token: the fencing checker had nothing to judge")
	}
	return bad
}

// holders returns the masters that hold token at key (as family f shows
// it), read directly.
func (fc *faultCluster) holders(f *lockFamily, key, token string) []int {
	var idx []int
	for i, m := range fc.masters {
		if ok, err := f.holds(context.Background(), m.direct, key, token); err == nil && ok {
			idx = append(idx, i)
		}
	}
	return idx
}
