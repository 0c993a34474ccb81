package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The fault suite's fencing checker. In every scenario the workload's
// even clients ask for a fencing token (FENCE key token) after each OK,
// and again before they release if the validity leaves time; each call
// is recorded as an opFence whose Result is the token (decimal), an
// error reply or unknown. checkFencing judges them against the holds the
// history shows.

// opFence is FENCE key token through a proxy, during the hold of token;
// or a lock family's own token for it (Redisson's RFencedLock): the
// acquire's reply, or a getToken (noteGetToken).
const opFence = "fence"

// noteGetToken marks an opFence that is RFencedLock's getToken(), a GET
// of its token counter: the counter at the time, whoever holds the lock.
// It is judged only when its reply came within the hold's validity and
// before its release was sent (then no later hold can have taken a token
// yet); a later one reads a later hold's token, as on one Redis.
const noteGetToken = "getToken"

// fences reports whether client c asks for fencing tokens: half of them
// do, so that fenced and unfenced holds of one key alternate.
func fences(c int) bool { return c%2 == 0 }

// fence sends FENCE key arg and records it as token's: arg is the token
// as the lock family holds the key (a write lock's field, say).
func fence(h *history, rdb *redis.Client, c int, key, token, arg string) {
	start := h.now()
	t, err := rdb.Do(context.Background(), "FENCE", key, arg).Int64()
	h.add(op{Client: c, Op: opFence, Key: key, Token: token, Start: start, End: h.now(),
		Result: result(err, strconv.FormatInt(t, 10))})
}

// redissonFencedFamily is Redisson's RFencedLock, its acquire scripts
// byte for byte as redissonfenced_test.go replays them: half the
// acquisitions (by a hash of the token) run lockAndGetToken's script,
// whose reply carries the token, the others lock()'s; every hold then
// reads getToken() (hold, in faultload_test.go). Unlock and renewal are
// RLock's. Its tokens come from its own counter
// (redisson_lock_token:{key}), never from FENCE.
func redissonFencedFamily(name, latchMs string, redissonKeys func(key, token string) []string) *lockFamily {
	tokenScript, lockScript, unlock := redis.NewScript(redissonFencedToken), redis.NewScript(redissonFencedLock), redis.NewScript(redissonUnlock)
	keys := func(key string) []string { return []string{key, "redisson_lock_token:{" + key + "}"} }
	f := &lockFamily{name: name, holds: holdsField, fenceArg: func(string) string { return "" }}
	f.fencedAcquire = func(ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration) (bool, string, error) {
		if !rwReader(token) { // lock(): nil when taken, else the PTTL
			v, err := lockScript.Run(ctx, rdb, keys(key), ttl.Milliseconds(), token).Result()
			switch {
			case errors.Is(err, redis.Nil):
				return true, "", nil
			case err != nil:
				return false, "", err
			case isInt(v):
				return false, "", nil
			}
			return false, "", fmt.Errorf("%s lock() replied %#v", name, v)
		}
		// lockAndGetToken: {-1, token} when taken, else {PTTL, -1}.
		v, err := tokenScript.Run(ctx, rdb, keys(key), ttl.Milliseconds(), token).Result()
		if err != nil {
			return false, "", err
		}
		if a, ok := v.([]any); ok && len(a) == 2 && isInt(a[0]) && isInt(a[1]) {
			switch {
			case a[0] == int64(-1):
				return true, strconv.FormatInt(a[1].(int64), 10), nil
			case a[1] == int64(-1):
				return false, "", nil
			}
		}
		return false, "", fmt.Errorf("%s lockAndGetToken replied %#v", name, v)
	}
	f.acquire = func(ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration) (bool, error) {
		granted, _, err := f.fencedAcquire(ctx, rdb, key, token, ttl)
		return granted, err
	}
	f.release = func(ctx context.Context, rdb *redis.Client, key, token string) (any, error) {
		return unlock.Run(ctx, rdb, redissonKeys(key, token), "0", faultTTL.Milliseconds(), token, "PUBLISH", latchMs).Result()
	}
	f.getToken = func(ctx context.Context, rdb *redis.Client, key string) (int64, error) {
		return rdb.Get(ctx, keys(key)[1]).Int64()
	}
	return f
}

// countersLost reports whether a quorum of the n masters lost their data
// (restarted empty, or flushed) in ops, whether or not some were seeded
// again in between: counters may then stop, by design (fence.go), and
// so does every RFencedLock acquisition, which takes a token.
func countersLost(ops []op, n int) bool {
	lost := map[int]bool{}
	for _, o := range ops {
		if o.Op == opFault && (o.Result == "kill" && o.End != openEnd || o.Result == "flushall") {
			lost[o.Nodes[0]] = true
		}
	}
	return len(lost) >= n/2+1
}

