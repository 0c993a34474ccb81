package proxy

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/redlock-proxy/redlock-proxy/internal/script"
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/resp"
)

// maxCachedScripts bounds the scripts learned from EVAL and SCRIPT LOAD.
// Catalogue scripts are known by digest and never need a place.
const maxCachedScripts = 1024

// scriptCache remembers the scripts clients sent by body, so that a later
// EVALSHA of the same digest runs them, as Redis's script cache does. It
// holds no lock state.
type scriptCache struct {
	wrap func(body string, literals []string) *quorum.Effect
	// mu is read-locked by every EVALSHA's lookup: many clients at once
	// share it without waiting on each other.
	mu    sync.RWMutex
	bySHA map[string]served
	// byEffect are the catalogue scripts wrapped for the calls the
	// catalogue cannot take, by digest.
	byEffect map[string]*quorum.Effect
	// admitting holds a place for each admission running: one costs up
	// to a few MiB (script.MaxTokens), so many clients sending new
	// scripts at once wait for a place rather than multiply that.
	admitting chan struct{}
}

// maxAdmitting bounds the admissions that run at once.
const maxAdmitting = 4

// served is how a script is run: a catalogue operation (the fast path),
// or the admitted script, as admission printed it back, in the
// effect-watching wrapper.
type served struct {
	sc  script.Script
	eff *quorum.Effect
	// sha and body are a catalogue script's digest and text (body nil when
	// it is known by digest: script.KnownSource has it), for a call the
	// catalogue cannot take.
	sha  string
	body []byte
	// rw is a Redisson read lock script, served by its own operation.
	rw rwScript
	// fenced is an RFencedLock acquire script (redissonfenced.go).
	fenced fencedScript
	// latch is an RCountDownLatch script (redissonlatch.go).
	latch latchScript
}

func newScriptCache(wrap func(body string, literals []string) *quorum.Effect) *scriptCache {
	return &scriptCache{wrap: wrap, bySHA: make(map[string]served), byEffect: make(map[string]*quorum.Effect),
		admitting: make(chan struct{}, maxAdmitting)}
}

// byItsEffect returns the catalogue script sv wrapped to run by its
// effect, admitting it on first use.
func (c *scriptCache) byItsEffect(sv served) (*quorum.Effect, error) {
	c.mu.RLock()
	eff, ok := c.byEffect[sv.sha]
	c.mu.RUnlock()
	if ok {
		return eff, nil
	}
	body := sv.body
	if body == nil {
		src, known := script.KnownSource(sv.sha)
		if !known {
			return nil, unsupportedScript(sv.sc.Name)
		}
		body = []byte(src)
	}
	adm, err := script.Admit(body)
	if err != nil {
		return nil, &admitError{err}
	}
	eff = c.wrap(adm.Source, adm.Literals)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byEffect) >= maxCachedScripts {
		clear(c.byEffect)
	}
	c.byEffect[sv.sha] = eff
	return eff, nil
}

