package redisnode

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/wire"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// fcallCommand encodes the call of s's function with c's keys, args, tag
// and deadline field, and the SHA-1 of the body's chunk, as evalKeyed
// sends it: one buffer that every node's pipeline writes as it is, with
// no command object. tail is how many bytes follow the deadline field
// (Command.Tail).
func fcallCommand(s *script, c quorum.EffectCall) (b []byte, tail int) {
	keys, args := c.Keys, c.Args
	sha, _ := s.chunkArg.(string)
	size := 80 + untilWidth + len(s.fn) + len(sha) + len(c.Tag)
	for _, k := range keys {
		size += 16 + len(k)
	}
	for _, a := range args {
		size += 16 + len(a)
	}
	n := 5 + len(keys) + len(args)
	if sha != "" {
		n++
	}
	b = wire.AppendArray(make([]byte, 0, size), n)
	b = wire.AppendBulk(b, "fcall")
	b = wire.AppendBulk(b, s.fn)
	b = wire.AppendBulkInt(b, int64(len(keys)))
	for _, k := range keys {
		b = wire.AppendBulk(b, k)
	}
	for _, a := range args {
		b = wire.AppendBulk(b, a)
	}
	b = wire.AppendBulk(b, c.Tag)
	b = wire.AppendBulk(b, noUntil)
	putUntil(b, c.Until)
	end := len(b)
	if sha != "" {
		b = wire.AppendBulk(b, sha)
	}
	return b, len(b) - end
}

func (n *redisNode) RunEffect(ctx context.Context, eff *quorum.Effect, c quorum.EffectCall, out []quorum.KeyEffect) (quorum.NodeEffect, error) {
	w := eff.Wrapped().(*wrappedBody)
	v, asScript, err := n.runWrapped(ctx, w.s, c)
	head := 0
	if asScript {
		head = w.head
	}
	return effectOf(v, err, head, c, out)
}

// wrappedBody is an Effect's wrapped form (Wrap): the wrapper's script,
// and its lines before the body's first in the script form (the
// library's chunk starts on the body's first line).
type wrappedBody struct {
	s    *script
	head int
}

func (n *redisNode) Wrap(body string, literals []string, maxTTL time.Duration) any {
	w := wrapBody(body, literals, maxTTL)
	return &wrappedBody{s: newScript(w.eval).withLibrary(w.fn, w.lib), head: w.evalHead}
}

func (n *redisNode) Functions() bool { return !n.p.noFunctions.Load() }

func (n *redisNode) FCall(w any, call quorum.EffectCall) (quorum.Call[any], bool) {
	s := w.(*wrappedBody).s
	if s.fn == "" || s.noLib.Load() {
		return quorum.Call[any]{}, false
	}
	b, tail := fcallCommand(s, call)
	c := plainCall(b, fcallAnswer)
	c.Command.Dated, c.Command.Tail = true, tail
	return c, true
}

// fcallAnswer is a batch's FCALL reply as runEffectOnNodes reads it: an
// error that asks for the library is no failure of the node.
func fcallAnswer(v any, err error) (any, error) {
	if fcallNeedsLibrary(err) {
		return quorum.NeedsLibrary{}, nil
	}
	return v, err
}

func (n *redisNode) EffectOf(w any, v any, err error, call quorum.EffectCall, out []quorum.KeyEffect) (quorum.NodeEffect, error) {
	if err != nil {
		if msg, ok := compileError(err); ok {
			return quorum.NodeEffect{Refused: "it does not compile as Redis's Lua: " + bodyLines(msg, w.(*wrappedBody).head)}, nil
		}
		return quorum.NodeEffect{}, err
	}
	return effectOf(v, nil, 0, call, out)
}

// effectOf is a node's answer to a wrapped script from its reply; head
// is the lines of the form that ran before the body's first (bodyLines).
func effectOf(v any, err error, head int, c quorum.EffectCall, out []quorum.KeyEffect) (quorum.NodeEffect, error) {
	keys, args := c.Keys, c.Args
	if msg, ok := compileError(err); ok {
		// The script is bad input, not a node failing: refused, as one
		// Redis refuses to compile it.
		return quorum.NodeEffect{Refused: "it does not compile as Redis's Lua: " + bodyLines(msg, head)}, nil
	}
	if err != nil {
		return quorum.NodeEffect{}, err
	}
	ne, err := decodeEffect(v, owns{args, keys}, out)
	if ne.LuaError {
		ne.Reply.Str = errorLine(ne.Reply.Str, head)
	}
	return ne, err
}

