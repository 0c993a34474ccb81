package script

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/yuin/gopher-lua/ast"
)

// The masters run a client's script with Redis's own Lua 5.1 lexer and
// parser, while admission read it with gopher-lua's. Wherever the two
// read the same bytes differently (comments, long brackets, escapes, line
// ends, numerals), a script could run code that admission never saw. So
// the masters never get the client's bytes: the admitted tree is printed
// back as a plain subset of Lua 5.1 that both read alike. It has no
// comments and no long brackets; every string is double-quoted with every
// byte outside printable ASCII, and '"' and '\', as a three-digit decimal
// escape; numbers are decimal; operators are spaced and parenthesized by
// Lua 5.1's precedence; a statement that begins with '(' follows a ';'.
// Each statement and expression starts on the line it had, where the text
// before it allows, so that Redis's error lines still point at the
// client's lines.

// printChunk prints chunk. localFuncs says, for each local statement in
// source order, whether it was written "local function f": gopher-lua's
// tree is the same for "local f = function", which Lua 5.1 scopes apart.
func printChunk(chunk []ast.Stmt, localFuncs []bool) (string, error) {
	p := &printer{line: 1, localFuncs: localFuncs}
	p.block(chunk)
	if p.err == nil && p.nextLocal != len(localFuncs) {
		p.fail("the script's local statements do not match its tree")
	}
	if p.err != nil {
		return "", p.err
	}
	return p.b.String(), nil
}

type printer struct {
	b          strings.Builder
	line       int  // the output's current line, from 1
	space      bool // a space is due before the next token on this line
	localFuncs []bool
	nextLocal  int
	err        error
}

func (p *printer) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf(format, args...)
	}
}

// pad moves on to line, if the output is not past it already.
func (p *printer) pad(line int) {
	for p.line < line {
		p.b.WriteByte('\n')
		p.line++
		p.space = false
	}
}

func (p *printer) last() byte {
	s := p.b.String()
	if len(s) == 0 {
		return '\n'
	}
	return s[len(s)-1]
}

// w writes one token, with a space before it if it would otherwise run
// into the previous one: two words, "- -" (a comment), "[ [" or "[ =" (a
// long bracket), a number and ".", "= =".
func (p *printer) w(tok string) {
	if tok == "" {
		return
	}
	if p.space {
		p.b.WriteByte(' ')
		p.space = false
	}
	a, c := p.last(), tok[0]
	if isWordByte(a) && isWordByte(c) || a == '-' && c == '-' || a == '[' && (c == '[' || c == '=') ||
		isDigitByte(a) && c == '.' || a == '.' && (c == '.' || isDigitByte(c)) ||
		strings.IndexByte("=<>~", a) >= 0 && c == '=' {
		p.b.WriteByte(' ')
	}
	p.b.WriteString(tok)
}

// sp puts a space before the next token, unless a line break comes
// first or the output is at the start of a line.
func (p *printer) sp() {
	if a := p.last(); a != '\n' && a != ' ' {
		p.space = true
	}
}

func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigitByte(c)
}

func isDigitByte(c byte) bool { return '0' <= c && c <= '9' }

func (p *printer) block(stmts []ast.Stmt) {
	for i, s := range stmts {
		if p.err != nil {
			return
		}
		// Lua reads "a = b (f)()" as a call of b: end the statement before.
		if i > 0 && startsWithParen(s) {
			p.w(";")
		}
		p.pad(s.Line())
		p.sp()
		p.stmt(s)
	}
}

// body prints a block that ends with end, on the line of the end (last)
// where known.
func (p *printer) body(stmts []ast.Stmt, last int) {
	p.block(stmts)
	p.pad(last)
	p.sp()
	p.w("end")
}