// lookup finds the script with digest sha: a catalogue script, or one a
// client sent before.
func (c *scriptCache) lookup(sha string) (served, bool) {
	sha = ascii.Lower(sha)
	if rw, ok := redissonServed[sha]; ok {
		return served{rw: rw}, true
	}
	if f, ok := redissonFenced[sha]; ok {
		return served{fenced: f}, true
	}
	if l, ok := redissonLatch[sha]; ok {
		return served{latch: l}, true
	}
	if sc, ok := script.ClassifySHA(sha); ok {
		return served{sc: sc, sha: sha}, true
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	sv, ok := c.bySHA[sha]
	return sv, ok
}

// learn decides how body is served and remembers it under its digest:
// the catalogue first, then admission by what the script may do. It
// returns the digest, and the refusal when the body is not served.
func (c *scriptCache) learn(ctx context.Context, body []byte) (served, string, error) {
	sha := script.SHA1Hex(body)
	if rw, ok := redissonServed[sha]; ok {
		return served{rw: rw}, sha, nil
	}
	if f, ok := redissonFenced[sha]; ok {
		return served{fenced: f}, sha, nil
	}
	if l, ok := redissonLatch[sha]; ok {
		return served{latch: l}, sha, nil
	}
	if typ, refused := redissonRefused[sha]; refused {
		return served{}, sha, withArgs(errRedissonType, typ, redissonWhy[typ])
	}
	if sc, known := script.ClassifySHA(sha); known {
		return served{sc: sc, sha: sha}, sha, nil // a catalogue script: no need to remember it
	}
	c.mu.RLock()
	sv, ok := c.bySHA[sha]
	c.mu.RUnlock()
	if ok {
		return sv, sha, nil
	}
	select {
	case c.admitting <- struct{}{}:
		defer func() { <-c.admitting }()
	case <-ctx.Done():
		return served{}, sha, errAdmitBusy
	}
	sc, ok := script.ClassifyScript(body)
	if ok {
		sv = served{sc: sc, sha: sha, body: append([]byte(nil), body...)}
	} else {
		adm, err := script.Admit(body)
		if err != nil {
			return served{}, sha, &admitError{err}
		}
		// The masters run the admitted tree as admission printed it,
		// never the client's bytes: Redis's Lua lexer could read those
		// otherwise than admission did.
		sv = served{eff: c.wrap(adm.Source, adm.Literals)}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.bySHA) >= maxCachedScripts {
		clear(c.bySHA) // like SCRIPT FLUSH: clients recover through NOSCRIPT
	}
	c.bySHA[sha] = sv
	return sv, sha, nil
}

// flush forgets the learned scripts. Catalogue scripts stay known.
func (c *scriptCache) flush() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.bySHA)
	clear(c.byEffect)
}

// EVAL script numkeys [key ...] [arg ...]
func (s *Server) eval(r *request) (resp.Reply, error) {
	// Redis reads numkeys before it looks at the script.
	if _, err := resp.Numkeys(r.args[2], len(r.args)-3); err != nil {
		return resp.Reply{}, err
	}
	sv, _, err := s.scripts.learn(r.ctx, r.args[1])
	if err != nil {
		return resp.Reply{}, err
	}
	return s.run(r, sv)
}

// EVALSHA sha1 numkeys [key ...] [arg ...]
func (s *Server) evalsha(r *request) (resp.Reply, error) {
	// Redis refuses a digest of the wrong length first, then numkeys, then
	// an unknown digest.
	if len(r.args[1]) != 40 {
		return resp.Reply{}, errNoScript
	}
	if _, err := resp.Numkeys(r.args[2], len(r.args)-3); err != nil {
		return resp.Reply{}, err
	}
	sv, ok := s.scripts.lookup(string(r.args[1]))
	if !ok {
		return resp.Reply{}, errNoScript
	}
	return s.run(r, sv)
}

// SCRIPT LOAD script | EXISTS sha1 [sha1 ...] | FLUSH [ASYNC|SYNC]
func (s *Server) script(r *request) (resp.Reply, error) {
	// serveRESP has checked the subcommand and its argument count.
	switch sub := ascii.Lower(r.args[1]); sub {
	case "load":
		_, sha, err := s.scripts.learn(r.ctx, r.args[2])
		if err != nil {
			return resp.Reply{}, err
		}
		return resp.Bulk(sha), nil
	case "exists":
		found := make([]resp.Reply, len(r.args)-2)
		for i, sha := range r.args[2:] {
			_, ok := s.scripts.lookup(string(sha))
			found[i] = resp.Int(btoi(ok))
		}
		return resp.Array(found...), nil
	case "flush":
		if len(r.args) > 3 || len(r.args) == 3 && !ascii.EqualFold(r.args[2], "async") && !ascii.EqualFold(r.args[2], "sync") {
			return resp.Reply{}, errScriptFlushOption
		}
		s.scripts.flush()
		// As one Redis forgets its scripts: the nodes drop the wrapper's
		// libraries and scripts too. A node that does not answer keeps
		// them (they are bounded) until the next flush.
		if n, err := s.e.FlushEffects(r.ctx); err != nil {
			s.conf().Log.Warn("script flush did not reach every node", "flushed", n, "err", err)
		}
		return resp.OK(), nil
	case "kill":
		return s.scriptKill(r)
	}
	return resp.Reply{}, withArgs(errUnknownSubcommand, cString(r.args[1], 128), "SCRIPT")
}