// runWrapped runs the wrapper s on the node and returns its reply: by
// the call's FCALL as encoded once (c.fcall, or here), and, where the
// node lacks the library or the body's chunk or runs no functions, as
// evalKeyed runs it (pipescript.go: loading, retrying, the script form).
// asScript is true when the script form answered.
func (n *redisNode) runWrapped(ctx context.Context, s *script, c quorum.EffectCall) (v any, asScript bool, err error) {
	p := n.p
	if s.fn == "" || s.noLib.Load() || p.noFunctions.Load() {
		cmd, err := p.evalKeyed(ctx, s, len(c.Keys), c.KeysArgs())
		return cmd.Val(), cmd.Args()[0] != fcallArg, err
	}
	b := c.FCall // its deadline field 0: no limit
	if b == nil || c.Until != 0 {
		b, _ = fcallCommand(s, c)
	}
	v, err = p.reply(ctx, b)
	if err == nil || ctx.Err() != nil {
		return v, false, err
	}
	args := append([]any{fcallArg, s.fnArg, len(c.Keys)}, c.KeysArgs()...)
	if s.chunk != "" {
		args = append(args, s.chunkArg)
	}
	cmd := redis.NewCmd(ctx, args...)
	cmd.SetErr(err)
	if !needsLibrary(cmd) {
		return v, false, err
	}
	cmd = p.retry(ctx, cmd, s)
	return cmd.Val(), cmd.Args()[0] != fcallArg, cmd.Err()
}

// bodyLines moves the line numbers in Redis's error compiling a wrapped
// script back by head, the lines before the body's first in the form that
// ran (the script's; none in the library's chunk, which Redis's Lua names
// as a script's, user_script), so that they name the client's lines as
// one Redis would.
func bodyLines(msg string, head int) string {
	if head == 0 {
		return msg
	}
	const tag = "user_script:"
	var b strings.Builder
	for {
		i := strings.Index(msg, tag)
		if i < 0 {
			break
		}
		j := i + len(tag)
		k := j
		for k < len(msg) && msg[k] >= '0' && msg[k] <= '9' {
			k++
		}
		b.WriteString(msg[:j])
		if n, err := strconv.Atoi(msg[j:k]); err == nil && n > head {
			b.WriteString(strconv.Itoa(n - head))
		} else {
			b.WriteString(msg[j:k])
		}
		msg = msg[k:]
	}
	b.WriteString(msg)
	return compileLines(b.String(), head)
}

// errorLine moves the line a Lua error's text starts with ("ERR
// user_script:N: ...", as the wrapper answers one the body raised) back by
// head, as bodyLines does; the rest of the text is the client's own.
func errorLine(msg string, head int) string {
	const tag = "ERR user_script:"
	if head == 0 || !strings.HasPrefix(msg, tag) {
		return msg
	}
	k := len(tag)
	for k < len(msg) && msg[k] >= '0' && msg[k] <= '9' {
		k++
	}
	if n, err := strconv.Atoi(msg[len(tag):k]); err == nil && n > head {
		return tag + strconv.Itoa(n-head) + msg[k:]
	}
	return msg
}

// compileLines names, in a compile error about a wrapped script, the
// function the wrapper runs the body in as Redis names a script's chunk
// ("main function"), and a function inside the body by the body's line.
func compileLines(msg string, head int) string {
	const tag = "function at line "
	i := strings.Index(msg, tag)
	if i < 0 {
		return msg
	}
	j := i + len(tag)
	k := j
	for k < len(msg) && msg[k] >= '0' && msg[k] <= '9' {
		k++
	}
	n, err := strconv.Atoi(msg[j:k])
	switch {
	case err != nil || n < head:
		return msg
	case n == head:
		return msg[:i] + "main function" + msg[k:]
	}
	return msg[:j] + strconv.Itoa(n-head) + msg[k:]
}

func (n *redisNode) UndoEffect(ctx context.Context, key string, u quorum.KeyUndo, until int64) error {
	args := make([]any, 0, 2+len(u.Tokens)+2*len(u.Markers))
	args = append(args, len(u.Tokens))
	for _, t := range u.Tokens {
		args = append(args, t)
	}
	for _, m := range u.Markers {
		args = append(args, m.Entry, m.Value)
	}
	args = append(args, untilArg(until))
	_, err := n.p.evalBody(ctx, undoEffectScript, []string{key}, args...)
	return err
}

var errEffectReply = errors.New("malformed wrapper reply")

// owns are a call's own tokens, in the order the wrapper numbers them
// from 1: its ARGV, then its KEYS.
type owns struct{ args, keys []string }

// at returns the own token at place i as a one-item slice of the call's
// own (shared, not copied), nil for 0, or false for no such place.
func (o owns) at(i int64) ([]string, bool) {
	if i <= 0 {
		return nil, i == 0
	}
	for _, l := range [2][]string{o.args, o.keys} {
		if i <= int64(len(l)) {
			return l[i-1 : i : i], true
		}
		i -= int64(len(l))
	}
	return nil, false
}

