package script

import (
	"slices"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"
)

// allowedGlobals are the only globals a recognised script may read. A
// script may not declare a local of the same name.
var allowedGlobals = []string{"redis", "KEYS", "ARGV", "tonumber", "string", "ipairs"}

// canonicalize rewrites a parsed chunk into the form templates are written
// in, so that one template covers many spellings of the same logic. It
// reports false when the chunk uses names in a way that could make a
// template mean something else: shadowing a visible local, assigning an
// undeclared name, or reading a global outside allowedGlobals.
//
// The rewrites keep the script's meaning:
//   - redis.pcall becomes redis.call, and a literal command name passed
//     to it is lower-cased;
//   - "local k = KEYS[i]" or "= ARGV[i]" at the top level, never assigned
//     again, is replaced by KEYS[i] or ARGV[i] wherever k is read;
//   - "a > b" becomes "b < a", and "a >= b" becomes "b <= a";
//   - "==" and "~=" put the more constant operand on the right;
//   - "not (a == b)" becomes "a ~= b", and "not (a ~= b)" becomes "a == b";
//   - the options of redis.call("set", ...) are lower-cased and ordered
//     as NX|XX, GET, KEEPTTL, then EX|PX|EXAT|PXAT and its value;
//   - "if c then A else B end", where A ends in return, becomes
//     "if c then A end B" (elseif chains included);
//   - a chunk that can fall off its end gets a final bare return.
func canonicalize(chunk *luaNode) bool {
	if !checkScope(chunk, nil) {
		return false
	}
	inlineAliases(chunk)
	canonBlock(chunk)
	if !terminates(chunk) {
		chunk.kids = append(chunk.kids, &luaNode{kind: nReturn})
	}
	return true
}

func checkScope(b *luaNode, vars []string) bool {
	vars = vars[:len(vars):len(vars)] // appends here must not reach the caller's
	for _, s := range b.kids {
		ok := true
		switch s.kind {
		case nLocal:
			ok = (len(s.kids) == 1 || checkExpr(s.kids[1], vars)) && declarable(s.kids[0], vars)
			vars = append(vars, s.kids[0].text)
		case nAssign:
			ok = slices.Contains(vars, s.kids[0].text) && checkExpr(s.kids[1], vars)
		case nIf:
			ok = checkExpr(s.kids[0], vars)
			for _, blk := range s.kids[1:] {
				ok = ok && checkScope(blk, vars)
			}
		case nForIn:
			a, b := s.kids[0], s.kids[1]
			ok = checkExpr(s.kids[2], vars) && declarable(a, vars) && declarable(b, vars) &&
				a.text != b.text && checkScope(s.kids[3], append(vars, a.text, b.text))
		default: // a call or a return
			ok = checkExpr(s, vars)
		}
		if !ok {
			return false
		}
	}
	return true
}

func declarable(name *luaNode, vars []string) bool {
	return !slices.Contains(vars, name.text) && !slices.Contains(allowedGlobals, name.text)
}

func checkExpr(e *luaNode, vars []string) bool {
	switch {
	case e.kind == nName:
		return slices.Contains(vars, e.text) || slices.Contains(allowedGlobals, e.text)
	case e.kind == nHole && isNameHole(e.text):
		return slices.Contains(vars, e.text)
	case e.kind == nField:
		return checkExpr(e.kids[0], vars)
	}
	for _, k := range e.kids {
		if !checkExpr(k, vars) {
			return false
		}
	}
	return true
}

// inlineAliases replaces top-level locals that only rename KEYS[i] or
// ARGV[i]. checkScope has made sure no later local shadows them.
func inlineAliases(chunk *luaNode) {
	for i := 0; i < len(chunk.kids); {
		s := chunk.kids[i]
		if s.kind != nLocal || len(s.kids) != 2 || !isArgRef(s.kids[1]) || assigns(chunk, s.kids[0].text) {
			i++
			continue
		}
		for _, later := range chunk.kids[i+1:] {
			replaceName(later, s.kids[0].text, s.kids[1])
		}
		chunk.kids = slices.Delete(chunk.kids, i, i+1)
	}
}

// isArgRef reports whether e is KEYS[n] or ARGV[n] for a literal n.
func isArgRef(e *luaNode) bool {
	return e.kind == nIndex && e.kids[0].kind == nName &&
		(e.kids[0].text == "KEYS" || e.kids[0].text == "ARGV") &&
		(e.kids[1].kind == nNum || e.kids[1].kind == nHole)
}

func assigns(n *luaNode, name string) bool {
	if n.kind == nAssign && n.kids[0].text == name {
		return true
	}
	return slices.ContainsFunc(n.kids, func(k *luaNode) bool { return assigns(k, name) })
}

func replaceName(n *luaNode, name string, with *luaNode) {
	for i, k := range n.kids {
		if (k.kind == nName || k.kind == nHole) && k.text == name {
			n.kids[i] = cloneNode(with)
			continue
		}
		replaceName(k, name, with)
	}
}

func cloneNode(n *luaNode) *luaNode {
	c := &luaNode{kind: n.kind, text: n.text, kids: make([]*luaNode, len(n.kids))}
	for i, k := range n.kids {
		c.kids[i] = cloneNode(k)
	}
	return c
}