// scriptKill stops the script the masters run, as SCRIPT KILL does on
// one Redis: OK when a node stopped one, Redis's UNKILLABLE when one has
// written and runs on (it wins over OK: the script has not stopped
// everywhere), NOTBUSY when no node that answered ran one.
func (s *Server) scriptKill(r *request) (resp.Reply, error) {
	k, err := s.e.KillScript(r.ctx)
	switch {
	case err != nil:
		return resp.Reply{}, err
	case k.Unkillable > 0:
		return resp.Error(k.UnkillableText), nil // the node's own reply
	case k.Killed > 0:
		return resp.OK(), nil
	}
	return resp.Reply{}, errNotBusy
}

// FUNCTION KILL | HELP
//
// Clients run no functions through the proxy: what a master runs is a
// client's EVAL (the wrapper, which may run as a function). So FUNCTION
// KILL answers as one Redis busy in an EVAL, and stops nothing.
func (s *Server) function(r *request) (resp.Reply, error) {
	switch sub := ascii.Lower(r.args[1]); sub {
	case "kill":
		busy, err := s.e.ScriptBusy(r.ctx)
		switch {
		case err != nil:
			return resp.Reply{}, err
		case busy:
			return resp.Reply{}, errBusy
		}
		return resp.Reply{}, errNotBusy
	case "help":
		return resp.Array(resp.Status("FUNCTION KILL: as one Redis running no function (clients run none through redlock-proxy).")), nil
	}
	return resp.Reply{}, withArgs(errFunctionSubcommand, ascii.Upper(r.args[1]))
}

// run serves a script: a catalogue operation, or by its effect. The
// catalogue is a fast path only: a call it cannot take (no key, more keys
// than the script reads, fewer arguments, a TTL or token length it cannot
// read) runs by its effect, as one Redis would run it.
func (s *Server) run(r *request, sv served) (resp.Reply, error) {
	if sv.fenced != fencedNone {
		return s.runFencedLock(r, sv.fenced) // its KEYS[2] is a token: checked there
	}
	if sv.latch != latchNone {
		return s.runLatch(r, sv.latch) // its KEYS[2] is a channel
	}
	if err := tokenKeys(r); err != nil {
		return resp.Reply{}, err
	}
	if sv.rw != rwNone {
		return s.runReadLock(r, sv.rw)
	}
	if sv.eff != nil {
		return s.runEffect(r, sv.eff)
	}
	if !catalogueTakes(r.args, sv.sc) {
		if err := s.underMinTTL(r.args, sv.sc); err != nil {
			return resp.Reply{}, err
		}
		eff, err := s.scripts.byItsEffect(sv)
		if err != nil {
			return resp.Reply{}, err
		}
		return s.runEffect(r, eff)
	}
	return s.runScript(r, sv.sc)
}

// catalogueTakes reports whether a call of catalogue script sc has the
// shape its quorum operation reads: one key (any number for a multi-key
// script), every argument it reads, and those arguments as it reads them.
// A TTL out of range is not judged here: that refusal is for safety.
func catalogueTakes(args [][]byte, sc script.Script) bool {
	rest := args[3:]
	nk, err := resp.Numkeys(args[2], len(rest))
	if err != nil || nk == 0 || nk > 1 && !sc.MultiKey {
		return false
	}
	argv := rest[nk:]
	if len(argv) < max(sc.TokenArg, sc.TTLArg, sc.PrefixArg, sc.ModeArg) {
		return false
	}
	if sc.TTLArg > 0 {
		if _, ok := resp.ParseInt(argv[sc.TTLArg-1]); !ok {
			return false
		}
	}
	if sc.PrefixArg > 0 {
		n, err := strconv.Atoi(string(argv[sc.PrefixArg-1]))
		// 0 matches any value's empty prefix in the script, none in the
		// catalogue's re-entry.
		if err != nil || n < 1 || n > len(argv[sc.TokenArg-1]) {
			return false
		}
	}
	return true
}

