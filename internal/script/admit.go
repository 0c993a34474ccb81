package script

import (
	"fmt"
	"strconv"

	"github.com/redlock-proxy/redlock-proxy/internal/ascii"

	"github.com/yuin/gopher-lua/ast"

	"github.com/redlock-proxy/redlock-proxy/internal/lua"
)

// globals are the global names a served script may read; anything else
// (getfenv, loadstring, _G, rawget, setmetatable, os, ...) could reach
// around the wrapper the proxy runs the script in.
var globals = map[string]bool{
	"KEYS": true, "ARGV": true, "redis": true,
	"tonumber": true, "tostring": true, "type": true, "ipairs": true,
	"pairs": true, "next": true, "select": true, "unpack": true,
	"error": true, "assert": true, "pcall": true,
	"string": true, "table": true, "math": true, "bit": true, "cjson": true,
}

// redisFields are the members of the redis table a script may use.
var redisFields = map[string]bool{
	"call": true, "pcall": true, "error_reply": true, "status_reply": true,
	"sha1hex": true, "log": true, "LOG_DEBUG": true, "LOG_VERBOSE": true,
	"LOG_NOTICE": true, "LOG_WARNING": true, "REDIS_VERSION": true,
	"REDIS_VERSION_NUM": true, "replicate_commands": true,
}

// maxLiterals bounds the constants an Admission carries.
const maxLiterals = 64

// Admission is what the proxy needs to know about an admitted script.
type Admission struct {
	// Literals are the script's string and number constants, as Redis
	// would pass them to a command: values the script may write as
	// markers, never as tokens (Symfony's "__write__", the "1" of its
	// TIME probe, Redisson's unlock latch).
	Literals []string
	// Source is the script as the masters run it: the admitted tree
	// printed back as plain Lua 5.1 (print.go), so that what runs is what
	// admission read, whatever Redis's lexer would make of the client's
	// own bytes. Admit(Source) admits it with the same Literals and
	// Source.
	Source string
}

// Refusal says why a script is not served and where.
type Refusal struct {
	Line   int
	Reason string
	// Compile is set when Lua 5.1 itself does not compile the script, as
	// one Redis would not: Reason is then Lua's own message, and Redis's
	// reply is CompileError's.
	Compile bool
}

// CompileError is the error one Redis 7.0 replies to a script its Lua
// does not compile, for a refusal with Compile set.
func (r *Refusal) CompileError() string {
	return fmt.Sprintf("ERR Error compiling script (new function): user_script:%d: %s", r.Line, r.Reason)
}

func (r *Refusal) Error() string {
	if r.Line > 0 {
		return fmt.Sprintf("%s (line %d)", r.Reason, r.Line)
	}
	return r.Reason
}

// Admit parses body as Redis's Lua 5.1 and admits it only if every
// redis.call and redis.pcall names an allowed command (or takes its name
// from ARGV, checked when it runs), every key argument is a KEYS element,
// and nothing reaches outside the globals a lock script needs. A refusal
// is a *Refusal naming the construct and its line.
func Admit(body []byte) (Admission, error) {
	chunk, toks, refusal := parseBody(body)
	if refusal != nil {
		return Admission{}, refusal
	}
	// The wrapper runs the body as a vararg function, as Redis runs a
	// script's chunk.
	a := &admitter{lits: map[string]bool{}, fns: []fnState{{vararg: true, runs: 1, work: 1}}}
	a.push()
	a.block(chunk)
	if a.err != nil {
		return Admission{}, a.err
	}
	src, refusal := reprint(chunk, toks)
	if refusal != nil {
		return Admission{}, refusal
	}
	return Admission{Literals: a.order, Source: src}, nil
}

// admitter walks the chunk once; the first refusal sticks.
type admitter struct {
	scopes []map[string]*localVar // local names
	lits   map[string]bool
	order  []string
	err    *Refusal
	// fns is the enclosing functions, innermost last: Lua 5.1 refuses to
	// compile "..." outside a vararg function and break outside a loop,
	// which gopher-lua's parser lets through.
	fns []fnState
}

type fnState struct {
	vararg bool
	loops  int // loops around the current statement
	// runs is how often the current statement may run per call of the
	// function (the product of its loops' bounds), work the steps its
	// statements so far may take (loops.go).
	runs, work int
}