func (p *printer) stmt(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.AssignStmt:
		p.exprs(s.Lhs)
		p.w(" =")
		p.sp()
		p.exprs(s.Rhs)
	case *ast.LocalAssignStmt:
		p.local(s)
	case *ast.FuncCallStmt:
		c, ok := s.Expr.(*ast.FuncCallExpr)
		if !ok || c.AdjustRet {
			// "(f())" as a statement: gopher-lua takes it, Lua 5.1 does
			// not; admission refuses it.
			p.fail("a parenthesized call is not a statement")
			return
		}
		p.expr(c)
	case *ast.DoBlockStmt:
		p.w("do")
		p.body(s.Stmts, s.LastLine())
	case *ast.WhileStmt:
		p.w("while")
		p.sp()
		p.expr(s.Condition)
		p.sp()
		p.w("do")
		p.body(s.Stmts, s.LastLine())
	case *ast.RepeatStmt:
		p.w("repeat")
		p.block(s.Stmts)
		p.sp()
		p.w("until")
		p.sp()
		p.expr(s.Condition)
	case *ast.IfStmt:
		p.ifStmt(s)
	case *ast.NumberForStmt:
		p.w("for")
		p.sp()
		p.w(s.Name)
		p.w(" =")
		p.sp()
		p.expr(s.Init)
		p.w(",")
		p.sp()
		p.expr(s.Limit)
		if s.Step != nil {
			p.w(",")
			p.sp()
			p.expr(s.Step)
		}
		p.sp()
		p.w("do")
		p.body(s.Stmts, s.LastLine())
	case *ast.GenericForStmt:
		p.w("for")
		p.sp()
		p.w(strings.Join(s.Names, ", "))
		p.sp()
		p.w("in")
		p.sp()
		p.exprs(s.Exprs)
		p.sp()
		p.w("do")
		p.body(s.Stmts, s.LastLine())
	case *ast.FuncDefStmt:
		p.w("function")
		p.sp()
		if s.Name.Func != nil {
			p.funcName(s.Name.Func)
		} else {
			p.funcName(s.Name.Receiver)
			p.w(":")
			p.w(s.Name.Method)
		}
		p.funcBody(s.Func)
	case *ast.ReturnStmt:
		p.w("return")
		if len(s.Exprs) > 0 {
			p.sp()
			p.exprs(s.Exprs)
		}
	case *ast.BreakStmt:
		p.w("break")
	default:
		p.fail("%T is not Lua 5.1", s)
	}
}

func (p *printer) local(s *ast.LocalAssignStmt) {
	if p.nextLocal >= len(p.localFuncs) {
		p.fail("the script's local statements do not match its tree")
		return
	}
	isFunc := p.localFuncs[p.nextLocal]
	p.nextLocal++
	p.w("local")
	p.sp()
	if isFunc {
		f, ok := s.Exprs[0].(*ast.FunctionExpr)
		if len(s.Names) != 1 || len(s.Exprs) != 1 || !ok {
			p.fail("the script's local statements do not match its tree")
			return
		}
		p.w("function")
		p.sp()
		p.w(s.Names[0])
		p.funcBody(f)
		return
	}
	p.w(strings.Join(s.Names, ", "))
	if len(s.Exprs) > 0 {
		p.w(" =")
		p.sp()
		p.exprs(s.Exprs)
	}
}

func (p *printer) ifStmt(s *ast.IfStmt) {
	last := s.LastLine()
	p.w("if")
	for {
		p.sp()
		p.expr(s.Condition)
		p.sp()
		p.w("then")
		p.block(s.Then)
		// An elseif is an if alone in the else block, with no end of
		// its own.
		if len(s.Else) == 1 {
			if next, ok := s.Else[0].(*ast.IfStmt); ok && next.LastLine() == 0 {
				p.pad(next.Line())
				p.sp()
				p.w("elseif")
				s = next
				continue
			}
		}
		break
	}
	if len(s.Else) > 0 {
		p.sp()
		p.w("else")
		p.block(s.Else)
	}
	p.pad(last)
	p.sp()
	p.w("end")
}

// funcName prints the name of "function a.b.c()".
func (p *printer) funcName(e ast.Expr) {
	switch e := e.(type) {
	case *ast.IdentExpr:
		p.w(e.Value)
	case *ast.AttrGetExpr:
		k, ok := e.Key.(*ast.StringExpr)
		if !ok || !isName(k.Value) {
			p.fail("a function name is not a name")
			return
		}
		p.funcName(e.Object)
		p.w(".")
		p.w(k.Value)
	default:
		p.fail("a function name is not a name")
	}
}

func (p *printer) funcBody(f *ast.FunctionExpr) {
	p.w("(")
	names := f.ParList.Names
	if f.ParList.HasVargs {
		names = append(names[:len(names):len(names)], "...")
	}
	p.w(strings.Join(names, ", "))
	p.w(")")
	p.body(f.Stmts, f.LastLine())
}