// canonBlock canonicalizes every statement of b, then lifts the else part
// of an if whose then part always returns. The else part's locals may
// only move out when nothing follows the if.
func canonBlock(b *luaNode) {
	out := make([]*luaNode, 0, len(b.kids))
	for i, s := range b.kids {
		canonStmt(s)
		if s.kind == nIf && len(s.kids) == 3 && terminates(s.kids[1]) &&
			(i == len(b.kids)-1 || !slices.ContainsFunc(s.kids[2].kids, isLocal)) {
			out = append(out, &luaNode{kind: nIf, kids: s.kids[:2]})
			out = append(out, s.kids[2].kids...)
			continue
		}
		out = append(out, s)
	}
	b.kids = out
}

// canonStmt canonicalizes the expressions and blocks inside s.
func canonStmt(s *luaNode) {
	if s.kind == nCall {
		canonExpr(s) // a call stays the same node
		return
	}
	for i, k := range s.kids {
		if k.kind == nBlock {
			canonBlock(k)
		} else {
			s.kids[i] = canonExpr(k)
		}
	}
}

func terminates(b *luaNode) bool { return len(b.kids) > 0 && b.kids[len(b.kids)-1].kind == nReturn }

func isLocal(s *luaNode) bool { return s.kind == nLocal }

func canonExpr(e *luaNode) *luaNode {
	if e.kind == nCall && e.kids[0].kind == nField && e.kids[0].text == "pcall" && dotted(e.kids[0]) == "redis.pcall" {
		e.kids[0].text = "call"
	}
	if e.kind == nCall && dotted(e.kids[0]) == "redis.call" && len(e.kids) > 1 && e.kids[1].kind == nStr {
		e.kids[1].text = ascii.Lower(e.kids[1].text)
	}
	for i, k := range e.kids {
		e.kids[i] = canonExpr(k)
	}
	switch {
	case e.kind == nBinary && (e.text == ">" || e.text == ">="):
		e.text = "<" + e.text[1:]
		e.kids[0], e.kids[1] = e.kids[1], e.kids[0]
	case e.kind == nBinary && (e.text == "==" || e.text == "~=") && sortsAfter(e.kids[0], e.kids[1]):
		e.kids[0], e.kids[1] = e.kids[1], e.kids[0]
	case e.kind == nUnary && e.text == "not" && e.kids[0].kind == nBinary &&
		(e.kids[0].text == "==" || e.kids[0].text == "~="):
		cmp := e.kids[0]
		cmp.text = map[string]string{"==": "~=", "~=": "=="}[cmp.text]
		return cmp
	case isRedisCall(e, "set"):
		canonSetOptions(e)
	}
	return e
}

// sortsAfter reports whether a sorts after b as an operand of == or ~=:
// literals last, then KEYS[i] and ARGV[i], then lengths, then names, and
// calls ordered by what they call.
func sortsAfter(a, b *luaNode) bool {
	ra, rb := operandRank(a), operandRank(b)
	if ra != rb {
		return ra > rb
	}
	return a.kind == nCall && b.kind == nCall && callKey(a) > callKey(b)
}

func operandRank(e *luaNode) int {
	switch {
	case e.kind == nNil, e.kind == nTrue, e.kind == nFalse, e.kind == nNum, e.kind == nStr:
		return 4
	case isArgRef(e):
		return 3
	case e.kind == nUnary && e.text == "#":
		return 2
	case e.kind == nName, e.kind == nHole:
		return 1
	}
	return 0
}

// callKey names what a call calls: "redis.call get", "string.sub".
func callKey(c *luaNode) string {
	key := dotted(c.kids[0])
	if len(c.kids) > 1 && c.kids[1].kind == nStr {
		key += " " + c.kids[1].text
	}
	return key
}

func dotted(e *luaNode) string {
	switch e.kind {
	case nName:
		return e.text
	case nField:
		return dotted(e.kids[0]) + "." + e.text
	}
	return "?"
}

// isRedisCall reports whether e is redis.call(cmd, ...).
func isRedisCall(e *luaNode, cmd string) bool {
	return e.kind == nCall && len(e.kids) >= 2 && dotted(e.kids[0]) == "redis.call" &&
		e.kids[1].kind == nStr && e.kids[1].text == cmd
}

// luaSetFlags are SET's flag options, in canonical order.
var luaSetFlags = []string{"nx", "xx", "get", "keepttl"}

// canonSetOptions orders the options of redis.call("set", key, value,
// ...). It leaves a call with an unknown or repeated option as it is.
func canonSetOptions(c *luaNode) {
	if len(c.kids) < 4 {
		return
	}
	flags := make([]*luaNode, len(luaSetFlags))
	var expiry []*luaNode
	opts := c.kids[4:]
	for i := 0; i < len(opts); i++ {
		if opts[i].kind != nStr {
			return
		}
		w := ascii.Lower(opts[i].text)
		switch j := slices.Index(luaSetFlags, w); {
		case j >= 0 && flags[j] == nil:
			flags[j] = &luaNode{kind: nStr, text: w}
		case (w == "ex" || w == "px" || w == "exat" || w == "pxat") && expiry == nil && i+1 < len(opts):
			expiry = []*luaNode{{kind: nStr, text: w}, opts[i+1]}
			i++
		default:
			return
		}
	}
	kids := slices.Clip(c.kids[:4])
	for _, f := range flags {
		if f != nil {
			kids = append(kids, f)
		}
	}
	c.kids = append(kids, expiry...)
}