// localVar is what admission knows of a local name.
type localVar struct {
	keyVar bool    // bound to a KEYS element
	fn     *fnInfo // a function the script defines, never reassigned
}

func (a *admitter) fn() *fnState { return &a.fns[len(a.fns)-1] }

func (a *admitter) push() { a.scopes = append(a.scopes, map[string]*localVar{}) }
func (a *admitter) pop()  { a.scopes = a.scopes[:len(a.scopes)-1] }

func (a *admitter) declare(name string, keyVar bool) {
	a.scopes[len(a.scopes)-1][name] = &localVar{keyVar: keyVar}
}

// local returns what is known of the local name, or nil for a global.
func (a *admitter) local(name string) *localVar {
	for i := len(a.scopes) - 1; i >= 0; i-- {
		if v, ok := a.scopes[i][name]; ok {
			return v
		}
	}
	return nil
}

// lookup reports whether name is a local, and whether it holds a key.
func (a *admitter) lookup(name string) (local, keyVar bool) {
	if v := a.local(name); v != nil {
		return true, v.keyVar
	}
	return false, false
}

func (a *admitter) refuse(line int, format string, args ...any) {
	if a.err == nil {
		a.err = &Refusal{Line: line, Reason: fmt.Sprintf(format, args...)}
	}
}

func (a *admitter) literal(s string) {
	if !a.lits[s] && len(a.order) < maxLiterals && len(s) <= 512 {
		a.lits[s] = true
		a.order = append(a.order, s)
	}
}

func (a *admitter) block(stmts []ast.Stmt) {
	for _, s := range stmts {
		if a.err != nil {
			return
		}
		a.stmt(s)
	}
}

func (a *admitter) scoped(stmts []ast.Stmt) {
	a.push()
	a.block(stmts)
	a.pop()
}

func (a *admitter) stmt(s ast.Stmt) {
	if !a.spend(s.Line(), 1) {
		return
	}
	switch s := s.(type) {
	case *ast.LocalAssignStmt:
		if len(s.Names) == 1 && len(s.Exprs) == 1 {
			if f, ok := s.Exprs[0].(*ast.FunctionExpr); ok {
				// local function f: f is in scope inside its body, where
				// calling it is refused (loops.go).
				info := &fnInfo{inProgress: true}
				a.scopes[len(a.scopes)-1][s.Names[0]] = &localVar{fn: info}
				info.work = a.function(f)
				info.inProgress = false
				return
			}
		}
		a.exprs(s.Exprs)
		for i, n := range s.Names {
			a.declare(n, i < len(s.Exprs) && isKeysIndex(s.Exprs[i]) && a.keysIsGlobal())
		}
	case *ast.AssignStmt:
		for _, l := range s.Lhs {
			a.target(l)
		}
		a.exprs(s.Rhs)
	case *ast.FuncCallStmt:
		if c, ok := s.Expr.(*ast.FuncCallExpr); ok && c.AdjustRet {
			a.refuse(s.Line(), "a call in parentheses is not a statement in Lua 5.1")
			return
		}
		a.expr(s.Expr)
	case *ast.DoBlockStmt:
		a.scoped(s.Stmts)
	case *ast.WhileStmt:
		a.refuse(s.Line(), "a while loop is not served: %s", loopRule)
	case *ast.RepeatStmt:
		a.refuse(s.Line(), "a repeat loop is not served: %s", loopRule)
	case *ast.IfStmt:
		a.expr(s.Condition)
		a.scoped(s.Then)
		a.scoped(s.Else)
	case *ast.NumberForStmt:
		a.expr(s.Init)
		a.expr(s.Limit)
		if s.Step != nil {
			a.expr(s.Step)
		}
		runs, ok := a.numericRuns(s)
		if !ok {
			return
		}
		a.push()
		a.declare(s.Name, false)
		a.loop(s.Line(), runs, func() { a.block(s.Stmts) })
		a.pop()
	case *ast.GenericForStmt:
		runs, ok := a.iterationRuns(s)
		if !ok {
			return
		}
		a.exprs(s.Exprs)
		overKeys := len(s.Exprs) == 1 && a.iteratesKeys(s.Exprs[0])
		a.push()
		for i, n := range s.Names {
			a.declare(n, overKeys && i == 1)
		}
		a.loop(s.Line(), runs, func() { a.block(s.Stmts) })
		a.pop()
	case *ast.FuncDefStmt:
		// function name() ... end assigns a global or a table field.
		if id, ok := s.Name.Func.(*ast.IdentExpr); ok && s.Name.Receiver == nil {
			v := a.local(id.Value)
			if v == nil {
				a.refuse(s.Line(), "the script defines a global function %q", id.Value)
				return
			}
			if v.fn != nil {
				a.refuse(s.Line(), "the script redefines its function %q (%s)", id.Value, callRule)
				return
			}
		} else {
			a.refuse(s.Line(), "the script defines a function on a table")
			return
		}
		a.function(s.Func)
	case *ast.ReturnStmt:
		a.exprs(s.Exprs)
	case *ast.BreakStmt:
		if a.fn().loops == 0 {
			a.refuse(s.Line(), "break outside a loop (Lua 5.1 does not compile it)")
		}
	case *ast.LabelStmt, *ast.GotoStmt:
		a.refuse(s.Line(), "goto and labels are not Lua 5.1")
	default:
		a.refuse(s.Line(), "unsupported statement %T", s)
	}
}