// liveKeys are the workload's keys that must be acquired again once the
// faults healed: every key, but the RFencedLock one after countersLost.
func (w *workload) liveKeys() []string {
	if !countersLost(w.fc.h.snapshot(), len(w.fc.masters)) {
		return w.keys
	}
	return slices.DeleteFunc(slices.Clone(w.keys), func(k string) bool { return w.families[k].name == famFenced })
}

// getToken reads the token of f's hold of key by token (RFencedLock's
// getToken()) and records it as an opFence noted noteGetToken.
func getToken(h *history, f *lockFamily, rdb *redis.Client, c int, key, token string) {
	start := h.now()
	t, err := f.getToken(context.Background(), rdb, key)
	h.add(op{Client: c, Op: opFence, Key: key, Token: token, Start: start, End: h.now(), Note: noteGetToken,
		Result: result(err, strconv.FormatInt(t, 10))})
}

// fencedHold is one granted hold and the tokens FENCE returned for it.
type fencedHold struct {
	acq    op
	fences []op // the successful ones
	ts     []int64
}

// checkFencing is the fencing checker, over every key:
//   - a hold B is later than a hold A when B's acquire was sent after A's
//     OK arrived (so B was granted after A, and by exclusion after A
//     ended): every token returned for B must be above every token
//     returned for A;
//   - a token is returned only for a current hold: a FENCE sent after
//     the hold's release was sent, after its TTL had run out on every
//     master (counted from its OK, the latest its keys were set), or
//     after a later holder's OK arrived, must not succeed;
//   - a FENCE's reply is a token (an integer above 0) or an error.
//
// It also returns how many tokens it judged and how many repeated calls
// for one hold got another token than the first (allowed when a master
// holding the record was lost in between: the hold then gets a new,
// higher token).
func checkFencing(ops []op) (bad []string, tokens, repeatsDiffer int) {
	holds := map[[2]string]*fencedHold{} // by key and token
	released := map[[2]string]time.Duration{}
	for _, o := range ops {
		id := [2]string{o.Key, o.Token}
		switch {
		case o.Op == opAcquire && o.Result == resOK:
			holds[id] = &fencedHold{acq: o}
		case o.Op == opRelease:
			if s, ok := released[id]; !ok || o.Start < s {
				released[id] = o.Start
			}
		}
	}
	for _, o := range ops {
		if o.Op != opFence || o.Result == resUnknown || strings.HasPrefix(o.Result, "error: ") {
			continue
		}
		id := [2]string{o.Key, o.Token}
		t, err := strconv.ParseInt(o.Result, 10, 64)
		h := holds[id]
		switch {
		case err != nil || t <= 0:
			bad = append(bad, fmt.Sprintf("key %s: client %d's FENCE for %s at %v replied %q; want a token above 0 or an error",
				o.Key, o.Client, o.Token, o.Start, o.Result))
			continue
		case h == nil:
			bad = append(bad, fmt.Sprintf("key %s: client %d got fencing token %d for %s, which was never granted",
				o.Key, o.Client, t, o.Token))
			continue
		}
		if s, ok := released[id]; o.Note == noteGetToken && (o.End >= h.acq.validUntil() || ok && s <= o.End) {
			continue // a read of the counter after the hold: another's token, maybe
		}
		tokens++
		if len(h.ts) > 0 && h.ts[0] != t {
			repeatsDiffer++
		}
		h.fences, h.ts = append(h.fences, o), append(h.ts, t)
		if s, ok := released[id]; ok && s <= o.Start {
			bad = append(bad, fmt.Sprintf("key %s: client %d got fencing token %d for %s from a FENCE sent at %v, after its release was sent at %v (not current)",
				o.Key, o.Client, t, o.Token, o.Start, s))
		}
		if gone := h.acq.End + h.acq.TTL; o.Start >= gone {
			bad = append(bad, fmt.Sprintf("key %s: client %d got fencing token %d for %s from a FENCE sent at %v, after its TTL ran out on every master at %v (not current)",
				o.Key, o.Client, t, o.Token, o.Start, gone))
		}
	}
	byKey := map[string][]*fencedHold{}
	for _, h := range holds {
		byKey[h.acq.Key] = append(byKey[h.acq.Key], h)
	}
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		hs := byKey[key]
		slices.SortFunc(hs, func(a, b *fencedHold) int { return int(a.acq.End - b.acq.End) })
		for _, a := range hs {
			for _, b := range hs {
				if b.acq.Start < a.acq.End {
					continue // b is not known to be later than a
				}
				for _, f := range a.fences {
					if b.acq.End <= f.Start {
						bad = append(bad, fmt.Sprintf("key %s: client %d got fencing token %s for %s from a FENCE sent at %v, after client %d's later hold (%s) got its OK at %v (not current)",
							key, f.Client, f.Result, a.acq.Token, f.Start, b.acq.Client, b.acq.Token, b.acq.End))
					}
				}
				if len(a.ts) == 0 || len(b.ts) == 0 {
					continue
				}
				if ta, tb := slices.Max(a.ts), slices.Min(b.ts); tb <= ta {
					bad = append(bad, fmt.Sprintf("key %s: client %d's hold (%s, OK at %v) got fencing token %d, not above %d of client %d's earlier hold (%s, OK at %v)",
						key, b.acq.Client, b.acq.Token, b.acq.End, tb, ta, a.acq.Client, a.acq.Token, a.acq.End))
				}
			}
		}
	}
	return bad, tokens, repeatsDiffer
}

