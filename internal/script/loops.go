package script

import (
	"math"
	"slices"
	"strconv"

	"github.com/yuin/gopher-lua/ast"
)

// A script the masters run must end, and soon: a loop that does not
// stops every master at once (BUSY on all of them), and one that has
// written cannot be killed (UNKILLABLE). So admission takes only loops
// whose runs it can bound before the script runs, and no recursion:
//
//   - for v = a, b[, step]: a, b are numbers, #KEYS, #ARGV, or sums and
//     differences of those; step is a number other than 0;
//   - for ... in ipairs(t) or pairs(t): t is KEYS, ARGV (which the script
//     may only read, so a loop over them cannot grow them), a table
//     constructor, or the reply of a redis.call or redis.pcall;
//   - no while and no repeat;
//   - a function the script defines is called by its name (or given to
//     pcall) and never reassigned, and cannot call itself: the calls form
//     no cycle; a function value reached any other way is not called.
//
// Each statement and expression may then run a bounded number of times:
// the product of its loops' runs and of the calls around it, where a loop
// over KEYS, ARGV or a command's reply counts maxListRuns times. The sum
// over the script, its steps, may not pass maxWork.
const (
	maxListRuns = 1024    // the default max_args
	maxWork     = 1 << 20 // steps of one run, at most
)

// loopRule and callRule are said in refusals.
const (
	loopRule = "only for loops over KEYS, ARGV, a table or a command's reply, or with bounds of numbers and #KEYS or #ARGV, are (a loop that may not end stops every master)"
	callRule = "a function the script defines is called by its name and never changed, so that it cannot call itself"
)

// fnInfo is what admission knows of a function the script defines.
type fnInfo struct {
	work       int  // the steps one call may take
	inProgress bool // its body is being walked: a call now would recurse
}

// loop walks a loop's body, which runs at most runs times a pass.
func (a *admitter) loop(line, runs int, body func()) {
	saved := a.fn().runs
	if !a.spend(line, runs) {
		return
	}
	a.fn().runs = satMul(saved, max(runs, 1))
	a.fn().loops++
	body() // a.fns may grow: no pointer into it across this
	a.fn().loops--
	a.fn().runs = saved
}

// spend counts work steps taken once per pass of the current statement,
// and refuses the script past maxWork.
func (a *admitter) spend(line, work int) bool {
	f := a.fn()
	f.work = min(satMul(f.runs, max(work, 1))+f.work, math.MaxInt/2)
	if f.work > maxWork {
		a.refuse(line, "the script may take %s steps or more; at most %d are served (loops in loops, or functions with loops called in loops)", costText(f.work), maxWork)
		return false
	}
	return true
}

func costText(n int) string {
	if n >= math.MaxInt/2 {
		return "without bound"
	}
	return strconv.Itoa(n)
}

func satMul(a, b int) int {
	if a != 0 && b > math.MaxInt/a {
		return math.MaxInt
	}
	return a * b
}

// numericRuns bounds a numeric for's runs from its bounds.
func (a *admitter) numericRuns(s *ast.NumberForStmt) (int, bool) {
	from, okA := a.interval(s.Init)
	to, okB := a.interval(s.Limit)
	step := interval{1, 1}
	okC := true
	if s.Step != nil {
		step, okC = a.interval(s.Step)
	}
	if !okA || !okB || !okC || step.lo != step.hi || step.lo == 0 {
		a.refuse(s.Line(), "a for loop whose bounds are not numbers, #KEYS or #ARGV is not served: %s", loopRule)
		return 0, false
	}
	span := to.hi - from.lo
	if step.lo < 0 {
		span = from.hi - to.lo
	}
	runs := math.Floor(span/math.Abs(step.lo)) + 1
	if runs < 1 {
		return 0, true
	}
	if runs > maxWork {
		a.refuse(s.Line(), "a for loop of up to %.14g runs is not served: at most %d are", runs, maxWork)
		return 0, false
	}
	return int(runs), true
}