// target checks the left side of an assignment.
func (a *admitter) target(e ast.Expr) {
	switch e := e.(type) {
	case *ast.IdentExpr:
		v := a.local(e.Value)
		switch {
		case v == nil:
			a.refuse(e.Line(), "the script assigns the global %q", e.Value)
		case v.keyVar:
			a.refuse(e.Line(), "the script reassigns %q, which holds a key", e.Value)
		case v.fn != nil:
			a.refuse(e.Line(), "the script reassigns its function %q (%s)", e.Value, callRule)
		}
	case *ast.AttrGetExpr:
		if id, ok := e.Object.(*ast.IdentExpr); ok {
			if local, _ := a.lookup(id.Value); !local {
				a.refuse(e.Line(), "the script changes the global table %q", id.Value)
				return
			}
		}
		a.expr(e.Object)
		a.expr(e.Key)
	default:
		a.refuse(e.Line(), "unsupported assignment target")
	}
}

// function walks a function's body and returns what a call of it may
// cost (loops.go).
func (a *admitter) function(f *ast.FunctionExpr) int {
	a.fns = append(a.fns, fnState{vararg: f.ParList.HasVargs, runs: 1, work: 1})
	a.push()
	for _, n := range f.ParList.Names {
		a.declare(n, false)
	}
	a.block(f.Stmts)
	a.pop()
	work := a.fn().work
	a.fns = a.fns[:len(a.fns)-1]
	return work
}

func (a *admitter) exprs(es []ast.Expr) {
	for _, e := range es {
		a.expr(e)
	}
}