// fenceFailures counts the FENCE calls that returned no token, by the
// first word of their error (or unknown), for the log.
func fenceFailures(ops []op) map[string]int {
	m := map[string]int{}
	for _, o := range ops {
		switch {
		case o.Op != opFence:
		case o.Result == resUnknown:
			m[resUnknown]++
		case strings.HasPrefix(o.Result, "error: "):
			w, _, _ := strings.Cut(strings.TrimPrefix(o.Result, "error: "), " ")
			m[w]++
		}
	}
	return m
}

// The fencing checker passes correct histories and reports broken ones.
func TestFencingCheckerOnHandMadeHistories(t *testing.T) {
	acq := func(client int, token string, start, end time.Duration) op {
		return op{Client: client, Op: opAcquire, Key: "k", Token: token, TTL: 500 * ms, Start: start, End: end, Result: resOK}
	}
	rel := func(client int, token string, start time.Duration) op {
		return op{Client: client, Op: opRelease, Key: "k", Token: token, Start: start, End: start + ms, Result: "1"}
	}
	fen := func(client int, token string, start time.Duration, result string) op {
		return op{Client: client, Op: opFence, Key: "k", Token: token, Start: start, End: start + 2*ms, Result: result}
	}
	get := func(client int, token string, start, end time.Duration, result string) op {
		return op{Client: client, Op: opFence, Key: "k", Token: token, Start: start, End: end, Result: result, Note: noteGetToken}
	}
	tests := []struct {
		name string
		ops  []op
		bad  string // a part of the violation wanted; "" for none
	}{
		{"successive holders, increasing tokens", []op{
			acq(1, "a", 0, 5*ms), fen(1, "a", 6*ms, "7"), fen(1, "a", 20*ms, "7"), rel(1, "a", 30*ms),
			acq(2, "b", 31*ms, 35*ms), fen(2, "b", 36*ms, "8"), rel(2, "b", 40*ms),
			acq(3, "c", 41*ms, 45*ms), rel(3, "c", 50*ms), // unfenced between
			acq(4, "d", 51*ms, 55*ms), fen(4, "d", 56*ms, "12"),
		}, ""},
		{"errors and unknown replies are not tokens", []op{
			acq(1, "a", 0, 5*ms), fen(1, "a", 6*ms, "9"), rel(1, "a", 30*ms),
			acq(2, "b", 31*ms, 35*ms), fen(2, "b", 36*ms, "error: NOQUORUM 2 granted, 0 denied, 3 failed of 5 nodes; 3 needed"),
			fen(2, "b", 37*ms, resUnknown), fen(2, "b", 600*ms, "error: NOTHELD the lock 'k' is not held by this token"),
		}, ""},
		{"acquires at once are not ordered", []op{
			acq(1, "a", 0, 10*ms), fen(1, "a", 11*ms, "9"),
			acq(2, "b", 5*ms, 600*ms), fen(2, "b", 601*ms, "8"),
		}, ""},
		{"a later holder gets the same token", []op{
			acq(1, "a", 0, 5*ms), fen(1, "a", 6*ms, "7"), rel(1, "a", 30*ms),
			acq(2, "b", 31*ms, 35*ms), fen(2, "b", 36*ms, "7"),
		}, "not above 7"},
		{"a later holder gets a lower token", []op{
			acq(1, "a", 0, 5*ms), fen(1, "a", 6*ms, "7"), rel(1, "a", 30*ms),
			acq(2, "b", 31*ms, 35*ms), fen(2, "b", 36*ms, "3"),
		}, "not above 7"},
		{"a repeat above a later holder's token", []op{
			acq(1, "a", 0, 5*ms), fen(1, "a", 6*ms, "7"), fen(1, "a", 20*ms, "9"), rel(1, "a", 30*ms),
			acq(2, "b", 31*ms, 35*ms), fen(2, "b", 36*ms, "8"),
		}, "not above 9"},
		{"a token after a later holder's OK", []op{
			acq(1, "a", 0, 5*ms),
			acq(2, "b", 505*ms, 510*ms),
			fen(1, "a", 511*ms, "9"),
		}, "later hold"},
		{"a token after the TTL ran out", []op{
			acq(1, "a", 0, 5*ms), fen(1, "a", 505*ms, "9"),
		}, "TTL ran out"},
		{"a token after the release", []op{
			acq(1, "a", 0, 5*ms), rel(1, "a", 10*ms), fen(1, "a", 12*ms, "9"),
		}, "after its release"},
		{"a token for a hold never granted", []op{
			fen(1, "a", 12*ms, "9"),
		}, "never granted"},
		{"a reply that is not a token", []op{
			acq(1, "a", 0, 5*ms), fen(1, "a", 6*ms, "0"),
		}, "want a token"},
		{"getToken answered after the release or the validity reads a later hold's", []op{
			acq(1, "a", 0, 5*ms), fen(1, "a", 0, "7"), get(1, "a", 20*ms, 40*ms, "8"), rel(1, "a", 30*ms),
			acq(2, "b", 31*ms, 35*ms), fen(2, "b", 31*ms, "8"), get(2, "b", 400*ms, 600*ms, "9"), get(2, "b", 600*ms, 601*ms, "9"),
			acq(3, "c", 560*ms, 565*ms), fen(3, "c", 560*ms, "9"),
		}, ""},
		{"getToken within the hold below an earlier hold's token", []op{
			acq(1, "a", 0, 5*ms), fen(1, "a", 0, "7"), rel(1, "a", 30*ms),
			acq(2, "b", 31*ms, 35*ms), get(2, "b", 36*ms, 37*ms, "7"),
		}, "not above 7"},
		{"getToken within the hold that is no token", []op{
			acq(1, "a", 0, 5*ms), get(1, "a", 6*ms, 7*ms, resNil),
		}, "want a token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad, _, _ := checkFencing(tt.ops)
			switch {
			case tt.bad == "" && len(bad) > 0:
				t.Errorf("checkFencing = %q; want no violation", bad)
			case tt.bad != "" && !slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, tt.bad) }):
				t.Errorf("checkFencing = %q; want a violation containing %q", bad, tt.bad)
			}
		})
	}
}