// decodeEffect reads the wrapper's reply (effectlua.go); own holders are
// places among o. The key effects are appended to out (nil: a new slice).
func decodeEffect(v any, o owns, out []quorum.KeyEffect) (quorum.NodeEffect, error) {
	if s, ok := v.(string); ok {
		return decodeShort(s, o, out)
	}
	top, ok := v.([]any)
	if !ok || len(top) < 2 {
		return quorum.NodeEffect{}, fmt.Errorf("%w: %T", errEffectReply, v)
	}
	if top[0] == "refused" {
		why, _ := top[1].(string)
		return quorum.NodeEffect{Refused: why}, nil
	}
	tag, luaError := top[0], top[0] == "E"
	if luaError {
		tag = "e"
	}
	reply, err := decodeValue(tag, top[1], 0)
	if err != nil {
		return quorum.NodeEffect{}, err
	}
	ne := quorum.NodeEffect{Reply: reply, LuaError: luaError}
	// holders reads n, then n places, from the front of f.
	holders := func(f []any) ([]string, []any, bool) {
		if len(f) < 1 {
			return nil, nil, false
		}
		n, _ := f[0].(int64)
		if n < 0 || int64(len(f)-1) < n {
			return nil, nil, false
		}
		var out []string
		if n > 0 {
			out = make([]string, n)
		}
		for i := range out {
			p, _ := f[1+i].(int64)
			t, ok := o.at(p)
			if !ok || len(t) == 0 {
				return nil, nil, false
			}
			out[i] = t[0]
		}
		return out, f[1+n:], true
	}
	f := top[2:]
	ne.Keys = out
	for len(f) > 0 {
		var k quorum.KeyEffect
		code, isInt := f[0].(int64)
		var ok bool
		switch {
		case !isInt:
			return quorum.NodeEffect{}, errEffectReply
		case code >= 0:
			if k, ok = keyCode(code, o); !ok {
				return quorum.NodeEffect{}, errEffectReply
			}
			f = f[1:]
		case len(f) < 3:
			return quorum.NodeEffect{}, errEffectReply
		default:
			// Field by field: -1 - changed, hold, others, then the holders.
			k.Changed = code != -1
			k.Hold = millis(f[1])
			others, _ := f[2].(int64)
			k.Others = int(others)
			if k.BeforeOwn, f, ok = holders(f[3:]); !ok {
				return quorum.NodeEffect{}, errEffectReply
			}
			if k.AfterOwn, f, ok = holders(f); !ok {
				return quorum.NodeEffect{}, errEffectReply
			}
			if k.Markers, f, ok = markers(f); !ok {
				return quorum.NodeEffect{}, errEffectReply
			}
		}
		ne.Keys = append(ne.Keys, k)
	}
	return ne, nil
}

// markers reads p, then p markers (each its entry and value), from the
// front of f.
func markers(f []any) ([]quorum.Marker, []any, bool) {
	if len(f) < 1 {
		return nil, nil, false
	}
	p, _ := f[0].(int64)
	if p < 0 || int64(len(f)-1) < 2*p {
		return nil, nil, false
	}
	var out []quorum.Marker
	for i := range p {
		e, ok1 := f[1+2*i].(string)
		v, ok2 := f[2+2*i].(string)
		if !ok1 || !ok2 {
			return nil, nil, false
		}
		out = append(out, quorum.Marker{Entry: e, Value: v})
	}
	return out, f[1+2*p:], true
}

