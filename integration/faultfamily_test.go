package integration

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// lockFamily is one served client's way of locking, as the fault
// workload replays it: its acquire (granted, taken, or an error, as the
// history records SET NX), its release, and how a master shows that a
// token holds a key.
type lockFamily struct {
	name    string
	acquire func(ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration) (granted bool, err error)
	release func(ctx context.Context, rdb *redis.Client, key, token string) (any, error)
	holds   func(ctx context.Context, m *redis.Client, key, token string) (bool, error)
	// shared, if set, says which tokens take the key shared (a read
	// lock): their holds may overlap each other, never another's.
	shared func(token string) bool
	// fenceArg, if set, is what FENCE names a token's hold by ("": not
	// fenced; a read lock's readers share the key, and a write lock's
	// field is the token and ":write").
	fenceArg func(token string) string
	// renew, if set, is the family's watchdog renewal of token's hold,
	// granted when it replies 1; its holders also take the key again
	// with their token (a re-entry), as rwExtras says.
	renew func(ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration) (renewed bool, err error)
	// fencedAcquire and getToken, if set, are a family whose every grant
	// comes with a fencing token of its own (Redisson's RFencedLock,
	// faultfence_test.go): the acquire gives it as its reply has it (""
	// when it has none), and getToken reads it during the hold.
	fencedAcquire func(ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration) (granted bool, t string, err error)
	getToken      func(ctx context.Context, rdb *redis.Client, key string) (int64, error)
}

// fenceAs is FENCE's argument for token's hold, and whether it is fenced.
func (f *lockFamily) fenceAs(token string) (string, bool) {
	if f.fenceArg == nil {
		return token, true
	}
	arg := f.fenceArg(token)
	return arg, arg != ""
}

// sharedHold reports whether token takes the key shared with f.
func (f *lockFamily) sharedHold(token string) bool { return f.shared != nil && f.shared(token) }

// Scripts the families replay that no other test defines: node-redisson
// 1.0.4's (dist/executor/CommandExecutor.js, the unlock as its pub/sub
// executor completes it) and redis-semaphore 5.8's Mutex release
// (lib/mutex/release.js), byte for byte.
const (
	nodeRedissonLock   = "\nif ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then\n  redis.call('hincrby', KEYS[1], ARGV[2], 1);\n  redis.call('pexpire', KEYS[1], ARGV[1]);\n  return nil;\nend\nreturn redis.call('pttl', KEYS[1]);"
	nodeRedissonUnlock = "\nlocal val = redis.call('get', KEYS[3]);\nif val ~= false then\n  return tonumber(val);\nend\nif (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then\n  return nil;\nend\nlocal counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);\nif (counter > 0) then\n  redis.call('pexpire', KEYS[1], ARGV[2]);\n  redis.call('set', KEYS[3], 0, 'px', ARGV[4]);\n  return 0;\nelse\n  redis.call('del', KEYS[1]);\n  redis.call('publish', KEYS[2], ARGV[1]);\n  redis.call('set', KEYS[3], 1, 'px', ARGV[4]);\n  return 1;\nend"
	mutexRelease       = "\n  local key = KEYS[1]\n  local identifier = ARGV[1]\n\n  if redis.call('get', key) == identifier then\n    return redis.call('del', key)\n  end\n\n  return 0\n  "
)

// The families' names, as scenarios choose them.
const (
	famSetNX        = "SET NX"
	famGoZero       = "go-zero"
	famRedisson     = "Redisson"
	famNodeRedisson = "node-redisson"
	famSesame       = "sesamecare"
	famSymfony      = "Symfony"
	famSpring       = "Spring"
	famShedLock     = "ShedLock"
	famMutex        = "redis-semaphore Mutex"
	famRW           = "Redisson read-write lock"
	famFenced       = "Redisson RFencedLock" // every scenario's workload has one key of it
)

