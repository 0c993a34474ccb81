package redisnode

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// TestDecodeShort reads the wrapper's one-string reply: a tag, the keys'
// numbers and the value; anything else is a malformed reply.
func TestDecodeShort(t *testing.T) {
	o := owns{args: []string{"tok", "10500"}, keys: []string{"k"}}
	tests := []struct {
		in       string
		reply    quorum.Value
		keys     []quorum.KeyEffect
		bad      bool
		luaError bool // the tag "E": a Lua error the body raised
	}{
		// changed, before none, after 1 (tok), hold 10500 ms.
		{in: "s1.0.1.10500:OK", reply: quorum.Value{Kind: quorum.ValueStatus, Str: "OK"},
			keys: []quorum.KeyEffect{{AfterOwn: []string{"tok"}, Changed: true, Hold: 10500 * time.Millisecond}}},
		{in: "b0.0.0.0,0.3.3.0:a:b", reply: quorum.Value{Kind: quorum.ValueBulk, Str: "a:b"},
			keys: []quorum.KeyEffect{{}, {BeforeOwn: []string{"k"}, AfterOwn: []string{"k"}}}},
		{in: "n:", reply: quorum.Value{Kind: quorum.ValueNil}},
		{in: "i:-12", reply: quorum.Value{Kind: quorum.ValueInt, Int: -12}},
		{in: "e:ERR x", reply: quorum.Value{Kind: quorum.ValueError, Str: "ERR x"}},
		{in: "E:ERR user_script:1: x", reply: quorum.Value{Kind: quorum.ValueError, Str: "ERR user_script:1: x"}, luaError: true},
		{in: "s5", bad: true},
		{in: ":OK", bad: true},
		{in: "x:OK", bad: true},
		{in: "s1.0.1.5,:OK", bad: true},
		{in: "s1.0.1:OK", bad: true},
		{in: "s1.0.1.5.5:OK", bad: true},
		{in: "s1..1.5:OK", bad: true},
		{in: "s2.0.1.5:OK", bad: true},
		{in: "s-1.0.1.5:OK", bad: true},
		{in: "s1.5.1.5:OK", bad: true}, // before place 5: no such own token
		{in: "s1.0.4.5:OK", bad: true}, // past ARGV and KEYS: a constant is never own
		{in: "s1.0.1.1234567890123456789:OK", bad: true},
		{in: "i:1x", bad: true},
	}
	for _, tt := range tests {
		// Into a new slice, and into node 1's room in a call's (room for
		// one key: the two-key row goes past it) beside a neighbour's.
		call := quorum.EffectCall{Keys: []string{"k"}, Out: make([]quorum.KeyEffect, 3)}
		neighbour := quorum.KeyEffect{Hold: 7}
		call.Out[2] = neighbour
		for _, out := range [][]quorum.KeyEffect{nil, call.OutFor(1)} {
			ne, err := decodeEffect(tt.in, o, out)
			if call.Out[2].Hold != neighbour.Hold {
				t.Fatalf("decodeEffect(%q) wrote over the next node's room", tt.in)
			}
			if tt.bad {
				if err == nil {
					t.Errorf("decodeEffect(%q) = %+v; want an error", tt.in, ne)
				}
				continue
			}
			if err != nil || !reflect.DeepEqual(ne.Reply, tt.reply) || len(ne.Keys) != len(tt.keys) || ne.LuaError != tt.luaError {
				t.Errorf("decodeEffect(%q) = %+v, %v; want %+v, %+v", tt.in, ne, err, tt.reply, tt.keys)
				continue
			}
			for i, k := range ne.Keys {
				w := tt.keys[i]
				if k.Changed != w.Changed || k.Hold != w.Hold || !slices.Equal(k.BeforeOwn, w.BeforeOwn) || !slices.Equal(k.AfterOwn, w.AfterOwn) {
					t.Errorf("decodeEffect(%q) key %d = %+v; want %+v", tt.in, i, k, w)
				}
			}
		}
	}
}

// errorLine moves only the line a Lua error's text starts with: what
// follows is the client's own (attack14 R6).
func TestErrorLine(t *testing.T) {
	tests := []struct {
		msg  string
		head int
		want string
	}{
		{"ERR user_script:12: attempt to call a nil value", 10, "ERR user_script:2: attempt to call a nil value"},
		{"ERR user_script:12: at user_script:40", 10, "ERR user_script:2: at user_script:40"},
		{"ERR user_script:12: x", 0, "ERR user_script:12: x"},
		{"ERR user_script:3: x", 10, "ERR user_script:3: x"}, // the wrapper's own line: kept
		{"ERR bad argument #1 to 'rep'", 10, "ERR bad argument #1 to 'rep'"},
	}
	for _, tt := range tests {
		if got := errorLine(tt.msg, tt.head); got != tt.want {
			t.Errorf("errorLine(%q, %d) = %q; want %q", tt.msg, tt.head, got, tt.want)
		}
	}
}
