package script

import (
	"bytes"
	"reflect"
	"slices"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// reprint prints the admitted chunk (print.go), with toks from its text,
// and checks that gopher-lua reads the printed text back as the same
// tree, line numbers aside: a printer bug refuses a script rather than
// run something admission did not check.
func reprint(chunk []ast.Stmt, toks tokens) (string, *Refusal) {
	src, err := printChunk(chunk, toks)
	if err != nil {
		return "", &Refusal{Reason: "the script cannot be served: " + err.Error()}
	}
	again, err := parse.Parse(bytes.NewReader([]byte(src)), "script")
	toksAgain, lerr := scanTokens([]byte(src))
	if err != nil || lerr != nil || !sameTree(reflect.ValueOf(chunk), reflect.ValueOf(again)) || !slices.Equal(toks.localFuncs, toksAgain.localFuncs) {
		return "", &Refusal{Reason: "the script cannot be served: it does not print back as it parsed"}
	}
	return src, nil
}

// scan reads what the printer needs from body's tokens, and refuses a
// call's "(" on a line of its own, which Lua 5.1 does not compile.
func scan(body []byte) (tokens, *Refusal) {
	toks, err := scanTokens(body)
	if err != nil {
		return tokens{}, &Refusal{Reason: "the script does not parse: " + oneLine(err.Error())}
	}
	if toks.bigEscape > 0 {
		return tokens{}, &Refusal{Line: toks.bigEscape, Reason: "escape sequence too large: Lua 5.1 takes \\0 to \\255"}
	}
	if toks.numberJoined > 0 {
		return tokens{}, &Refusal{Line: toks.numberJoined, Reason: "a malformed number: Lua 5.1 reads a numeral and a name, numeral or \".\" right after it as one"}
	}
	if toks.ambiguous > 0 {
		return tokens{}, &Refusal{Line: toks.ambiguous, Reason: "ambiguous syntax (function call x new statement): Lua 5.1 refuses a call's \"(\" on a line of its own; end the statement before with \";\""}
	}
	return toks, nil
}

// tokens is what the printer needs from the text that the tree does not
// keep.
type tokens struct {
	// localFuncs says, for each "local" in order, whether "function"
	// follows it: gopher-lua's tree is the same for "local f = function",
	// which Lua 5.1 scopes apart.
	localFuncs []bool
	// strEnd is the last line of each string that spans lines, by its
	// first line and value: Lua 5.1 gives an operation on it the line
	// where it ends, the tree the line where it starts.
	strEnd map[lineString]int
	// ambiguous is the line of the first "(" that opens a call's
	// arguments on a line after the callee's, or 0: Lua 5.1 refuses it
	// ("ambiguous syntax (function call x new statement)") where
	// gopher-lua mostly reads a call.
	ambiguous int
	// numberJoined is the line of the first numeral with a name, a
	// numeral or a "." right after it, or 0: Lua 5.1 reads them as one
	// malformed numeral ("5type"), gopher-lua as two tokens.
	numberJoined int
	// bigEscape is the line of the first quoted string with a decimal
	// escape over 255, or 0 (escape.go).
	bigEscape int
}

type lineString struct {
	line  int
	value string
}

// scanTokens scans body's tokens with gopher-lua's scanner.
func scanTokens(body []byte) (tokens, error) {
	sc := parse.NewScanner(bytes.NewReader(body), "script")
	lx := &parse.Lexer{}
	var out tokens
	starts := lineStarts(body)
	prevLocal := false
	// What the "(" check must tell apart from a callee's end: a name of
	// "local a, b" (no "=" after it), the name of "function a.b" and the
	// ")" of a parameter list.
	prevType, prevEnd, prevEndCol := 0, 0, 0
	localNames, funcHead, inParams, prevParamsEnd := false, false, false, false
	for {
		tok, err := sc.Scan(lx)
		if err != nil {
			return tokens{}, err
		}
		if tok.Type == parse.EOF {
			return out, nil
		}
		if tok.Type == parse.TString && sc.Pos.Line > tok.Pos.Line {
			if out.strEnd == nil {
				out.strEnd = map[lineString]int{}
			}
			k := lineString{tok.Pos.Line, tok.Str}
			out.strEnd[k] = max(out.strEnd[k], sc.Pos.Line)
		}
		if tok.Type == parse.TString && out.bigEscape == 0 {
			if raw := tokenBytes(body, starts, tok.Pos, sc.Pos); len(raw) > 0 && (raw[0] == '"' || raw[0] == '\'') && escapeTooLarge(raw) {
				out.bigEscape = tok.Pos.Line
			}
		}
		if prevLocal {
			out.localFuncs = append(out.localFuncs, tok.Type == parse.TFunction)
		}
		if c := tok.Str; prevType == parse.TNumber && tok.Pos.Line == prevEnd && tok.Pos.Column == prevEndCol+1 &&
			c != "" && (isWordByte(c[0]) || c[0] == '.') && out.numberJoined == 0 {
			out.numberJoined = tok.Pos.Line
		}
		paramsEnd := false
		switch tok.Type {
		case '(':
			callee := prevType == parse.TIdent && !localNames || prevType == ')' && !prevParamsEnd || prevType == ']'
			if !funcHead && callee && tok.Pos.Line > prevEnd && out.ambiguous == 0 {
				out.ambiguous = tok.Pos.Line
			}
			inParams, funcHead = funcHead, false
		case ')':
			paramsEnd, inParams = inParams, false
		case parse.TFunction:
			funcHead = true
		}
		switch {
		case tok.Type == parse.TIdent && (prevType == parse.TLocal || prevType == ',' && localNames):
			localNames = true
		case tok.Type == ',' && localNames && prevType == parse.TIdent:
		default:
			localNames = false
		}
		prevType, prevEnd, prevEndCol, prevParamsEnd = tok.Type, sc.Pos.Line, sc.Pos.Column, paramsEnd
		prevLocal = tok.Type == parse.TLocal
		lx.PrevTokenType = tok.Type
	}
}

var (
	nodeType   = reflect.TypeFor[ast.Node]()
	numberType = reflect.TypeFor[ast.NumberExpr]()
)

// sameTree reports whether a and b are the same syntax tree, ignoring the
// line numbers every node carries and how a number is written.
func sameTree(a, b reflect.Value) bool {
	if a.Kind() != b.Kind() || a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return sameTree(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !sameTree(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		switch a.Type() {
		case nodeType:
			return true
		case numberType:
			x, errA := luaNumber(a.FieldByName("Value").String())
			y, errB := luaNumber(b.FieldByName("Value").String())
			return errA == nil && errB == nil && x == y
		}
		for i := range a.NumField() {
			if !sameTree(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	case reflect.String:
		return a.String() == b.String()
	case reflect.Bool:
		return a.Bool() == b.Bool()
	case reflect.Int:
		return a.Int() == b.Int()
	}
	return false
}
