package script

import "github.com/yuin/gopher-lua/parse"

// maxSyntaxLevels is Lua 5.1's LUAI_MAXCCALLS: its parser refuses a chunk
// whose blocks and subexpressions nest deeper ("chunk has too many syntax
// levels"). Redis 7.0 compiles a script's body as the main chunk, so one
// Redis refuses at the same point.
const maxSyntaxLevels = 200

// wrapperLevels is what the masters' wrapper adds: it runs the body as a
// function of its own chunk, one level deeper than Redis's main chunk.
const wrapperLevels = 1

// tooManyLevels is Lua 5.1's message for a chunk nested too deep.
const tooManyLevels = "chunk has too many syntax levels"

// syntaxLevels reads body as Lua 5.1's recursive-descent parser does,
// counting its levels where lparser.c counts them (every chunk and every
// subexpression), and returns the line at which Lua 5.1 refuses the body
// as too deep, or 0. One Redis's line where one Redis refuses it;
// otherwise the masters' wrapper's, which refuses one level earlier. It stops at the first token Lua 5.1's grammar does
// not take (the full parse then reports it), so it costs one pass of a
// lexer that allocates nothing and at most maxSyntaxLevels frames of Go
// stack, whatever the body: gopher-lua's own parser, run on a body nested
// 250,000 levels deep, takes seconds and hundreds of megabytes.
//
// It also returns how many tokens body has (up to a lexical error): what
// gopher-lua's parser costs grows with them.
func syntaxLevels(body []byte) (line, tokens int) {
	p := &levelParser{lex: levelLexer{src: body, line: 1}, ahead: -1}
	if p.next() {
		p.chunk() // a syntax error stops it; the full parse names it
	}
	for p.tok != parse.EOF && p.redisLine == 0 && p.next() {
		// count the rest
	}
	if p.redisLine > 0 {
		return p.redisLine, p.lex.tokens
	}
	return p.wrapperLine, p.lex.tokens
}

// levelParser is the recognizer syntaxLevels runs. Every method reports
// whether to go on: false at a syntax error or once too deep.
type levelParser struct {
	lex   levelLexer
	tok   int // the current token's type, as gopher-lua's parse names them
	ahead int // a token read ahead (table constructors only), or -1
	level int
	// redisLine and wrapperLine are the lines where the level went over
	// what one Redis and the masters' wrapper take, or 0.
	redisLine, wrapperLine int
}

func (p *levelParser) next() bool {
	if p.ahead >= 0 {
		p.tok, p.ahead = p.ahead, -1
		return true
	}
	t, ok := p.lex.scan()
	p.tok = t
	return ok
}

// lookahead reads the token after the current one, as Lua 5.1's lexer
// does in a table constructor (and so moves on its line).
func (p *levelParser) lookahead() (int, bool) {
	if p.ahead < 0 {
		t, ok := p.lex.scan()
		if !ok {
			return 0, false
		}
		p.ahead = t
	}
	return p.ahead, true
}

// enter counts one more level (lparser.c's enterlevel).
func (p *levelParser) enter() bool {
	p.level++
	if p.level+wrapperLevels > maxSyntaxLevels && p.wrapperLine == 0 {
		p.wrapperLine = p.lex.line
	}
	if p.level > maxSyntaxLevels {
		p.redisLine = p.lex.line
		return false
	}
	return true
}

func (p *levelParser) leave() { p.level-- }

func (p *levelParser) is(t int) bool { return p.tok == t }

// check consumes a token of type t.
func (p *levelParser) check(t int) bool { return p.is(t) && p.next() }

// test consumes a token of type t if it is the current one.
func (p *levelParser) test(t int) (found, ok bool) {
	if !p.is(t) {
		return false, true
	}
	return true, p.next()
}

func (p *levelParser) blockFollow() bool {
	switch p.tok {
	case parse.TElse, parse.TElseIf, parse.TEnd, parse.TUntil, parse.EOF:
		return true
	}
	return false
}