// underMinTTL refuses a call of catalogue script sc that runs by its
// effect with a TTL under min_ttl, as the catalogue's operation does: the
// effect path bounds a TTL by max_ttl alone. A TTL the catalogue cannot
// read, or of 0 or less, is the script's to answer, as on one Redis.
func (s *Server) underMinTTL(args [][]byte, sc script.Script) error {
	rest := args[3:]
	nk, err := resp.Numkeys(args[2], len(rest))
	if err != nil || sc.TTLArg == 0 || len(rest)-nk < sc.TTLArg {
		return nil
	}
	ms, ok := resp.ParseInt(rest[nk+sc.TTLArg-1])
	if !ok || ms <= 0 || ms > s.e.MinTTL().Milliseconds() { // no overflow below
		return nil
	}
	return s.checkTTL(time.Duration(ms) * time.Millisecond)
}

// scriptCall is a script invocation's keys and arguments, split.
type scriptCall struct {
	keys []string
	argv [][]byte
}

// arg returns ARGV[i] (1-based).
func (c scriptCall) arg(i int) []byte { return c.argv[i-1] }

// splitCall checks numkeys and the argument count against what sc uses.
func splitCall(args [][]byte, sc script.Script) (scriptCall, error) {
	rest := args[3:]
	nk, err := resp.Numkeys(args[2], len(rest))
	switch {
	case err != nil:
		return scriptCall{}, err
	case nk == 0:
		return scriptCall{}, errScriptNoKey
	case nk > 1 && !sc.MultiKey:
		return scriptCall{}, errScriptManyKeys
	}
	c := scriptCall{keys: make([]string, nk), argv: rest[nk:]}
	for i, k := range rest[:nk] {
		c.keys[i] = string(k)
	}
	if err := reservedKeys(rest[:nk]); err != nil {
		return scriptCall{}, err
	}
	need := max(sc.TokenArg, sc.TTLArg, sc.PrefixArg, sc.ModeArg)
	if len(c.argv) < need {
		return scriptCall{}, withArgs(errScriptArgs, need)
	}
	return c, nil
}

// runScript runs a recognised lock script as a quorum operation and
// answers with the script's own reply codes.
func (s *Server) runScript(r *request, sc script.Script) (resp.Reply, error) {
	r.op = quorumOp(sc.Op)
	c, err := splitCall(r.args, sc)
	if err != nil {
		return resp.Reply{}, err
	}
	if sc.MultiKey && sc.Success != script.SuccessKeyCount {
		// Its reply counts no keys: a key named twice is one key of the
		// lock (redislock v0.10's release reads every key before it
		// deletes any, where the engine would find the second gone).
		c.keys = distinct(c.keys)
	}
	l := quorum.Lock{Keys: c.keys, Token: string(c.arg(sc.TokenArg))}
	fail := resp.Int(sc.Fail)
	if sc.FailNil {
		fail = resp.Null()
	}
	success := resp.Int(1)
	switch sc.Success {
	case script.SuccessOK:
		success = resp.OK()
	case script.SuccessKeyCount:
		success = resp.Int(int64(len(c.keys)))
	}
	switch sc.Op {
	case script.OpRelease:
		return s.releaseScript(r, sc, l, success, fail)
	case script.OpPTTL:
		return s.pttlScript(r, sc, l, fail)
	}
	if sc.TTLArg == 0 {
		return resp.Reply{}, unsupportedScript(sc.Name) // a lock without a TTL is never taken
	}
	ttl, err := s.parseMillis(c.arg(sc.TTLArg))
	if err != nil {
		return resp.Reply{}, err
	}
	switch sc.Op {
	case script.OpAcquire:
		if s.Draining() {
			return resp.Reply{}, errDraining
		}
		if sc.PrefixArg > 0 {
			n, err := strconv.Atoi(string(c.arg(sc.PrefixArg)))
			if err != nil || n < 0 || n > len(l.Token) {
				return resp.Reply{}, errPrefixLength
			}
			l.PrefixLen = n
		}
		return s.outcome(s.acquire(r, l, ttl), success, fail)
	case script.OpExtend:
		if sc.ModeArg > 0 && string(c.arg(sc.ModeArg)) == "0" {
			return s.outcome(s.extended(s.e.ExtendBy(r.ctx, l, ttl, s.e.MaxTTL())), success, fail)
		}
		return s.outcome(s.extended(s.e.Extend(r.ctx, l, ttl)), success, fail)
	case script.OpExtendOrAcquire:
		if s.Draining() {
			// No new lock while draining: extend only what the token holds.
			lease, err := s.e.Extend(r.ctx, l, ttl)
			var oe *quorum.OutcomeError
			if errors.As(err, &oe) && errors.Is(err, quorum.ErrDenied) && !oe.Expired {
				return resp.Reply{}, errDraining
			}
			return s.outcome(s.extended(lease, err), success, fail)
		}
		return s.outcome(s.extended(s.e.ExtendOrAcquire(r.ctx, l, ttl)), success, fail)
	}
	return resp.Reply{}, unsupportedScript(sc.Name)
}

