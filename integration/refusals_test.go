package integration

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// refusal is one documented way in which the proxy answers differently
// from one Redis on purpose. row is the first cell of its row in the
// docs/compatibility.md's "Differences from one Redis" table; match reports whether a
// pair of replies to c is this difference. reference answers questions
// about the reference server's state, for the rows that depend on it.
type refusal struct {
	row   string
	match func(c diffCmd, redis, proxy respValue, ref referenceState) bool
}

// referenceState is what a refusal may ask about the reference server.
type referenceState interface {
	// nearExpiry reports whether key was within the drift allowance of
	// its expiry on the reference server when the command ran.
	nearExpiry(key string) bool
	// proxyNearExpiry reports whether the proxy's copy of key is gone or
	// within the drift allowance of its expiry.
	proxyNearExpiry(key string) bool
}

// refusals is the one list of the proxy's documented differences from one
// Redis. The differential test fails on any difference not matched here,
// and TestRefusalsMatchREADME keeps it and the docs' table the same.
var refusals = []refusal{
	{"`SET` that is not a lock: without `NX`, or with `XX`, `GET`, `KEEPTTL`", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return c.name() == "set" && p.isError() &&
			(strings.HasPrefix(p.text, "ERR redlock-proxy only takes locks") || strings.HasPrefix(p.text, "ERR redlock-proxy does not support XX, GET or KEEPTTL"))
	}},
	{"`SET key token NX` (or `IFEQ token`) without an expiry", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return c.name() == "set" && strings.HasPrefix(p.text, "ERR a lock needs a TTL")
	}},
	{"A TTL outside `[min_ttl, max_ttl]`, an `EXAT`/`PXAT` in the past", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return p.isError() && strings.HasPrefix(p.text, "ERR invalid expire time in '") && r.String() != p.String()
	}},
	{"`DEL`, `DELEX key` without a condition", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return (c.name() == "del" || c.name() == "delex") && strings.HasPrefix(p.text, "ERR DEL is refused")
	}},
	{"`DELEX … IFNE`/`IFDNE`, `SET … IFNE`/`IFDNE`, and `SET … IFEQ`/`IFDEQ` that give the key another token (Redis 8.4, Valkey)", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return (c.name() == "delex" || c.name() == "set") && p.isError() && strings.Contains(p.text, " is refused by redlock-proxy: ")
	}},
	{"`SET key token IFEQ token … GET` that is not granted", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return c.name() == "set" && (p.kind == 'N' || p.kind == '_') && r.kind == '$' &&
			slices.ContainsFunc(c.args[3:], func(a []byte) bool { return strings.EqualFold(string(a), "get") })
	}},
	{"Other Redis commands (`INCR`, `EXPIRE`, `KEYS`, `CONFIG SET`, …)", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return p.isError() && !strings.HasPrefix(r.text, "ERR unknown command") &&
			(strings.HasPrefix(p.text, "ERR '"+c.name()+"' is not supported: redlock-proxy serves lock commands only") ||
				strings.HasPrefix(p.text, "ERR unknown command '") ||
				c.name() == "config" && len(c.args) > 1 && strings.HasPrefix(p.text, "ERR CONFIG "+strings.ToUpper(string(c.args[1]))+" is not supported") ||
				c.name() == "function" && len(c.args) > 1 && strings.HasPrefix(p.text, "ERR FUNCTION "+strings.ToUpper(string(c.args[1]))+" is not supported"))
	}},
	{"Inline lines with a quote inside an unquoted word or a tab right after a closing quote, and inline lines over 4 KiB", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return c.inline != "" && strings.HasPrefix(p.text, "ERR Protocol error")
	}},
	{"`SELECT` of a database other than 0", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return c.name() == "select" && p.text == "ERR DB index is out of range: redlock-proxy serves database 0 only"
	}},
	{"`CLIENT` and `SCRIPT` subcommands other than those above (`TRACKING`, `PAUSE`, `HELP`, …)", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return (c.name() == "client" || c.name() == "script") && len(c.args) > 1 &&
			p.text == "ERR unknown subcommand '"+string(c.args[1])+"'. Try "+strings.ToUpper(c.name())+" HELP."
	}},
	{"`CLIENT SETINFO` (Redis 7.2's; the reference, Redis 7.0, has none)", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return c.name() == "client" && len(c.args) > 1 && strings.EqualFold(string(c.args[1]), "setinfo") &&
			r.text == "ERR unknown subcommand '"+string(c.args[1])+"'. Try CLIENT HELP."
	}},
	{"`EVAL` of a script that is not a recognised lock script", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return (c.name() == "eval" || c.name() == "evalsha" || c.name() == "script") &&
			(strings.HasPrefix(p.text, "ERR unsupported script") || strings.HasPrefix(p.text, "ERR script refused"))
	}},
	{"A PTTL read inside a script outside the catalogue", func(c diffCmd, r, p respValue, _ referenceState) bool {
		rn, rok := r.integer()
		pn, pok := p.integer()
		return c.name() == "eval" && !catalogueBody(string(c.args[1])) && isPTTLScript(c) &&
			rok && pok && rn >= 0 && pn > rn && pn-rn < 1000
	}},
	{"A script whose key argument is not one of `KEYS` when it runs (a lock script called with no key reads `KEYS[1]` as nil)", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return (c.name() == "eval" || c.name() == "evalsha") && r.isError() &&
			strings.HasPrefix(p.text, "ERR script refused: a key argument of ")
	}},
	{"bsm/redislock's obtain with a token length of 0 where the key holds another, empty token, or a negative one where it holds another whose value less its last characters is the token (`-1` over `tokX` for `tok`)", func(c diffCmd, r, p respValue, _ referenceState) bool {
		obtain := scriptByName("redislock obtain")
		isObtain := (c.name() == "eval" || c.name() == "evalsha") && len(c.args) > 5 &&
			(string(c.args[1]) == obtain.body || strings.EqualFold(string(c.args[1]), obtain.sha))
		if !isObtain {
			return false
		}
		n, err := strconv.Atoi(string(c.args[5]))
		return err == nil && n <= 0 && strings.HasPrefix(p.text, "ERR script refused: it removes or overwrites another token's hold")
	}},
	{keptRow, func(diffCmd, respValue, respValue, referenceState) bool {
		return false // handled where the test runs the obtain (differ.alignKept)
	}},
	{"An error raised inside a script served by its effect", func(c diffCmd, r, p respValue, _ referenceState) bool {
		return (c.name() == "eval" || c.name() == "evalsha") && r.isError() && p.isError() && p.text != "" &&
			strings.HasPrefix(r.text, p.text+" script: ")
	}},
	{catalogueRow, func(c diffCmd, r, p respValue, _ referenceState) bool {
		// EVALSHA is handled where the test runs it: the script is loaded
		// on the reference, and the two replies compared.
		switch {
		case c.name() == "script" && len(c.args) > 2 && strings.EqualFold(string(c.args[1]), "exists"):
			if len(r.items) != len(p.items) || len(r.items) != len(c.args)-2 {
				return false
			}
			for i, sha := range c.args[2:] {
				if r.items[i].String() != p.items[i].String() && !(catalogueSHA(string(sha)) && r.items[i].text == "0") {
					return false
				}
			}
			return true
		}
		return false
	}},
	{"A key within its drift allowance of expiry", func(c diffCmd, r, p respValue, ref referenceState) bool {
		// The proxy answers "free" (or, for SET, "taken" by the expiring
		// holder) where the reference still had the key for a moment; or
		// the other way (later): the proxy's copy, set after the
		// reference's, is there a moment after the reference's is gone.
		rn, _ := r.integer()
		pn, _ := p.integer()
		rNil, pNil := r.kind == 'N' || r.kind == '_', p.kind == 'N' || p.kind == '_'
		later := false
		switch c.name() {
		case "get":
			switch {
			case r.kind == '$' && pNil:
			case rNil && p.kind == '$':
				later = true
			default:
				return false
			}
		case "exists":
			switch {
			case r.kind != ':' || p.kind != ':':
				return false
			case pn < rn:
			case pn > rn:
				later = true
			default:
				return false
			}
		case "pttl", "ttl":
			switch {
			case rn >= 0 && pn == -2:
			case rn == -2 && pn >= 0:
				later = true
			default:
				return false
			}
		case "set":
			if !(r.String() == "+OK" && pNil) {
				return false
			}
		case "delex", "delifeq":
			if !(rn == 1 && p.kind == ':' && pn == 0) {
				return false
			}
		case "digest":
			if !(r.kind == '$' && pNil) {
				return false
			}
		default:
			return false
		}
		keys := c.keys()
		for _, k := range keys {
			if !ref.nearExpiry(k) || later && !ref.proxyNearExpiry(k) {
				return false
			}
		}
		return len(keys) > 0
	}},
}