// chunk: { statement [";"] }
func (p *levelParser) chunk() bool {
	if !p.enter() {
		return false
	}
	defer p.leave()
	for !p.blockFollow() {
		last, ok := p.statement()
		if !ok {
			return false
		}
		if _, ok := p.test(';'); !ok {
			return false
		}
		if last {
			break
		}
	}
	return true
}

// block is a chunk that ends with token end.
func (p *levelParser) block(end int) bool { return p.chunk() && p.check(end) }

// statement reports whether it was the last of its chunk (return, break).
func (p *levelParser) statement() (last, ok bool) {
	switch p.tok {
	case parse.TIf:
		return false, p.ifStat()
	case parse.TWhile:
		return false, p.next() && p.expr() && p.check(parse.TDo) && p.block(parse.TEnd)
	case parse.TDo:
		return false, p.next() && p.block(parse.TEnd)
	case parse.TFor:
		return false, p.forStat()
	case parse.TRepeat:
		return false, p.next() && p.block(parse.TUntil) && p.expr()
	case parse.TFunction:
		if !p.next() || !p.check(parse.TIdent) {
			return false, false
		}
		for p.is('.') {
			if !p.next() || !p.check(parse.TIdent) {
				return false, false
			}
		}
		if p.is(':') && (!p.next() || !p.check(parse.TIdent)) {
			return false, false
		}
		return false, p.body()
	case parse.TLocal:
		if !p.next() {
			return false, false
		}
		if p.is(parse.TFunction) {
			return false, p.next() && p.check(parse.TIdent) && p.body()
		}
		return false, p.localNames()
	case parse.TReturn:
		if !p.next() {
			return true, false
		}
		if p.blockFollow() || p.is(';') {
			return true, true
		}
		return true, p.exprList()
	case parse.TBreak:
		return true, p.next()
	}
	return false, p.exprStat()
}

func (p *levelParser) ifStat() bool {
	// if cond then block {elseif cond then block} [else block] end
	if !p.next() || !p.expr() || !p.check(parse.TThen) || !p.chunk() {
		return false
	}
	for p.is(parse.TElseIf) {
		if !p.next() || !p.expr() || !p.check(parse.TThen) || !p.chunk() {
			return false
		}
	}
	if p.is(parse.TElse) && (!p.next() || !p.chunk()) {
		return false
	}
	return p.check(parse.TEnd)
}

func (p *levelParser) forStat() bool {
	if !p.next() || !p.check(parse.TIdent) {
		return false
	}
	if p.is('=') {
		// for name = exp, exp [, exp] do block end
		if !p.next() || !p.expr() || !p.check(',') || !p.expr() {
			return false
		}
		if found, ok := p.test(','); !ok || found && !p.expr() {
			return false
		}
	} else {
		// for name {, name} in explist do block end
		for p.is(',') {
			if !p.next() || !p.check(parse.TIdent) {
				return false
			}
		}
		if !p.check(parse.TIn) || !p.exprList() {
			return false
		}
	}
	return p.check(parse.TDo) && p.block(parse.TEnd)
}

func (p *levelParser) localNames() bool {
	if !p.check(parse.TIdent) {
		return false
	}
	for p.is(',') {
		if !p.next() || !p.check(parse.TIdent) {
			return false
		}
	}
	if found, ok := p.test('='); !ok || found && !p.exprList() {
		return false
	}
	return true
}

// exprStat is a call, or an assignment to a list of targets.
func (p *levelParser) exprStat() bool {
	called, ok := p.primary()
	if !ok {
		return false
	}
	if !p.is('=') && !p.is(',') {
		return called // anything else must be a call
	}
	for p.is(',') {
		if !p.next() {
			return false
		}
		if _, ok := p.primary(); !ok {
			return false
		}
	}
	return p.check('=') && p.exprList()
}

// body: "(" parlist ")" chunk end
func (p *levelParser) body() bool {
	if !p.check('(') {
		return false
	}
	for !p.is(')') {
		if p.is(parse.T3Comma) {
			if !p.next() {
				return false
			}
			break
		}
		if !p.check(parse.TIdent) {
			return false
		}
		if found, ok := p.test(','); !ok || !found {
			if !ok {
				return false
			}
			break
		}
	}
	return p.check(')') && p.block(parse.TEnd)
}