// A proxy that returns a counter's value without writing it back to a
// quorum gives a later RFencedLock holder a token no higher than an
// earlier holder's: the fencing checker reports it, within a couple of
// seconds of contention (the other checkers are not its point).
func TestFaultNegativeControlNoWriteBack(t *testing.T) {
	r := startRun(t, 1, proxyOpts{bin: buildBrokenBinary(t), env: []string{"REDLOCK_PROXY_BROKEN=nowriteback"}})
	time.Sleep(2 * time.Second)
	r.w.stop()
	bad, tokens, _ := checkFencing(r.fc.h.snapshot())
	t.Logf("%d fencing tokens judged", tokens)
	wantViolation(t, bad, "fencing token")
}

// countersLost counts the masters restarted empty or flushed, not those
// killed and left down or faulted otherwise.
func TestCountersLostNeedsAQuorumEmptied(t *testing.T) {
	fault := func(node int, what string, end time.Duration) op {
		return op{Client: -1, Op: opFault, Result: what, Nodes: []int{node}, Start: 0, End: end}
	}
	two := []op{fault(0, "kill", time.Second), fault(1, "flushall", time.Second), fault(2, "kill", openEnd), fault(3, "freeze", time.Second), fault(0, "kill", 2*time.Second)}
	if countersLost(two, 5) {
		t.Errorf("countersLost(2 of 5 emptied) = true; want false")
	}
	if three := append(two, fault(4, "kill", 3*time.Second)); !countersLost(three, 5) {
		t.Errorf("countersLost(3 of 5 emptied) = false; want true")
	}
}