func (p *printer) exprs(es []ast.Expr) {
	for i, e := range es {
		if i > 0 {
			p.w(",")
			p.sp()
		}
		p.expr(e)
	}
}

// Operators are parenthesized by Lua 5.1's priorities (binaryPriority,
// unaryPriority in luaparse.go).

// binary returns e's operator and operands if e is a binary operation.
func binary(e ast.Expr) (op string, lhs, rhs ast.Expr, ok bool) {
	switch e := e.(type) {
	case *ast.LogicalOpExpr:
		return e.Operator, e.Lhs, e.Rhs, true
	case *ast.RelationalOpExpr:
		return e.Operator, e.Lhs, e.Rhs, true
	case *ast.StringConcatOpExpr:
		return "..", e.Lhs, e.Rhs, true
	case *ast.ArithmeticOpExpr:
		return e.Operator, e.Lhs, e.Rhs, true
	}
	return "", nil, nil, false
}

func unary(e ast.Expr) (op string, operand ast.Expr, ok bool) {
	switch e := e.(type) {
	case *ast.UnaryMinusOpExpr:
		return "-", e.Expr, true
	case *ast.UnaryNotOpExpr:
		return "not", e.Expr, true
	case *ast.UnaryLenOpExpr:
		return "#", e.Expr, true
	}
	return "", nil, false
}

// operand prints e as an operand that Lua 5.1 must read at priority
// limit: an operation that binds less tightly is parenthesized.
func (p *printer) operand(e ast.Expr, limit int) {
	paren := false
	if op, _, _, ok := binary(e); ok {
		paren = binaryPriority[op][0] <= limit
	} else if _, _, ok := unary(e); ok {
		paren = unaryPriority <= limit
	}
	if paren {
		p.parenthesized(e)
		return
	}
	p.expr(e)
}

func (p *printer) expr(e ast.Expr) {
	if p.err != nil {
		return
	}
	p.pad(e.Line())
	if op, lhs, rhs, ok := binary(e); ok {
		pr, known := binaryPriority[op]
		if !known {
			p.fail("the operator %q is not Lua 5.1", op)
			return
		}
		// The left operand must not take the operator's right side: an
		// operation whose right priority is below this one's left one is
		// parenthesized. The right operand is read at the right priority.
		p.leftOperand(lhs, pr[0])
		p.sp()
		p.w(op)
		p.sp()
		p.operand(rhs, pr[1])
		return
	}
	if op, x, ok := unary(e); ok {
		p.w(op)
		if op == "not" {
			p.sp()
		}
		p.operand(x, unaryPriority-1)
		return
	}
	switch e := e.(type) {
	case *ast.NilExpr:
		p.w("nil")
	case *ast.TrueExpr:
		p.w("true")
	case *ast.FalseExpr:
		p.w("false")
	case *ast.NumberExpr:
		f, err := luaNumber(e.Value)
		if err != nil {
			p.fail("%v", err)
			return
		}
		p.w(formatNumber(f))
	case *ast.StringExpr:
		p.w(quoteString(e.Value))
	case *ast.Comma3Expr:
		if e.AdjustRet {
			p.w("(...)")
		} else {
			p.w("...")
		}
	case *ast.IdentExpr:
		p.w(e.Value)
	case *ast.AttrGetExpr:
		p.prefix(e.Object)
		if k, ok := e.Key.(*ast.StringExpr); ok && isName(k.Value) {
			p.pad(k.Line())
			p.w(".")
			p.w(k.Value)
			return
		}
		p.w("[")
		p.expr(e.Key)
		p.w("]")
	case *ast.FuncCallExpr:
		if e.AdjustRet {
			p.w("(")
		}
		if e.Receiver != nil {
			p.prefix(e.Receiver)
			p.w(":")
			p.w(e.Method)
		} else {
			p.prefix(e.Func)
		}
		// No line break before "(": Lua 5.1 refuses "f\n(x)".
		p.w("(")
		p.exprs(e.Args)
		p.w(")")
		if e.AdjustRet {
			p.w(")")
		}
	case *ast.TableExpr:
		p.w("{")
		for i, f := range e.Fields {
			if i > 0 {
				p.w(",")
				p.sp()
			}
			switch k, ok := f.Key.(*ast.StringExpr); {
			case f.Key == nil:
			case ok && isName(k.Value):
				p.pad(k.Line())
				p.w(k.Value)
				p.w(" =")
				p.sp()
			default:
				p.w("[")
				p.expr(f.Key)
				p.w("] =")
				p.sp()
			}
			p.expr(f.Value)
		}
		p.w("}")
	case *ast.FunctionExpr:
		p.w("function")
		p.funcBody(e)
	default:
		p.fail("%T is not Lua 5.1", e)
	}
}