// catalogueRow is the row on catalogue digests, which the test also
// counts where it runs EVALSHA.
const catalogueRow = "`EVALSHA` and `SCRIPT EXISTS` of a catalogue script's digest"

// keptRow is the row on a re-entrant obtain with a shorter TTL, which
// the test counts where it sets the masters' expiry to the reference's.
const keptRow = "bsm/redislock's obtain of a key its token holds, with a shorter TTL than the key has left"

// catalogueBody reports whether body is a catalogue script.
func catalogueBody(body string) bool {
	for _, s := range lockScripts {
		if s.body == body {
			return true
		}
	}
	return false
}

// catalogueSHA reports whether sha is the digest of a catalogue script.
func catalogueSHA(sha string) bool {
	for _, s := range lockScripts {
		if strings.EqualFold(s.sha, sha) {
			return true
		}
	}
	return false
}

// matchRefusal returns the documented refusal that explains a difference,
// or nil.
func matchRefusal(c diffCmd, r, p respValue, ref referenceState) *refusal {
	for i := range refusals {
		if refusals[i].match(c, r, p, ref) {
			return &refusals[i]
		}
	}
	return nil
}

// The table of differences (docs/compatibility.md, linked from the README)
// and the refusals list name the same rows, in the same order.
func TestRefusalsMatchREADME(t *testing.T) {
	b, err := os.ReadFile("../docs/compatibility.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n### Differences from one Redis\n")
	if !ok {
		t.Fatal("docs/compatibility.md has no \"### Differences from one Redis\" section")
	}
	var rows []string
	for _, line := range strings.Split(section, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| difference |") {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		rows = append(rows, cell)
	}
	var want []string
	for _, r := range refusals {
		want = append(want, r.row)
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/compatibility.md rows:\n%s\n\nrefusals:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}