// decodeShort reads the wrapper's reply in its one-string form: a tag,
// the keys' numbers joined by ",", ":" and the value.
func decodeShort(s string, o owns, out []quorum.KeyEffect) (quorum.NodeEffect, error) {
	codes, val, ok := strings.Cut(s, ":")
	if !ok || codes == "" {
		return quorum.NodeEffect{}, errEffectReply
	}
	tag := codes[:1]
	var reply quorum.Value
	switch tag {
	case "s":
		reply = quorum.Value{Kind: quorum.ValueStatus, Str: val}
	case "b":
		reply = quorum.Value{Kind: quorum.ValueBulk, Str: val}
	case "e", "E":
		reply = quorum.Value{Kind: quorum.ValueError, Str: val}
	case "n":
		reply = quorum.Value{Kind: quorum.ValueNil}
	case "i":
		n, err := strconv.ParseInt(val, 10, 64)
		if err != nil {
			return quorum.NodeEffect{}, errEffectReply
		}
		reply = quorum.Value{Kind: quorum.ValueInt, Int: n}
	default:
		return quorum.NodeEffect{}, errEffectReply
	}
	ne := quorum.NodeEffect{Reply: reply, LuaError: tag == "E"}
	codes = codes[1:]
	if codes == "" {
		return ne, nil
	}
	// The numbers by hand: strconv and strings.SplitSeq cost the node's
	// goroutine a stack growth on every reply. Each key is four numbers,
	// changed.before.after.hold.
	ne.Keys = out
	var f [4]int64
	field, digits := 0, 0
	for i := 0; i <= len(codes); i++ {
		if i < len(codes) && codes[i] >= '0' && codes[i] <= '9' {
			if digits >= 18 {
				return quorum.NodeEffect{}, errEffectReply
			}
			f[field] = f[field]*10 + int64(codes[i]-'0')
			digits++
			continue
		}
		if digits == 0 {
			return quorum.NodeEffect{}, errEffectReply
		}
		digits = 0
		if i < len(codes) && codes[i] == '.' && field < 3 {
			field++
			continue
		}
		if field != 3 || i < len(codes) && codes[i] != ',' || f[0] > 1 {
			return quorum.NodeEffect{}, errEffectReply
		}
		k := quorum.KeyEffect{Changed: f[0] == 1, Hold: time.Duration(f[3]) * time.Millisecond}
		var okB, okA bool
		k.BeforeOwn, okB = o.at(f[1])
		k.AfterOwn, okA = o.at(f[2])
		if !okB || !okA {
			return quorum.NodeEffect{}, errEffectReply
		}
		ne.Keys = append(ne.Keys, k)
		f, field = [4]int64{}, 0
	}
	return ne, nil
}

// keyCode reads a key the fast path proved, in the array form one number:
// ((hold*1024 + after)*1024 + before)*2 + changed, before and after the
// own holder's place among o (0: none).
func keyCode(code int64, o owns) (quorum.KeyEffect, bool) {
	k := quorum.KeyEffect{Changed: code&1 != 0, Hold: time.Duration(code>>21) * time.Millisecond}
	var okB, okA bool
	k.BeforeOwn, okB = o.at(code >> 1 & 1023)
	k.AfterOwn, okA = o.at(code >> 11 & 1023)
	return k, okB && okA
}

// decodeValue reads a reply the wrapper encoded as a tag and a value.
func decodeValue(tag, v any, depth int) (quorum.Value, error) {
	if depth > maxReplyDepth {
		return quorum.Value{}, errEffectReply
	}
	switch tag {
	case "n":
		return quorum.Value{Kind: quorum.ValueNil}, nil
	case "a", "m", "t":
		items, ok := v.([]any)
		if !ok {
			return quorum.Value{}, errEffectReply
		}
		kind := quorum.ValueArray
		if tag == "m" {
			kind = quorum.ValueMap
		} else if tag == "t" {
			kind = quorum.ValueSet
		}
		out := quorum.Value{Kind: kind, Items: make([]quorum.Value, 0, len(items))}
		for _, it := range items {
			f, ok := it.([]any)
			if !ok || len(f) != 2 {
				return quorum.Value{}, errEffectReply
			}
			iv, err := decodeValue(f[0], f[1], depth+1)
			if err != nil {
				return quorum.Value{}, err
			}
			out.Items = append(out.Items, iv)
		}
		return out, nil
	case "i":
		n, ok := v.(int64)
		if !ok {
			return quorum.Value{}, errEffectReply
		}
		return quorum.Value{Kind: quorum.ValueInt, Int: n}, nil
	}
	s, ok := v.(string)
	if !ok {
		return quorum.Value{}, errEffectReply
	}
	switch tag {
	case "s":
		return quorum.Value{Kind: quorum.ValueStatus, Str: s}, nil
	case "b":
		return quorum.Value{Kind: quorum.ValueBulk, Str: s}, nil
	case "e":
		return quorum.Value{Kind: quorum.ValueError, Str: s}, nil
	case "d":
		return quorum.Value{Kind: quorum.ValueDouble, Str: s}, nil
	case "B":
		return quorum.Value{Kind: quorum.ValueBigNumber, Str: s}, nil
	case "v":
		if len(s) < 4 || s[3] != ':' {
			return quorum.Value{}, errEffectReply
		}
		return quorum.Value{Kind: quorum.ValueVerbatim, Str: s}, nil
	}
	return quorum.Value{}, errEffectReply
}

func millis(v any) time.Duration {
	n, _ := v.(int64)
	return time.Duration(n) * time.Millisecond
}

// compileError returns the text of a node's refusal to compile a wrapped
// script (a limit of Lua 5.1 that admission does not check, such as more
// than 200 locals), without its "ERR ".
func compileError(err error) (string, bool) {
	if err == nil {
		return "", false // before re, which errors.As puts on the heap
	}
	var re redis.Error
	if !errors.As(err, &re) || !strings.HasPrefix(re.Error(), "ERR Error compiling script") {
		return "", false
	}
	return strings.TrimPrefix(re.Error(), "ERR "), true
}