func (a *admitter) expr(e ast.Expr) {
	if a.err != nil || e == nil || !a.spend(e.Line(), 1) {
		return
	}
	switch e := e.(type) {
	case *ast.TrueExpr, *ast.FalseExpr, *ast.NilExpr:
	case *ast.Comma3Expr:
		if !a.fn().vararg {
			a.refuse(e.Line(), "... outside a vararg function (Lua 5.1 does not compile it)")
		}
	case *ast.NumberExpr:
		f, err := luaNumber(e.Value)
		if err != nil {
			a.refuse(e.Line(), "%v", err)
			return
		}
		// As Redis passes a number to a command: %.14g.
		a.literal(strconv.FormatFloat(f, 'g', 14, 64))
	case *ast.StringExpr:
		a.literal(e.Value)
	case *ast.IdentExpr:
		if local, _ := a.lookup(e.Value); local {
			return
		}
		switch {
		case e.Value == "redis":
			a.refuse(e.Line(), "redis is used other than as redis.call or redis.pcall")
		case e.Value == "KEYS" || e.Value == "ARGV":
			a.refuse(e.Line(), "%s is used other than read (%s[i], #%s, ipairs, pairs, unpack): a loop over it must end", e.Value, e.Value, e.Value)
		case !globals[e.Value]:
			a.refuse(e.Line(), "the global %q is not available to lock scripts", e.Value)
		}
	case *ast.AttrGetExpr:
		if id, ok := e.Object.(*ast.IdentExpr); ok && id.Value == "redis" && a.isGlobal("redis") {
			k, ok := e.Key.(*ast.StringExpr)
			switch {
			case !ok:
				a.refuse(e.Line(), "redis[%s] is not available to lock scripts", exprText(e.Key))
			case !redisFields[k.Value]:
				a.refuse(e.Line(), "redis.%s is not available to lock scripts", k.Value)
			case k.Value == "call" || k.Value == "pcall":
				a.refuse(e.Line(), "redis.%s is used as a value, not called", k.Value)
			}
			return
		}
		if !a.isReadOnlyArgs(e.Object) {
			a.expr(e.Object)
		}
		a.expr(e.Key)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			a.expr(f.Key)
			a.expr(f.Value)
		}
	case *ast.FuncCallExpr:
		a.call(e)
	case *ast.LogicalOpExpr:
		a.expr(e.Lhs)
		a.expr(e.Rhs)
	case *ast.RelationalOpExpr:
		a.operand(e.Lhs)
		a.operand(e.Rhs)
	case *ast.StringConcatOpExpr:
		a.operand(e.Lhs)
		a.operand(e.Rhs)
	case *ast.ArithmeticOpExpr:
		a.operand(e.Lhs)
		a.operand(e.Rhs)
	case *ast.UnaryMinusOpExpr:
		a.operand(e.Expr)
	case *ast.UnaryNotOpExpr:
		a.operand(e.Expr)
	case *ast.UnaryLenOpExpr:
		if !a.isReadOnlyArgs(e.Expr) {
			a.expr(e.Expr)
		}
	case *ast.FunctionExpr:
		a.function(e) // a value: calling it is checked where it is called
	default:
		a.refuse(e.Line(), "unsupported expression %T", e)
	}
}

// operand walks the operand of an operator whose result is never the
// operand itself: KEYS or ARGV may be one.
func (a *admitter) operand(e ast.Expr) {
	if !a.isReadOnlyArgs(e) {
		a.expr(e)
	}
}

func (a *admitter) isGlobal(name string) bool {
	local, _ := a.lookup(name)
	return !local
}

func (a *admitter) keysIsGlobal() bool { return a.isGlobal("KEYS") }

// call checks a function call; redis.call and redis.pcall get the
// command and key checks.
func (a *admitter) call(e *ast.FuncCallExpr) {
	if e.Receiver != nil {
		if id, ok := e.Receiver.(*ast.IdentExpr); ok && id.Value == "redis" && a.isGlobal("redis") {
			a.refuse(e.Line(), "redis:%s is not available to lock scripts", e.Method)
			return
		}
		a.method(e)
		return
	}
	f, ok := e.Func.(*ast.AttrGetExpr)
	if !ok {
		a.plainCall(e)
		return
	}
	id, ok := f.Object.(*ast.IdentExpr)
	k, kok := f.Key.(*ast.StringExpr)
	if !ok || id.Value != "redis" || !a.isGlobal("redis") || !kok || (k.Value != "call" && k.Value != "pcall") {
		a.plainCall(e)
		return
	}
	a.exprs(e.Args)
	if a.err != nil {
		return
	}
	if len(e.Args) == 0 {
		a.refuse(e.Line(), "redis.%s without a command", k.Value)
		return
	}
	name, static := e.Args[0].(*ast.StringExpr)
	switch {
	case static:
	case isArgvIndex(e.Args[0]) && a.isGlobal("ARGV"):
		return // the name comes from ARGV: the wrapper checks it when it runs
	default:
		a.refuse(e.Line(), "the command name of redis.%s is computed at run time", k.Value)
		return
	}
	cmd := ascii.Lower(name.Value)
	allowed, ok := lua.Lookup(cmd)
	if !ok {
		a.refuse(e.Line(), "%s is not a lock command", ascii.Upper(cmd))
		return
	}
	args := e.Args[1:]
	switch allowed.Keys {
	case lua.FirstKey:
		if len(args) > 0 {
			a.key(args[0])
		}
	case lua.AllKeys:
		for _, arg := range args {
			a.key(arg)
		}
	}
	if cmd == "select" {
		if len(args) != 1 {
			a.refuse(e.Line(), "SELECT takes one database")
			return
		}
		switch db := args[0].(type) {
		case *ast.StringExpr:
			if db.Value != "0" {
				a.refuse(e.Line(), "SELECT of database %s: only 0 is served", db.Value)
			}
		case *ast.NumberExpr:
			if db.Value != "0" {
				a.refuse(e.Line(), "SELECT of database %s: only 0 is served", db.Value)
			}
		default:
			// ARGV[i] or tonumber(ARGV[i]) (node-redlock v5's forks): the
			// wrapper lets only database 0 through.
			if !isArgvIndex(db) && !isToNumberOfArgv(db) {
				a.refuse(e.Line(), "SELECT of a database computed at run time")
			}
		}
	}
}

