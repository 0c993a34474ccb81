package script

import "slices"

// nodeKind is the kind of a node in the small syntax tree the structural
// classifier works on.
type nodeKind uint8

const (
	nName   nodeKind = iota // text: the name
	nHole                   // text: "$name"; templates only
	nNil                    // nil
	nTrue                   // true
	nFalse                  // false
	nNum                    // text: the numeral as written
	nStr                    // text: the decoded string
	nIndex                  // kids: object, key
	nField                  // text: field name; kids: object
	nCall                   // kids: function, arguments...
	nBinary                 // text: operator; kids: left, right
	nUnary                  // text: operator; kids: operand
	nBlock                  // kids: statements
	nLocal                  // kids: name, [value]
	nAssign                 // kids: name, value
	nIf                     // kids: condition, then block, [else block]
	nForIn                  // kids: name, name, iterator, body
	nReturn                 // kids: [value]
)

// luaNode is one expression or statement. The tree is a deliberately small
// subset of Lua 5.1: what lock scripts use, and nothing that would make
// them harder to reason about (functions, tables, while, repeat, break,
// method calls, varargs, several names or values in one statement).
type luaNode struct {
	kind nodeKind
	text string
	kids []*luaNode
}

// maxLuaDepth bounds expression nesting, so that a hostile body cannot run
// the parser out of stack.
const maxLuaDepth = 64

// luaKeywords are Lua 5.1's reserved words.
var luaKeywords = []string{"and", "break", "do", "else", "elseif", "end", "false",
	"for", "function", "if", "in", "local", "nil", "not", "or", "repeat",
	"return", "then", "true", "until", "while"}

// luaParse builds the tree of a whole chunk, or reports false if toks is
// not in the subset.
func luaParse(toks []luaToken) (*luaNode, bool) {
	p := luaParser{toks: toks}
	b, ok := p.block()
	if !ok || p.pos != len(toks) {
		return nil, false
	}
	return b, true
}

type luaParser struct {
	toks   []luaToken
	pos    int
	depth  int
	called bool // the last suffixed expression ended in a call
}

// enter counts one more level of nesting, and reports false past maxDepth.
func (p *luaParser) enter() bool {
	p.depth++
	return p.depth <= maxLuaDepth
}

func (p *luaParser) leave() { p.depth-- }

func (p *luaParser) peek() luaToken {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return luaToken{kind: lxOp, text: "<eof>"}
}

func (p *luaParser) accept(kind luaTokKind, text string) bool {
	if t := p.peek(); t.kind == kind && t.text == text {
		p.pos++
		return true
	}
	return false
}

func (p *luaParser) keyword(w string) bool { return p.accept(lxName, w) }

func (p *luaParser) blockEnd() bool {
	t := p.peek()
	return p.pos == len(p.toks) || t.kind == lxName &&
		(t.text == "end" || t.text == "else" || t.text == "elseif" || t.text == "until")
}

func (p *luaParser) block() (*luaNode, bool) {
	defer p.leave()
	if !p.enter() {
		return nil, false
	}
	b := &luaNode{kind: nBlock}
	for !p.blockEnd() {
		s, ok := p.statement()
		if !ok {
			return nil, false
		}
		b.kids = append(b.kids, s)
		p.accept(lxOp, ";")
		if s.kind == nReturn {
			break // Lua: return is the last statement of its block
		}
	}
	return b, true
}

func (p *luaParser) statement() (*luaNode, bool) {
	switch {
	case p.keyword("local"):
		return p.local()
	case p.keyword("if"):
		return p.ifStat()
	case p.keyword("for"):
		return p.forIn()
	case p.keyword("return"):
		r := &luaNode{kind: nReturn}
		if p.blockEnd() || p.peek().kind == lxOp && p.peek().text == ";" {
			return r, true
		}
		e, ok := p.expr()
		r.kids = []*luaNode{e}
		return r, ok
	}
	// Lua takes only a bare name before "=", and only a call as a
	// statement: "(a) = 1" and "(f())" are syntax errors.
	start := p.pos
	e, ok := p.suffixed()
	switch {
	case !ok:
		return nil, false
	case p.accept(lxOp, "="):
		if p.pos != start+2 {
			return nil, false
		}
		v, ok := p.expr()
		return &luaNode{kind: nAssign, kids: []*luaNode{e, v}}, ok
	case p.called:
		return e, true
	}
	return nil, false
}

// local parses "local name [= expr]"; "local function" is refused.
func (p *luaParser) local() (*luaNode, bool) {
	name, ok := p.name()
	if !ok {
		return nil, false
	}
	s := &luaNode{kind: nLocal, kids: []*luaNode{name}}
	if p.accept(lxOp, "=") {
		v, ok := p.expr()
		if !ok {
			return nil, false
		}
		s.kids = append(s.kids, v)
	}
	return s, true
}

// ifStat parses the rest of an if statement; elseif becomes an if nested
// in the else block.
func (p *luaParser) ifStat() (*luaNode, bool) {
	defer p.leave()
	if !p.enter() {
		return nil, false
	}
	cond, ok := p.expr()
	if !ok || !p.keyword("then") {
		return nil, false
	}
	then, ok := p.block()
	if !ok {
		return nil, false
	}
	s := &luaNode{kind: nIf, kids: []*luaNode{cond, then}}
	switch {
	case p.keyword("elseif"):
		nested, ok := p.ifStat()
		if !ok {
			return nil, false
		}
		s.kids = append(s.kids, &luaNode{kind: nBlock, kids: []*luaNode{nested}})
		return s, true
	case p.keyword("else"):
		els, ok := p.block()
		if !ok {
			return nil, false
		}
		s.kids = append(s.kids, els)
	}
	return s, p.keyword("end")
}

