package script

import (
	"fmt"
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

// printChunk prints chunk, with what toks saw of its text that the tree
// does not keep.
func printChunk(chunk []ast.Stmt, toks tokens) (string, error) {
	p := &printer{line: 1, localFuncs: toks.localFuncs, strEnd: toks.strEnd}
	p.block(chunk)
	if p.err == nil && p.nextLocal != len(p.localFuncs) {
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
	strEnd     map[lineString]int
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
