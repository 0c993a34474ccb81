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
