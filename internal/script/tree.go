package script

import "github.com/yuin/gopher-lua/ast"

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
	nStr                    // text: the string's value
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

// luaNode is one expression or statement of a chunk gopher-lua parsed,
// in a deliberately small subset of Lua 5.1: what lock scripts use, and
// nothing that would make them harder to reason about (functions,
// tables, while, repeat, numeric for, break, method calls, varargs,
// several names or values in one statement).
type luaNode struct {
	kind nodeKind
	text string
	kids []*luaNode
}

// subset converts a parsed chunk into the subset, or reports false. With
// holes (templates only), a name "_x" is the hole "$x". Parentheses are
// dropped: nothing in the subset returns more than one value for them to
// cut. "elseif" is an if nested in the else block, as in gopher-lua's
// tree.
func subset(chunk []ast.Stmt, holes bool) (*luaNode, bool) {
	c := converter{holes: holes, ok: true}
	b := c.block(chunk)
	return b, c.ok
}

type converter struct {
	holes bool
	ok    bool // false once anything is outside the subset
}

func (c *converter) fail() *luaNode {
	c.ok = false
	return &luaNode{kind: nNil}
}

func (c *converter) block(stmts []ast.Stmt) *luaNode {
	b := &luaNode{kind: nBlock, kids: make([]*luaNode, 0, len(stmts))}
	for _, s := range stmts {
		if !c.ok {
			break
		}
		b.kids = append(b.kids, c.stmt(s))
	}
	return b
}

func (c *converter) name(s string) *luaNode {
	if c.holes && len(s) > 1 && s[0] == '_' {
		return &luaNode{kind: nHole, text: "$" + s[1:]}
	}
	return &luaNode{kind: nName, text: s}
}

func (c *converter) node(kind nodeKind, text string, kids ...*luaNode) *luaNode {
	return &luaNode{kind: kind, text: text, kids: kids}
}

func (c *converter) stmt(s ast.Stmt) *luaNode {
	switch s := s.(type) {
	case *ast.LocalAssignStmt:
		switch {
		case len(s.Names) != 1 || len(s.Exprs) > 1:
			return c.fail()
		case len(s.Exprs) == 0:
			return c.node(nLocal, "", c.name(s.Names[0]))
		}
		return c.node(nLocal, "", c.name(s.Names[0]), c.expr(s.Exprs[0]))
	case *ast.AssignStmt:
		if len(s.Lhs) != 1 || len(s.Rhs) != 1 {
			return c.fail()
		}
		id, ok := s.Lhs[0].(*ast.IdentExpr)
		if !ok {
			return c.fail()
		}
		return c.node(nAssign, "", c.name(id.Value), c.expr(s.Rhs[0]))
	case *ast.FuncCallStmt:
		if call, ok := s.Expr.(*ast.FuncCallExpr); !ok || call.AdjustRet {
			return c.fail() // "(f())" is no statement in Lua 5.1
		}
		return c.expr(s.Expr)
	case *ast.IfStmt:
		n := c.node(nIf, "", c.expr(s.Condition), c.block(s.Then))
		if c.ok && len(s.Else) > 0 {
			n.kids = append(n.kids, c.block(s.Else))
		}
		return n
	case *ast.GenericForStmt:
		if len(s.Names) != 2 || len(s.Exprs) != 1 {
			return c.fail()
		}
		iter := c.expr(s.Exprs[0])
		if !c.ok {
			return iter
		}
		return c.node(nForIn, "", c.name(s.Names[0]), c.name(s.Names[1]), iter, c.block(s.Stmts))
	case *ast.ReturnStmt:
		switch len(s.Exprs) {
		case 0:
			return c.node(nReturn, "")
		case 1:
			return c.node(nReturn, "", c.expr(s.Exprs[0]))
		}
	}
	return c.fail()
}

func (c *converter) expr(e ast.Expr) *luaNode {
	if !c.ok {
		return &luaNode{kind: nNil}
	}
	switch e := e.(type) {
	case *ast.NilExpr:
		return c.node(nNil, "")
	case *ast.TrueExpr:
		return c.node(nTrue, "")
	case *ast.FalseExpr:
		return c.node(nFalse, "")
	case *ast.NumberExpr:
		return c.node(nNum, e.Value)
	case *ast.StringExpr:
		return c.node(nStr, e.Value)
	case *ast.IdentExpr:
		return c.name(e.Value)
	case *ast.AttrGetExpr:
		// a.b and a["b"] are one tree in gopher-lua, and one meaning.
		if k, ok := e.Key.(*ast.StringExpr); ok && isName(k.Value) {
			return c.node(nField, k.Value, c.expr(e.Object))
		}
		return c.node(nIndex, "", c.expr(e.Object), c.expr(e.Key))
	case *ast.FuncCallExpr:
		if e.Receiver != nil || e.Func == nil {
			return c.fail() // a method call
		}
		n := c.node(nCall, "", c.expr(e.Func))
		for _, a := range e.Args {
			n.kids = append(n.kids, c.expr(a))
		}
		return n
	case *ast.LogicalOpExpr:
		return c.node(nBinary, e.Operator, c.expr(e.Lhs), c.expr(e.Rhs))
	case *ast.RelationalOpExpr:
		return c.node(nBinary, e.Operator, c.expr(e.Lhs), c.expr(e.Rhs))
	case *ast.ArithmeticOpExpr:
		return c.node(nBinary, e.Operator, c.expr(e.Lhs), c.expr(e.Rhs))
	case *ast.StringConcatOpExpr:
		return c.node(nBinary, "..", c.expr(e.Lhs), c.expr(e.Rhs))
	case *ast.UnaryMinusOpExpr:
		return c.node(nUnary, "-", c.expr(e.Expr))
	case *ast.UnaryNotOpExpr:
		return c.node(nUnary, "not", c.expr(e.Expr))
	case *ast.UnaryLenOpExpr:
		return c.node(nUnary, "#", c.expr(e.Expr))
	}
	return c.fail() // tables, functions, "..."
}