// forIn parses "for a, b in expr do block end".
func (p *luaParser) forIn() (*luaNode, bool) {
	a, ok1 := p.name()
	ok2 := p.accept(lxOp, ",")
	b, ok3 := p.name()
	if !ok1 || !ok2 || !ok3 || !p.keyword("in") {
		return nil, false
	}
	iter, ok := p.expr()
	if !ok || !p.keyword("do") {
		return nil, false
	}
	body, ok := p.block()
	if !ok || !p.keyword("end") {
		return nil, false
	}
	return &luaNode{kind: nForIn, kids: []*luaNode{a, b, iter, body}}, true
}

func (p *luaParser) name() (*luaNode, bool) {
	t := p.peek()
	switch {
	case t.kind == lxHole:
		p.pos++
		return &luaNode{kind: nHole, text: t.text}, true
	case t.kind == lxName && !slices.Contains(luaKeywords, t.text):
		p.pos++
		return &luaNode{kind: nName, text: t.text}, true
	}
	return nil, false
}

// Operator priorities from Lua 5.1's lparser.c: left and right.
var binaryPriority = map[string][2]int{
	"or": {1, 1}, "and": {2, 2},
	"<": {3, 3}, ">": {3, 3}, "<=": {3, 3}, ">=": {3, 3}, "~=": {3, 3}, "==": {3, 3},
	"..": {5, 4}, "+": {6, 6}, "-": {6, 6}, "*": {7, 7}, "/": {7, 7}, "%": {7, 7},
	"^": {10, 9},
}

const unaryPriority = 8

func (p *luaParser) expr() (*luaNode, bool) { return p.subexpr(0) }

func (p *luaParser) subexpr(limit int) (*luaNode, bool) {
	defer p.leave()
	if !p.enter() {
		return nil, false
	}
	var left *luaNode
	if t := p.peek(); t.kind == lxOp && (t.text == "-" || t.text == "#") || t.kind == lxName && t.text == "not" {
		p.pos++
		x, ok := p.subexpr(unaryPriority)
		if !ok {
			return nil, false
		}
		left = &luaNode{kind: nUnary, text: t.text, kids: []*luaNode{x}}
	} else {
		var ok bool
		if left, ok = p.simple(); !ok {
			return nil, false
		}
	}
	for {
		t := p.peek()
		prio, isBinary := binaryPriority[t.text]
		if !isBinary || t.kind != lxOp && t.kind != lxName || prio[0] <= limit {
			return left, true
		}
		p.pos++
		right, ok := p.subexpr(prio[1])
		if !ok {
			return nil, false
		}
		left = &luaNode{kind: nBinary, text: t.text, kids: []*luaNode{left, right}}
	}
}

func (p *luaParser) simple() (*luaNode, bool) {
	t := p.peek()
	switch {
	case t.kind == lxNumber:
		p.pos++
		return &luaNode{kind: nNum, text: t.text}, true
	case t.kind == lxString:
		p.pos++
		return &luaNode{kind: nStr, text: t.text}, true
	case p.keyword("nil"):
		return &luaNode{kind: nNil}, true
	case p.keyword("true"):
		return &luaNode{kind: nTrue}, true
	case p.keyword("false"):
		return &luaNode{kind: nFalse}, true
	}
	return p.suffixed()
}

// suffixed parses a name or parenthesised expression followed by any
// number of ".name", "[expr]" and "(args)". Parentheses are dropped:
// nothing in the subset returns more than one value for them to cut.
func (p *luaParser) suffixed() (*luaNode, bool) {
	var e *luaNode
	var ok bool
	if p.accept(lxOp, "(") {
		e, ok = p.expr()
		if !ok || !p.accept(lxOp, ")") {
			return nil, false
		}
	} else if e, ok = p.name(); !ok {
		return nil, false
	}
	called := false
	for {
		t := p.peek()
		switch {
		case p.accept(lxOp, "."):
			f, ok := p.name()
			if !ok || f.kind != nName {
				return nil, false
			}
			e, called = &luaNode{kind: nField, text: f.text, kids: []*luaNode{e}}, false
		case p.accept(lxOp, "["):
			k, ok := p.expr()
			if !ok || !p.accept(lxOp, "]") {
				return nil, false
			}
			e, called = &luaNode{kind: nIndex, kids: []*luaNode{e, k}}, false
		case t.kind == lxOp && t.text == "(":
			if t.nl {
				return nil, false // Lua 5.1: ambiguous syntax
			}
			p.pos++
			call, ok := p.args(e)
			if !ok {
				return nil, false
			}
			e, called = call, true
		default:
			p.called = called
			return e, true
		}
	}
}

func (p *luaParser) args(fn *luaNode) (*luaNode, bool) {
	call := &luaNode{kind: nCall, kids: []*luaNode{fn}}
	if p.accept(lxOp, ")") {
		return call, true
	}
	for {
		a, ok := p.expr()
		if !ok {
			return nil, false
		}
		call.kids = append(call.kids, a)
		if p.accept(lxOp, ")") {
			return call, true
		}
		if !p.accept(lxOp, ",") {
			return nil, false
		}
	}
}
