package script

import (
	"github.com/yuin/gopher-lua/ast"

	"github.com/redlock-proxy/redlock-proxy/internal/lua"
)

// Expressions, as print.go prints them.

func (p *printer) exprs(es []ast.Expr) {
	for i, e := range es {
		if i > 0 {
			p.w(",")
			p.sp()
		}
		p.expr(e)
	}
}

// Operator priorities from Lua 5.1's lparser.c: left and right.
var binaryPriority = map[string][2]int{
	"or": {1, 1}, "and": {2, 2},
	"<": {3, 3}, ">": {3, 3}, "<=": {3, 3}, ">=": {3, 3}, "~=": {3, 3}, "==": {3, 3},
	"..": {5, 4}, "+": {6, 6}, "-": {6, 6}, "*": {7, 7}, "/": {7, 7}, "%": {7, 7},
	"^": {10, 9},
}

const unaryPriority = 8

// Operators are parenthesized by Lua 5.1's priorities.

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
	// Only a token that is a node of its own (a name, a constant, "{",
	// "function", an opening parenthesis) moves to its node's line: the
	// lines gopher-lua gives operations, calls and indexes are their
	// operands' or a dropped parenthesis', and moving an operator to
	// them would not read back as the same lines.
	if op, x, ok := unary(e); ok {
		p.w(op)
		if op == "not" {
			p.sp()
		}
		p.operand(x, unaryPriority-1)
		return
	}
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
	switch x := e.(type) {
	case *ast.AttrGetExpr:
	case *ast.FuncCallExpr:
		if x.AdjustRet {
			p.pad(x.Line())
		}
	case *ast.StringExpr:
		p.pad(p.stringLine(x))
	default:
		p.pad(e.Line())
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
		p.w(lua.Quote(e.Value))
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
			p.pad(p.stringLine(k))
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
				p.pad(p.stringLine(k))
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

// stringLine is the line a string constant is printed on: the last line
// of the client's string where it spanned lines (printed, it spans none).
func (p *printer) stringLine(e *ast.StringExpr) int {
	if end, ok := p.strEnd[lineString{e.Line(), e.Value}]; ok {
		return end
	}
	return e.Line()
}
