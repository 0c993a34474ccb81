package script

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// The Lua front end: every body the proxy reads, for the catalogue's
// shapes or for admission, is parsed here by gopher-lua, with the checks
// where Lua 5.1 would read the same bytes otherwise.

// MaxBody and MaxTokens bound the scripts the front end parses: lock scripts
// take a few KiB and a few hundred tokens, and gopher-lua's parser
// allocates about 500 bytes a token.
const (
	MaxBody   = 64 << 10
	MaxTokens = 8192
)

// parseBody parses body with gopher-lua, for admission and the
// catalogue's shapes alike, and refuses what Lua 5.1 does not compile or
// reads otherwise than gopher-lua (scan), and bodies past the bounds.
func parseBody(body []byte) ([]ast.Stmt, tokens, *Refusal) {
	if bytes.IndexByte(body, 0) >= 0 {
		return nil, tokens{}, &Refusal{Reason: "the script contains a NUL byte"}
	}
	// Before gopher-lua's parser, whose cost grows with nesting: one
	// linear pass, so that any body costs about its size.
	line, n := syntaxLevels(body)
	switch {
	case line > 0:
		return nil, tokens{}, &Refusal{Line: line, Reason: tooManyLevels, Compile: true}
	case len(body) > MaxBody:
		return nil, tokens{}, &Refusal{Reason: fmt.Sprintf("the script is over %d KiB (lock scripts take a few)", MaxBody>>10)}
	case n > MaxTokens:
		return nil, tokens{}, &Refusal{Reason: fmt.Sprintf("the script has over %d tokens (lock scripts take a few hundred)", MaxTokens)}
	}
	chunk, err := parse.Parse(bytes.NewReader(body), "script")
	if err != nil {
		return nil, tokens{}, &Refusal{Reason: "the script does not parse: " + oneLine(err.Error())}
	}
	toks, refusal := scan(body)
	if refusal != nil {
		return nil, tokens{}, refusal
	}
	return chunk, toks, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

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
	// escape over 255, or 0 (escapeTooLarge).
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

// gopher-lua reads a decimal escape over 255 ("\300") as its value mod
// 256, where Lua 5.1 refuses the script ("escape sequence too large");
// the tree keeps only the value, so the escape is looked for in the
// quoted string's own bytes.

// lineStarts is the offset in body of each line's first byte, lines
// counted as gopher-lua's scanner counts them ("\r\n" and "\n\r" are one
// line end).
func lineStarts(body []byte) []int {
	starts := []int{0}
	for i := 0; i < len(body); i++ {
		if c := body[i]; c == '\n' || c == '\r' {
			if i+1 < len(body) && (body[i+1] == '\n' || body[i+1] == '\r') && body[i+1] != c {
				i++
			}
			starts = append(starts, i+1)
		}
	}
	return starts
}

// tokenBytes is the text of the token from start to end (the positions of
// its first and last byte, as gopher-lua's scanner gives them), or nil.
func tokenBytes(body []byte, starts []int, start, end ast.Position) []byte {
	offset := func(p ast.Position) int {
		if p.Line < 1 || p.Line > len(starts) || p.Column < 1 {
			return -1
		}
		return starts[p.Line-1] + p.Column - 1
	}
	from, to := offset(start), offset(end)
	if from < 0 || to < from || to >= len(body) {
		return nil
	}
	return body[from : to+1]
}

// escapeTooLarge reports whether the quoted string s has a decimal escape
// over 255.
func escapeTooLarge(s []byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++
		n, j := 0, i
		for ; j < len(s) && j < i+3 && isDigitByte(s[j]); j++ {
			n = n*10 + int(s[j]-'0')
		}
		if n > 255 {
			return true
		}
		if j > i {
			i = j - 1
		}
	}
	return false
}