// family returns the named lock family; Symfony's scripts are read from
// the installed php-symfony-lock (see symfonyScripts).
func family(t *testing.T, name string) *lockFamily {
	t.Helper()
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	run := func(body string, keys func(key, token string) []string, args func(token string, ttl time.Duration) []any) func(ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration) (any, error) {
		s := redis.NewScript(body)
		return func(ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration) (any, error) {
			return s.Run(ctx, rdb, keys(key, token), args(token, ttl)...).Result()
		}
	}
	oneKey := func(key, _ string) []string { return []string{key} }
	// byReply is an acquire that is granted when the script replies ok
	// and taken when it replies taken (nil counts as a reply).
	byReply := func(eval func(context.Context, *redis.Client, string, string, time.Duration) (any, error), ok, taken any) func(context.Context, *redis.Client, string, string, time.Duration) (bool, error) {
		return func(ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration) (bool, error) {
			v, err := eval(ctx, rdb, key, token, ttl)
			if errors.Is(err, redis.Nil) {
				v, err = nil, nil
			}
			switch {
			case err != nil:
				return false, err
			case v == ok:
				return true, nil
			case taken == "int" && isInt(v), v == taken:
				return false, nil
			}
			return false, fmt.Errorf("%s acquire replied %#v", name, v)
		}
	}
	release := func(body string, keys func(key, token string) []string, args func(token string, ttl time.Duration) []any) func(ctx context.Context, rdb *redis.Client, key, token string) (any, error) {
		eval := run(body, keys, args)
		return func(ctx context.Context, rdb *redis.Client, key, token string) (any, error) {
			return eval(ctx, rdb, key, token, 0)
		}
	}
	tokenOnly := func(token string, _ time.Duration) []any { return []any{token} }
	tokenTTL := func(token string, ttl time.Duration) []any { return []any{token, ms(ttl)} }
	setNX := func(ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration) (bool, error) {
		err := rdb.SetArgs(ctx, key, token, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
		if errors.Is(err, redis.Nil) {
			return false, nil
		}
		return err == nil, err
	}
	// Redisson's unlock sets an unlock latch for its command timeout,
	// which must be within max_ttl (the fault suite's is 2s).
	const latchMs = "1000"
	redissonKeys := func(key, token string) []string {
		return []string{key, "redisson_lock__channel:{" + key + "}", "redisson_unlock_latch:{" + key + "}:" + token}
	}
	f := &lockFamily{name: name, holds: holdsString}
	switch name {
	case famSetNX:
		f.acquire, f.release = setNX, release(distlockRelease, oneKey, tokenOnly)
	case famGoZero:
		f.acquire = byReply(run(goZeroLock, oneKey, tokenTTL), "OK", nil)
		f.release = release(goZeroRelease, oneKey, tokenOnly)
	case famRedisson:
		f.acquire = byReply(run(redissonLock, oneKey, func(token string, ttl time.Duration) []any { return []any{ms(ttl), token} }), nil, "int")
		f.release = release(redissonUnlock, redissonKeys, func(token string, _ time.Duration) []any {
			return []any{"0", ms(faultTTL), token, "PUBLISH", latchMs}
		})
		f.holds = holdsField
	case famNodeRedisson:
		f.acquire = byReply(run(nodeRedissonLock, oneKey, func(token string, ttl time.Duration) []any { return []any{ms(ttl), token} }), nil, "int")
		f.release = release(nodeRedissonUnlock, redissonKeys, func(token string, _ time.Duration) []any {
			return []any{"0", ms(faultTTL), token, latchMs}
		})
		f.holds = holdsField
	case famSesame:
		f.acquire = byReply(run(sesameAcquire, oneKey, func(token string, ttl time.Duration) []any { return []any{"0", token, ms(ttl)} }), int64(1), int64(0))
		f.release = release(sesameRelease, oneKey, func(token string, _ time.Duration) []any { return []any{"0", token} })
	case famSymfony:
		scripts := symfonyScripts(t)
		if scripts == nil {
			t.Skip("php-symfony-lock not installed")
		}
		// save (ARGV: microtime, token, ttl ms) replies true or false.
		f.acquire = byReply(run(scripts[0].body, oneKey, func(token string, ttl time.Duration) []any {
			return []any{strconv.FormatFloat(float64(time.Now().UnixMicro())/1e6, 'f', 4, 64), token, ms(ttl)}
		}), int64(1), nil)
		f.release = release(scripts[3].body, oneKey, tokenOnly)
		f.holds = holdsMember
	case famSpring:
		f.acquire = byReply(run(springObtain, oneKey, tokenTTL), int64(1), nil)
		f.release = release(springSpinUnlock, oneKey, tokenOnly)
	case famShedLock:
		f.acquire, f.release = setNX, release(shedlockDelete, oneKey, tokenOnly)
	case famMutex:
		// redis-semaphore sends SET key id PX ms NX.
		f.acquire = func(ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration) (bool, error) {
			err := rdb.Do(ctx, "set", key, token, "PX", ms(ttl), "NX").Err()
			if errors.Is(err, redis.Nil) {
				return false, nil
			}
			return err == nil, err
		}
		f.release = release(mutexRelease, oneKey, tokenOnly)
	case famRW:
		// Redisson's RReadWriteLock: each token is a reader or a writer
		// (rwReader), with Redisson's KEYS and ARGV for a thread named
		// by the token (redissonrwread_test.go).
		prefix := func(key, token string) []string { return []string{key, "{" + key + "}:" + token + ":rwlock_timeout"} }
		read := byReply(run(redissonReadLock, prefix, func(token string, ttl time.Duration) []any {
			return []any{ms(ttl), token, token + ":write"}
		}), nil, "int")
		write := byReply(run(redissonWriteLock, oneKey, func(token string, ttl time.Duration) []any {
			return []any{ms(ttl), token + ":write"}
		}), nil, "int")
		// Each unlock names a latch of its own (Redisson's request id),
		// or a re-entered hold's second unlock would read the first's.
		var unlocks atomic.Int64
		latch := func(key, token string) string {
			return "redisson_unlock_latch:{" + key + "}:" + token + ":" + strconv.FormatInt(unlocks.Add(1), 10)
		}
		readUnlock := release(redissonReadUnlock, func(key, token string) []string {
			return []string{key, "redisson_rwlock:{" + key + "}", prefix(key, token)[1], "{" + key + "}", latch(key, token)}
		}, func(token string, _ time.Duration) []any { return []any{"0", token, "PUBLISH", latchMs} })
		writeUnlock := release(redissonWriteUnlock, func(key, token string) []string {
			return []string{key, "redisson_rwlock:{" + key + "}", latch(key, token)}
		}, func(token string, _ time.Duration) []any {
			return []any{"1", ms(faultTTL), token + ":write", "PUBLISH", latchMs}
		})
		f.acquire = func(ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration) (bool, error) {
			if rwReader(token) {
				return read(ctx, rdb, key, token, ttl)
			}
			return write(ctx, rdb, key, token, ttl)
		}
		f.release = func(ctx context.Context, rdb *redis.Client, key, token string) (any, error) {
			if rwReader(token) {
				return readUnlock(ctx, rdb, key, token)
			}
			return writeUnlock(ctx, rdb, key, token)
		}
		f.holds = func(ctx context.Context, m *redis.Client, key, token string) (bool, error) {
			if rwReader(token) {
				return holdsField(ctx, m, key, token)
			}
			return holdsField(ctx, m, key, token+":write")
		}
		// The watchdogs, as Redisson's renewal tasks call them for one
		// lock: renewal/ReadLockTask.java's for a reader (the lock and
		// its key prefix; the lease, one name), LockTask.java's for a
		// writer (the lock; the lease, its write name).
		readRenew := run(redissonReadRenew, func(key, _ string) []string { return []string{key, "{" + key + "}"} }, func(token string, ttl time.Duration) []any {
			return []any{ms(ttl), "1", token}
		})
		writeRenew := run(redissonRenewAll, oneKey, func(token string, ttl time.Duration) []any { return []any{ms(ttl), token + ":write"} })
		f.renew = func(ctx context.Context, rdb *redis.Client, key, token string, ttl time.Duration) (bool, error) {
			eval := writeRenew
			if rwReader(token) {
				eval = readRenew
			}
			v, err := eval(ctx, rdb, key, token, ttl)
			if err != nil {
				return false, err
			}
			if got, ok := v.([]any); ok && len(got) == 1 && (got[0] == int64(0) || got[0] == int64(1)) {
				return got[0] == int64(1), nil
			}
			return false, fmt.Errorf("%s renewal replied %#v", name, v)
		}
		f.shared = rwReader
		f.fenceArg = func(token string) string {
			if rwReader(token) {
				return ""
			}
			return token + ":write"
		}
	case famFenced:
		return redissonFencedFamily(name, latchMs, redissonKeys)
	default:
		t.Fatalf("no lock family %q", name)
	}
	return f
}

func isInt(v any) bool { _, ok := v.(int64); return ok }

// rwReader says whether token locks a read-write lock as a reader (about
// half do, by a hash of the token) or as a writer.
func rwReader(token string) bool {
	h := fnv.New32a()
	h.Write([]byte(token))
	return h.Sum32()%2 == 0
}

// rwExtras says what a read-write lock's holder does beside its take and
// its release, by a hash of its token: a quarter of the holds take the
// key again (a re-entry, then released twice); another quarter renew
// their hold once, at once; and one writer's hold in sixteen is renewed
// three times a third of the TTL apart (Redisson's watchdog period) and
// works past the validity of its take (at most maxLongHolds of them per
// workload: more keep the others out of the key most of the time).
func rwExtras(token string, ttl time.Duration) (reenter bool, renewals int, every time.Duration) {
	h := fnv.New32a()
	h.Write([]byte(token))
	x := h.Sum32() >> 1 // the low bit is rwReader's
	switch {
	case x%4 == 1:
		reenter = true
	case x%4 == 2:
		renewals = 1
	case x%16 == 15 && !rwReader(token):
		renewals, every = 3, ttl/3
	}
	return reenter, renewals, every
}

// maxLongHolds is how many holds of a workload are renewed past the
// validity of their take.
const maxLongHolds = 4

// renewWith renews a hold by f's watchdog and records it: "1" renewed,
// "0" not, an error reply, or unknown.
func renewWith(h *history, f *lockFamily, rdb *redis.Client, c int, key, token string, ttl, drift time.Duration) (renewed bool, start time.Duration) {
	start = h.now()
	ok, err := f.renew(context.Background(), rdb, key, token, ttl)
	res := result(err, "0")
	if err == nil && ok {
		res = "1"
	}
	h.add(op{Client: c, Op: opRenew, Key: key, Token: token, TTL: ttl, Drift: drift, Start: start, End: h.now(), Result: res})
	return res == "1", start
}

// reenterAndRenew is what a holder of f (a family that renews) does after
// its take: take the key again with its token, and renew it, as rwExtras
// says. It returns when the hold's validity ends now (end, or later if a
// renewal or the re-entry was granted), how many holds the token has
// (each released once), and whether that count is known (a re-entry
// without a reply may have landed, or not).
func (w *workload) reenterAndRenew(c int, rdb *redis.Client, f *lockFamily, key, token string, end time.Duration) (time.Duration, int, bool) {
	h := w.fc.h
	holds, known := 1, true
	reenter, renewals, every := rwExtras(token, w.ttl)
	if every > 0 && w.longHolds.Add(1) > maxLongHolds {
		renewals, every = 1, 0
	}
	if reenter {
		switch res, start, _ := acquireWith(h, f, rdb, c, key, token, w.ttl, w.drift); res {
		case resOK:
			holds++
			end = max(end, start+w.ttl-w.drift)
		case resNil:
		default:
			holds, known = 2, false
		}
	}
	for range renewals {
		time.Sleep(every)
		ok, start := renewWith(h, f, rdb, c, key, token, w.ttl, w.drift)
		if !ok {
			break // the hold ends at end: Redisson stops renewing it
		}
		end = max(end, start+w.ttl-w.drift)
	}
	return end, holds, known
}

// holdsString: the key's string value is the token.
func holdsString(ctx context.Context, m *redis.Client, key, token string) (bool, error) {
	v, err := m.Get(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return v == token, err
}

// holdsField: the token is a field of the key's hash (Redisson).
func holdsField(ctx context.Context, m *redis.Client, key, token string) (bool, error) {
	return m.HExists(ctx, key, token).Result()
}

// holdsMember: the token is a member of the key's sorted set (Symfony).
func holdsMember(ctx context.Context, m *redis.Client, key, token string) (bool, error) {
	err := m.ZScore(ctx, key, token).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	return err == nil, err
}

// acquireWith locks with f and records it as an acquire: OK granted,
// nil taken, an error reply, or unknown.
func acquireWith(h *history, f *lockFamily, rdb *redis.Client, c int, key, token string, ttl, drift time.Duration) (res string, start, end time.Duration) {
	start = h.now()
	var granted bool
	var t string
	var err error
	if f.fencedAcquire != nil {
		granted, t, err = f.fencedAcquire(context.Background(), rdb, key, token, ttl)
	} else {
		granted, err = f.acquire(context.Background(), rdb, key, token, ttl)
	}
	end = h.now()
	res = result(err, resOK)
	if err == nil && !granted {
		res = resNil
	}
	h.add(op{Client: c, Op: opAcquire, Key: key, Token: token, TTL: ttl, Drift: drift, Start: start, End: end, Result: res, Shared: f.sharedHold(token)})
	if res == resOK && t != "" {
		// The grant's own token, judged as a FENCE's sent with it.
		h.add(op{Client: c, Op: opFence, Key: key, Token: token, Start: start, End: end, Result: t})
	}
	return res, start, end
}

// releaseWith unlocks with f and records it with its reply.
func releaseWith(h *history, f *lockFamily, rdb *redis.Client, c int, key, token string) string {
	start := h.now()
	v, err := f.release(context.Background(), rdb, key, token)
	res := result(err, fmt.Sprint(v))
	h.add(op{Client: c, Op: opRelease, Key: key, Token: token, Start: start, End: h.now(), Result: res})
	return res
}

// familyOf is the family key is locked by: a workload key's, the one a
// scenario locks its own key by (w.extra), or SET NX.
func (w *workload) familyOf(key string) *lockFamily {
	if f, ok := w.families[key]; ok {
		return f
	}
	if f, ok := w.extra[key]; ok {
		return f
	}
	return w.families[""]
}

// allFamilies is every served lock family the scenarios run, one key
// each. The scenarios share them out (docs/tests.md's fault table says which
// meets which fault) rather than running each scenario once per family.
var allFamilies = []string{famSetNX, famGoZero, famRedisson, famNodeRedisson, famSesame, famSymfony, famSpring, famShedLock, famMutex, famRW}

// checkFamiliesUsed reports a workload key whose family was never granted
// and released (a release replying 1) by the workload's clients: the
// checkers would have had nothing of it to judge.
func (w *workload) checkFamiliesUsed(t *testing.T, ops []op) []string {
	t.Helper()
	oks, shared, released, failed, fenced := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	reentered, renewed, pastTake := map[string]int{}, map[string]int{}, map[string]int{}
	taken := map[string]op{} // each token's first OK
	firstErr := map[string]string{}
	for _, o := range ops {
		switch {
		case o.Client == probeClient:
		case o.Op == opAcquire && o.Result == resOK:
			oks[o.Key]++
			if o.Shared {
				shared[o.Key]++
			}
			if _, again := taken[o.Token]; again {
				reentered[o.Key]++
			} else {
				taken[o.Token] = o
			}
		case o.Op == opRenew && o.Result == "1":
			renewed[o.Key]++
			if a, ok := taken[o.Token]; ok && o.validUntil() > a.validUntil()+o.TTL/2 {
				pastTake[o.Key]++ // a renewal that carries the hold well past its take's validity
			}
		case o.Op == opAcquire && o.Result != resNil:
			failed[o.Key]++
			if firstErr[o.Key] == "" {
				firstErr[o.Key] = o.Result
			}
		case o.Op == opRelease && o.Result == "1":
			released[o.Key]++
		case o.Op == opFence && o.Result != resUnknown && !strings.HasPrefix(o.Result, "error: "):
			fenced[o.Key]++
		}
	}
	var bad, seen []string
	for _, key := range w.keys {
		f := w.families[key]
		name := f.name
		if f.shared != nil {
			name += fmt.Sprintf(" (%d OK shared, %d pairs of shared holds overlapped, %d fencing tokens)", shared[key], sharedOverlaps(windows(ops, key)), fenced[key])
		}
		if f.renew != nil {
			name += fmt.Sprintf(" (%d re-entries granted, %d renewals granted, %d of them past the take's validity)", reentered[key], renewed[key], pastTake[key])
			if reentered[key] == 0 || renewed[key] == 0 {
				bad = append(bad, fmt.Sprintf("key %s (%s): %d re-entries and %d renewals granted; want both", key, f.name, reentered[key], renewed[key]))
			}
		}
		seen = append(seen, fmt.Sprintf("%s %d OK, %d released, %d failed %q", name, oks[key], released[key], failed[key], firstErr[key]))
		if oks[key] == 0 || released[key] == 0 {
			bad = append(bad, fmt.Sprintf("key %s (%s): %d OK and %d releases replying 1; the family went untested", key, f.name, oks[key], released[key]))
		}
		if f.shared != nil && (shared[key] == 0 || shared[key] == oks[key]) {
			bad = append(bad, fmt.Sprintf("key %s (%s): %d of %d OKs shared; want both shared and exclusive holds", key, f.name, shared[key], oks[key]))
		}
		if f.shared != nil && oks[key] > shared[key] && fenced[key] == 0 {
			bad = append(bad, fmt.Sprintf("key %s (%s): no exclusive hold got a fencing token", key, f.name))
		}
	}
	t.Logf("per family: %s", strings.Join(seen, "; "))
	return bad
}