// quorumOp is the engine operation a script kind runs, for the observer.
func quorumOp(op script.Op) quorum.Op {
	switch op {
	case script.OpAcquire:
		return quorum.OpAcquire
	case script.OpRelease:
		return quorum.OpRelease
	case script.OpPTTL:
		return quorum.OpRead
	}
	return quorum.OpExtend
}

// releaseScript answers a compare-and-delete: success only if a quorum
// held every key, a count of released keys for multi-key scripts.
func (s *Server) releaseScript(r *request, sc script.Script, l quorum.Lock, success, fail resp.Reply) (resp.Reply, error) {
	rel, err := s.e.Release(r.ctx, l)
	switch {
	case err != nil:
		return resp.Reply{}, err
	case sc.Success == script.SuccessKeyCount:
		return resp.Int(int64(rel.Keys)), nil
	case rel.Keys == len(l.Keys):
		return success, nil
	case sc.HasMissing && rel.Missing == len(l.Keys):
		return resp.Int(sc.Missing), nil
	}
	return fail, nil
}

// pttlScript answers an owner-checked PTTL with the quorum's conservative
// validity, or the script's sentinel when the token does not hold the key.
// Over several keys (redislock v0.10) every key must hold the token, and
// the reply is the shortest validity, at least 0.
func (s *Server) pttlScript(r *request, sc script.Script, l quorum.Lock, fail resp.Reply) (resp.Reply, error) {
	var least time.Duration
	for i, key := range l.Keys {
		st, err := s.e.Inspect(r.ctx, key)
		switch {
		case err != nil:
			return resp.Reply{}, err
		case !st.Held || st.Token != l.Token:
			return fail, nil
		case sc.Success != script.SuccessMinPTTL:
			return validityMillis(st), nil
		case i == 0 || st.Validity < least:
			least = st.Validity
		}
	}
	return resp.Int(max(least, 0).Milliseconds()), nil
}

// distinct returns keys without repeats, in the order of their first
// appearance.
func distinct(keys []string) []string {
	if len(keys) < 2 {
		return keys
	}
	seen := make(map[string]bool, len(keys))
	out := keys[:0:0]
	for _, k := range keys {
		if !seen[k] {
			seen[k] = true
			out = append(out, k)
		}
	}
	return out
}

func btoi(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// unsupportedScript refuses a catalogue script, named name ("" if none),
// that is not a lock operation the proxy runs on a quorum.
func unsupportedScript(name string) error {
	if name != "" {
		return withArgs(errUnsupportedNamed, name)
	}
	return errUnsupportedScript
}

// tokenKeys refuses a script naming an RFencedLock's token counter among
// its keys: only RFencedLock's own scripts may (runFencedLock).
func tokenKeys(r *request) error {
	rest, nk, err := scriptArgs(r)
	if err != nil {
		return nil // the script's own path answers it
	}
	for _, k := range rest[:nk] {
		if redissonToken(k) {
			return withArgs(errFencedTokenKey, cString(k, 128))
		}
	}
	return nil
}

// scriptArgs is an EVAL's or EVALSHA's keys and arguments after its
// numkeys, and how many are keys, once its keys were checked against the
// proxy's reserved keys.
func scriptArgs(r *request) (rest [][]byte, nk int, err error) {
	rest = r.args[3:]
	if nk, err = resp.Numkeys(r.args[2], len(rest)); err != nil {
		return nil, 0, err
	}
	if err := reservedKeys(rest[:nk]); err != nil {
		return nil, 0, err
	}
	return rest, nk, nil
}