// leftOperand prints the left operand of an operator of left priority
// left.
func (p *printer) leftOperand(e ast.Expr, left int) {
	paren := false
	if op, _, _, ok := binary(e); ok {
		paren = binaryPriority[op][1] < left
	} else if _, _, ok := unary(e); ok {
		paren = unaryPriority < left
	}
	if paren {
		p.parenthesized(e)
		return
	}
	p.expr(e)
}

// prefix prints e where Lua wants a prefix expression (before a call,
// an index or a method): anything but a name, an index or a call is
// parenthesized.
func (p *printer) prefix(e ast.Expr) {
	switch e := e.(type) {
	case *ast.IdentExpr, *ast.AttrGetExpr, *ast.FuncCallExpr:
		p.expr(e)
	case *ast.Comma3Expr:
		if e.AdjustRet {
			p.expr(e)
			return
		}
		p.parenthesized(e)
	default:
		p.parenthesized(e)
	}
}

func (p *printer) parenthesized(e ast.Expr) {
	p.pad(e.Line())
	p.w("(")
	p.expr(e)
	p.w(")")
}

// startsWithParen reports whether s is printed beginning with "(".
func startsWithParen(s ast.Stmt) bool {
	var e ast.Expr
	switch s := s.(type) {
	case *ast.FuncCallStmt:
		e = s.Expr
	case *ast.AssignStmt:
		e = s.Lhs[0]
	default:
		return false
	}
	for {
		switch x := e.(type) {
		case *ast.IdentExpr:
			return false
		case *ast.AttrGetExpr:
			e = x.Object
		case *ast.FuncCallExpr:
			if x.AdjustRet {
				return true
			}
			if x.Receiver != nil {
				e = x.Receiver
			} else {
				e = x.Func
			}
		default:
			return true
		}
	}
}

// isName reports whether s can be written as a Lua name.
func isName(s string) bool {
	// goto is no Lua 5.1 word, but gopher-lua reserves it.
	if s == "" || isDigitByte(s[0]) || slices.Contains(luaKeywords, s) || s == "goto" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isWordByte(s[i]) {
			return false
		}
	}
	return true
}

// quoteString writes s as a double-quoted Lua string: printable ASCII as
// itself, everything else, '"' and '\' as a three-digit decimal escape
// (three digits always, so a digit after it is not read into it).
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c < 0x7f && c != '"' && c != '\\' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "\\%03d", c)
	}
	b.WriteByte('"')
	return b.String()
}

var (
	decimalNumeral = regexp.MustCompile(`^([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	hexNumeral     = regexp.MustCompile(`^0[xX][0-9a-fA-F]+$`)
)

// luaNumber is the value of a numeral as gopher-lua's lexer wrote it:
// decimal, or hexadecimal integer. Anything else (gopher-lua lexes "3e)"
// as one numeral), or a value out of range, is refused.
func luaNumber(text string) (float64, error) {
	if hexNumeral.MatchString(text) {
		n, err := strconv.ParseUint(text[2:], 16, 64)
		if err != nil {
			return 0, fmt.Errorf("the number %s is out of range", text)
		}
		return float64(n), nil
	}
	if !decimalNumeral.MatchString(text) {
		return 0, fmt.Errorf("the number %q is malformed", text)
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsInf(f, 0) {
		return 0, fmt.Errorf("the number %s is out of range", text)
	}
	return f, nil
}

// formatNumber writes f (finite, not negative) so that Lua 5.1's strtod
// reads the same double: the shortest decimal that round-trips.
func formatNumber(f float64) string {
	if f == math.Trunc(f) && f < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