// key checks one key argument: KEYS[i], unpack(KEYS), or a local bound
// to a KEYS element.
func (a *admitter) key(e ast.Expr) {
	switch {
	case isKeysIndex(e) && a.keysIsGlobal():
		return
	case a.isUnpackKeys(e):
		return
	}
	if id, ok := e.(*ast.IdentExpr); ok {
		if _, keyVar := a.lookup(id.Value); keyVar {
			return
		}
	}
	a.refuse(e.Line(), "a key argument (%s) is not KEYS[i]", exprText(e))
}

func (a *admitter) isUnpackKeys(e ast.Expr) bool {
	c, ok := e.(*ast.FuncCallExpr)
	if !ok || c.Receiver != nil || len(c.Args) != 1 {
		return false
	}
	f, ok := c.Func.(*ast.IdentExpr)
	arg, aok := c.Args[0].(*ast.IdentExpr)
	return ok && aok && f.Value == "unpack" && a.isGlobal("unpack") && arg.Value == "KEYS" && a.keysIsGlobal()
}

// iteratesKeys reports whether e is ipairs(KEYS) or pairs(KEYS).
func (a *admitter) iteratesKeys(e ast.Expr) bool {
	c, ok := e.(*ast.FuncCallExpr)
	if !ok || c.Receiver != nil || len(c.Args) != 1 {
		return false
	}
	f, ok := c.Func.(*ast.IdentExpr)
	arg, aok := c.Args[0].(*ast.IdentExpr)
	return ok && aok && (f.Value == "ipairs" || f.Value == "pairs") && a.isGlobal(f.Value) &&
		arg.Value == "KEYS" && a.keysIsGlobal()
}

func isToNumberOfArgv(e ast.Expr) bool {
	c, ok := e.(*ast.FuncCallExpr)
	if !ok || c.Receiver != nil || len(c.Args) != 1 {
		return false
	}
	f, ok := c.Func.(*ast.IdentExpr)
	return ok && f.Value == "tonumber" && isArgvIndex(c.Args[0])
}

func isKeysIndex(e ast.Expr) bool { return isIndexOf(e, "KEYS") }
func isArgvIndex(e ast.Expr) bool { return isIndexOf(e, "ARGV") }

// isIndexOf reports whether e is table[i] for a number or a name i.
func isIndexOf(e ast.Expr, table string) bool {
	g, ok := e.(*ast.AttrGetExpr)
	if !ok {
		return false
	}
	id, ok := g.Object.(*ast.IdentExpr)
	if !ok || id.Value != table {
		return false
	}
	switch g.Key.(type) {
	case *ast.NumberExpr, *ast.IdentExpr, *ast.ArithmeticOpExpr:
		return true
	}
	return false
}

// exprText is a short description of e for a refusal.
func exprText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StringExpr:
		return strconv.Quote(e.Value)
	case *ast.NumberExpr:
		return e.Value
	case *ast.IdentExpr:
		return e.Value
	case *ast.AttrGetExpr:
		return exprText(e.Object) + "[" + exprText(e.Key) + "]"
	case *ast.StringConcatOpExpr:
		return exprText(e.Lhs) + " .. " + exprText(e.Rhs)
	case *ast.FuncCallExpr:
		return "a function call"
	}
	return "an expression"
}
