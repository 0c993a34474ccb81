package script

import (
	"slices"
	"strconv"
)

// parseScript parses body with the Lua front end (parseBody), and
// converts and canonicalizes it. With holes, body is a template.
func parseScript(body []byte, holes bool) (*luaNode, bool) {
	chunk, _, refusal := parseBody(body)
	if refusal != nil {
		return nil, false
	}
	tree, ok := subset(chunk, holes)
	if !ok || !canonicalize(tree) {
		return nil, false
	}
	return tree, true
}

// maxStructural bounds the bodies classifyStructure looks at; real lock
// scripts are a few hundred bytes.
const maxStructural = 16 << 10

// classifyStructure matches body against every template. Two templates
// that match with different meanings make body unknown.
func classifyStructure(body []byte) (Script, bool) {
	if len(body) > maxStructural {
		return Script{}, false
	}
	tree, ok := parseScript(body, false)
	if !ok {
		return Script{}, false
	}
	var found Script
	for _, t := range luaTemplates {
		var b holeBinding
		if !b.match(t.tree, tree) {
			continue
		}
		s, ok := t.apply(b)
		if !ok || found.Op != OpUnknown && s != found {
			return Script{}, false
		}
		found = s
	}
	return found, found.Op != OpUnknown
}

// apply fills the template's Script from what its holes matched.
func (t *luaTemplate) apply(b holeBinding) (Script, bool) {
	s := t.script
	s.Name = s.Op.String() + " (structural)"
	s.TokenArg = int(b.get("$tok").n)
	s.TTLArg = int(b.get("$ttl").n)
	s.PrefixArg = int(b.get("$pfx").n)
	s.ModeArg = int(b.get("$mode").n)
	if f := b.get("$fail"); f.hole != "" {
		s.Fail, s.FailNil = f.n, f.isNil
	}
	if m := b.get("$missing"); m.hole != "" {
		if m.isNil {
			return Script{}, false
		}
		s.Missing, s.HasMissing = m.n, true
	}
	return s, distinguishable(s)
}

// distinguishable reports whether s names each ARGV once and whether its
// client can tell success from failure: a failure reply that could be a
// success (a positive integer, except beside +OK) is refused.
func distinguishable(s Script) bool {
	var seen []int
	for _, a := range []int{s.TokenArg, s.TTLArg, s.PrefixArg, s.ModeArg} {
		if a != 0 && slices.Contains(seen, a) {
			return false
		}
		seen = append(seen, a)
	}
	switch {
	case s.TokenArg < 1:
		return false
	case !s.FailNil && s.Fail > 0 && s.Success != SuccessOK:
		return false
	case s.HasMissing && (s.Missing > 0 || !s.FailNil && s.Missing == s.Fail):
		return false
	}
	return true
}

// holeValue is what one hole matched: an integer, nil, or a name.
type holeValue struct {
	hole  string
	n     int64
	isNil bool
	name  string
}

type holeBinding []holeValue

func (b holeBinding) get(hole string) holeValue {
	for _, v := range b {
		if v.hole == hole {
			return v
		}
	}
	return holeValue{}
}

// bind records v, or reports whether it agrees with what its hole
// matched before.
func (b *holeBinding) bind(v holeValue) bool {
	if old := b.get(v.hole); old.hole != "" {
		return old == v
	}
	*b = append(*b, v)
	return true
}

// maxArg is the largest ARGV index a template hole matches.
const maxArg = 64

func isArgHole(h string) bool    { return h == "$tok" || h == "$ttl" || h == "$pfx" || h == "$mode" }
func isReturnHole(h string) bool { return h == "$fail" || h == "$missing" }
func isNameHole(h string) bool   { return !isArgHole(h) && !isReturnHole(h) }

// match reports whether script tree s has the shape of template tree t,
// binding t's holes.
func (b *holeBinding) match(t, s *luaNode) bool {
	switch {
	case t.kind == nHole && isArgHole(t.text):
		n, ok := smallInt(s)
		return ok && n >= 1 && n <= maxArg && b.bind(holeValue{hole: t.text, n: n})
	case t.kind == nHole && isNameHole(t.text):
		return s.kind == nName && b.bind(holeValue{hole: t.text, name: s.text})
	case t.kind == nHole:
		return false // a return hole outside "return $hole"
	case t.kind == nReturn && len(t.kids) == 1 && t.kids[0].kind == nHole && isReturnHole(t.kids[0].text):
		v, ok := returned(s)
		v.hole = t.kids[0].text
		return ok && b.bind(v)
	}
	if t.kind != s.kind || t.text != s.text || len(t.kids) != len(s.kids) {
		return false
	}
	for i := range t.kids {
		if !b.match(t.kids[i], s.kids[i]) {
			return false
		}
	}
	return true
}

// returned is the literal a return statement gives back: nothing, nil and
// false all reach the client as nil.
func returned(s *luaNode) (holeValue, bool) {
	if s.kind != nReturn {
		return holeValue{}, false
	}
	if len(s.kids) == 0 || s.kids[0].kind == nNil || s.kids[0].kind == nFalse {
		return holeValue{isNil: true}, true
	}
	e, sign := s.kids[0], int64(1)
	if e.kind == nUnary && e.text == "-" {
		e, sign = e.kids[0], -1
	}
	n, ok := smallInt(e)
	return holeValue{n: sign * n}, ok
}

// smallInt reads a plain decimal numeral of up to 9 digits.
func smallInt(e *luaNode) (int64, bool) {
	if e.kind != nNum || e.text == "" || len(e.text) > 9 || len(e.text) > 1 && e.text[0] == '0' {
		return 0, false
	}
	for i := 0; i < len(e.text); i++ {
		if !isDigitByte(e.text[i]) {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(e.text, 10, 64)
	return n, err == nil
}