func (p *levelParser) exprList() bool {
	if !p.expr() {
		return false
	}
	for p.is(',') {
		if !p.next() || !p.expr() {
			return false
		}
	}
	return true
}

func (p *levelParser) expr() bool { return p.subexpr(0) }

// binaryPriorityOf is binaryPriority for a gopher-lua token.
func binaryPriorityOf(t int) (left, right int, ok bool) {
	switch t {
	case '+', '-':
		return 6, 6, true
	case '*', '/', '%':
		return 7, 7, true
	case '^':
		return 10, 9, true
	case parse.T2Comma:
		return 5, 4, true
	case parse.TEqeq, parse.TNeq, '<', '>', parse.TLte, parse.TGte:
		return 3, 3, true
	case parse.TAnd:
		return 2, 2, true
	case parse.TOr:
		return 1, 1, true
	}
	return 0, 0, false
}

// subexpr: (simpleexp | unop subexpr) { binop subexpr }
func (p *levelParser) subexpr(limit int) bool {
	if !p.enter() {
		return false
	}
	defer p.leave()
	if p.is(parse.TNot) || p.is('-') || p.is('#') {
		if !p.next() || !p.subexpr(unaryPriority) {
			return false
		}
	} else if !p.simple() {
		return false
	}
	for {
		left, right, ok := binaryPriorityOf(p.tok)
		if !ok || left <= limit {
			return true
		}
		if !p.next() || !p.subexpr(right) {
			return false
		}
	}
}

func (p *levelParser) simple() bool {
	switch p.tok {
	case parse.TNumber, parse.TString, parse.TNil, parse.TTrue, parse.TFalse, parse.T3Comma:
		return p.next()
	case '{':
		return p.constructor()
	case parse.TFunction:
		return p.next() && p.body()
	}
	_, ok := p.primary()
	return ok
}

// primary: (name | "(" expr ")") { "." name | "[" expr "]" | ":" name args | args }
// It reports whether the expression ends in a call.
func (p *levelParser) primary() (called, ok bool) {
	switch p.tok {
	case '(':
		if !p.next() || !p.expr() || !p.check(')') {
			return false, false
		}
	case parse.TIdent:
		if !p.next() {
			return false, false
		}
	default:
		return false, false
	}
	for {
		switch p.tok {
		case '.':
			if !p.next() || !p.check(parse.TIdent) {
				return false, false
			}
			called = false
		case '[':
			if !p.next() || !p.expr() || !p.check(']') {
				return false, false
			}
			called = false
		case ':':
			if !p.next() || !p.check(parse.TIdent) || !p.args() {
				return false, false
			}
			called = true
		case '(', parse.TString, '{':
			if !p.args() {
				return false, false
			}
			called = true
		default:
			return called, true
		}
	}
}

// args: "(" [explist] ")" | constructor | string
func (p *levelParser) args() bool {
	switch p.tok {
	case parse.TString:
		return p.next()
	case '{':
		return p.constructor()
	case '(':
		if !p.next() {
			return false
		}
		if !p.is(')') && !p.exprList() {
			return false
		}
		return p.check(')')
	}
	return false
}

// constructor: "{" [field {sep field} [sep]] "}"
func (p *levelParser) constructor() bool {
	if !p.check('{') {
		return false
	}
	for !p.is('}') {
		switch p.tok {
		case parse.TIdent:
			t, ok := p.lookahead()
			if !ok {
				return false
			}
			if t == '=' {
				// name = expr: step over the name, then the "=".
				if !p.next() {
					return false
				}
				if !p.next() || !p.expr() {
					return false
				}
			} else if !p.expr() {
				return false
			}
		case '[':
			if !p.next() || !p.expr() || !p.check(']') || !p.check('=') || !p.expr() {
				return false
			}
		default:
			if !p.expr() {
				return false
			}
		}
		if !p.is(',') && !p.is(';') {
			break
		}
		if !p.next() {
			return false
		}
	}
	return p.check('}')
}