// interval is the range of values a numeric for's bound can take.
type interval struct{ lo, hi float64 }

// interval bounds e: a number, #KEYS, #ARGV, and sums, differences and
// negations of those.
func (a *admitter) interval(e ast.Expr) (interval, bool) {
	switch e := e.(type) {
	case *ast.NumberExpr:
		f, err := luaNumber(e.Value)
		return interval{f, f}, err == nil && !math.IsInf(f, 0) && !math.IsNaN(f)
	case *ast.UnaryLenOpExpr:
		return interval{0, maxListRuns}, a.isReadOnlyArgs(e.Expr)
	case *ast.UnaryMinusOpExpr:
		x, ok := a.interval(e.Expr)
		return interval{-x.hi, -x.lo}, ok
	case *ast.ArithmeticOpExpr:
		x, okX := a.interval(e.Lhs)
		y, okY := a.interval(e.Rhs)
		switch e.Operator {
		case "+":
			return interval{x.lo + y.lo, x.hi + y.hi}, okX && okY
		case "-":
			return interval{x.lo - y.hi, x.hi - y.lo}, okX && okY
		}
	}
	return interval{}, false
}

// iterationRuns bounds a generic for's runs from what it iterates.
func (a *admitter) iterationRuns(s *ast.GenericForStmt) (int, bool) {
	if len(s.Exprs) == 1 {
		if c, ok := s.Exprs[0].(*ast.FuncCallExpr); ok && c.Receiver == nil && len(c.Args) == 1 {
			if f, ok := c.Func.(*ast.IdentExpr); ok && (f.Value == "ipairs" || f.Value == "pairs") && a.isGlobal(f.Value) {
				switch t := c.Args[0].(type) {
				case *ast.TableExpr:
					return len(t.Fields), true
				case *ast.FuncCallExpr:
					if a.isRedisCall(t) {
						return maxListRuns, true
					}
				default:
					if a.isReadOnlyArgs(t) {
						return maxListRuns, true
					}
				}
			}
		}
	}
	a.refuse(s.Line(), "a for loop over this iterator is not served: %s", loopRule)
	return 0, false
}

// isReadOnlyArgs reports whether e is the global KEYS or ARGV, which a
// script may only read.
func (a *admitter) isReadOnlyArgs(e ast.Expr) bool {
	id, ok := e.(*ast.IdentExpr)
	return ok && (id.Value == "KEYS" || id.Value == "ARGV") && a.isGlobal(id.Value)
}

func (a *admitter) isRedisCall(c *ast.FuncCallExpr) bool {
	f, ok := c.Func.(*ast.AttrGetExpr)
	if !ok || c.Receiver != nil {
		return false
	}
	id, ok := f.Object.(*ast.IdentExpr)
	k, kok := f.Key.(*ast.StringExpr)
	return ok && kok && id.Value == "redis" && a.isGlobal("redis") && (k.Value == "call" || k.Value == "pcall")
}

// readers are the global functions that may take KEYS or ARGV itself:
// they read it and change nothing.
var readers = map[string]bool{"ipairs": true, "pairs": true, "unpack": true, "select": true,
	"next": true, "type": true, "tostring": true, "table.concat": true, "table.getn": true}

// callers are the global functions that call a function they are given,
// by the argument's place (1-based), and how often they may call it.
var callers = map[string]struct {
	args []int
	runs int
}{
	"pcall":          {[]int{1}, 1},
	"xpcall":         {[]int{1, 2}, 1},
	"table.sort":     {[]int{2}, maxListRuns},
	"table.foreach":  {[]int{2}, maxListRuns},
	"table.foreachi": {[]int{2}, maxListRuns},
	"string.gsub":    {[]int{3}, maxListRuns},
}

// globalPath is the dotted name of e ("tonumber", "string.sub") when it
// is a global or a field of one, or "".
func (a *admitter) globalPath(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.IdentExpr:
		if a.isGlobal(e.Value) {
			return e.Value
		}
	case *ast.AttrGetExpr:
		k, ok := e.Key.(*ast.StringExpr)
		if p := a.globalPath(e.Object); ok && p != "" {
			return p + "." + k.Value
		}
	}
	return ""
}

// plainCall checks a call that is not redis.call, redis.pcall or a
// method call.
func (a *admitter) plainCall(e *ast.FuncCallExpr) {
	line := e.Line()
	path := ""
	switch f := e.Func.(type) {
	case *ast.IdentExpr:
		if v := a.local(f.Value); v != nil {
			switch {
			case v.fn == nil:
				a.refuse(line, "the script calls %q, a value it computes (%s)", f.Value, callRule)
			case v.fn.inProgress:
				a.refuse(line, "the function %q calls itself (%s)", f.Value, callRule)
			default:
				a.spend(line, v.fn.work)
			}
		} else {
			a.expr(f)
			path = f.Value
		}
	case *ast.FunctionExpr:
		a.spend(line, a.function(f))
	default:
		a.expr(f)
		if path = a.globalPath(f); path == "" {
			a.refuse(line, "the script calls a function value it computes (%s)", callRule)
			return
		}
	}
	if a.err != nil {
		return
	}
	c, calls := callers[path]
	for i, arg := range e.Args {
		switch {
		case readers[path] && a.isReadOnlyArgs(arg):
		case calls && slices.Contains(c.args, i+1):
			a.given(arg, c.runs, path)
		default:
			a.expr(arg)
		}
	}
}

// given checks a function passed to a global that calls it up to runs
// times: a function literal, a function the script defines, a global
// function, or for string.gsub a replacement string or table.
func (a *admitter) given(arg ast.Expr, runs int, to string) {
	line := arg.Line()
	switch f := arg.(type) {
	case *ast.FunctionExpr:
		a.spend(line, satMul(a.function(f), runs))
		return
	case *ast.IdentExpr:
		if v := a.local(f.Value); v != nil {
			switch {
			case v.fn == nil:
				a.refuse(line, "the script gives %s %q, a value it computes (%s)", to, f.Value, callRule)
			case v.fn.inProgress:
				a.refuse(line, "the function %q calls itself (%s)", f.Value, callRule)
			default:
				a.spend(line, satMul(v.fn.work, runs))
			}
			return
		}
	case *ast.StringExpr, *ast.NumberExpr, *ast.TableExpr:
		if to == "string.gsub" || to == ":gsub" {
			a.expr(f)
			return
		}
	}
	if a.globalPath(arg) != "" {
		a.expr(arg)
		return
	}
	a.refuse(line, "the script gives %s a function value it computes (%s)", to, callRule)
}

// method checks a method call: only on a string (the string library's
// functions), never on a table, whose fields may be the script's
// functions.
func (a *admitter) method(e *ast.FuncCallExpr) {
	if !a.isString(e.Receiver) {
		a.refuse(e.Line(), "a method call on a value that may not be a string (%s)", callRule)
		return
	}
	a.expr(e.Receiver)
	for i, arg := range e.Args {
		if e.Method == "gsub" && i == 1 {
			a.given(arg, maxListRuns, ":gsub")
			continue
		}
		a.expr(arg)
	}
}

// isString reports whether e is surely a string: a literal, a
// concatenation, or tostring's or a string function's result.
func (a *admitter) isString(e ast.Expr) bool {
	switch e := e.(type) {
	case *ast.StringExpr, *ast.StringConcatOpExpr:
		return true
	case *ast.FuncCallExpr:
		if e.Receiver != nil {
			return false
		}
		p := a.globalPath(e.Func)
		return p == "tostring" || p == "string.format" || p == "string.sub" || p == "string.upper" ||
			p == "string.lower" || p == "string.rep" || p == "string.reverse" || p == "string.char"
	}
	return false
}
