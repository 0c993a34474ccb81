package resp

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func args(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Fields(s) {
		out = append(out, []byte(f))
	}
	return out
}

func TestParseSet(t *testing.T) {
	tests := []struct {
		name string
		cmd  string
		want SetArgs
		err  error
	}{
		{"redis-py order", "SET k t PX 5000 NX", SetArgs{Key: "k", Token: "t", Unit: px, expiry: 5000}, nil},
		{"redis-cli order", "SET k t NX PX 5000", SetArgs{Key: "k", Token: "t", Unit: px, expiry: 5000}, nil},
		{"go-redis lower case seconds", "set k t ex 8 nx", SetArgs{Key: "k", Token: "t", Unit: ex, expiry: 8}, nil},
		{"mixed case", "sEt k t Nx pX 10", SetArgs{Key: "k", Token: "t", Unit: px, expiry: 10}, nil},
		{"exat", "SET k t NX EXAT 2000000000", SetArgs{Key: "k", Token: "t", Unit: exat, expiry: 2000000000}, nil},
		{"pxat", "SET k t PXAT 2000000000000 NX", SetArgs{Key: "k", Token: "t", Unit: pxat, expiry: 2000000000000}, nil},
		{"no expiry", "SET k t NX", SetArgs{Key: "k", Token: "t", Unit: NoExpiry, expiry: 0}, nil},
		{"nx twice is fine", "SET k t NX NX PX 5", SetArgs{Key: "k", Token: "t", Unit: px, expiry: 5}, nil},
		{"without nx", "SET k t PX 5000", SetArgs{}, ErrSetNotLock},
		{"plain set", "SET k t", SetArgs{}, ErrSetNotLock},
		{"xx", "SET k t XX PX 5000", SetArgs{}, ErrSetOption},
		{"get", "SET k t NX GET PX 5000", SetArgs{}, ErrSetOption},
		{"keepttl", "SET k t NX KEEPTTL", SetArgs{}, ErrSetOption},
		{"two expiries", "SET k t NX PX 5 EX 5", SetArgs{}, ErrSyntax},
		{"expiry without value", "SET k t NX PX", SetArgs{}, ErrSyntax},
		{"unknown option", "SET k t NX FOO", SetArgs{}, ErrSyntax},
		{"zero", "SET k t NX PX 0", SetArgs{}, ErrExpireTime},
		{"negative", "SET k t NX EX -1", SetArgs{}, ErrExpireTime},
		{"not a number", "SET k t NX PX abc", SetArgs{}, ErrNotInteger},
		{"float", "SET k t NX PX 1.5", SetArgs{}, ErrNotInteger},
		{"overflow", "SET k t NX PX 99999999999999999999", SetArgs{}, ErrNotInteger},
		{"too few", "SET k", SetArgs{}, ErrSyntax},
		// Redis 7's rules, checked against redis-server 7.0.
		{"plus sign", "SET k t NX PX +1000", SetArgs{}, ErrNotInteger},
		{"leading zero", "SET k t NX PX 01000", SetArgs{}, ErrNotInteger},
		{"minus zero", "SET k t NX PX -0", SetArgs{}, ErrNotInteger},
		{"repeated expiry takes the last", "SET k t NX PX 1000 PX 20000", SetArgs{Key: "k", Token: "t", Unit: px, expiry: 20000}, nil},
		{"a replaced bad value is never read", "SET k t NX PX abc PX 20", SetArgs{Key: "k", Token: "t", Unit: px, expiry: 20}, nil},
		{"syntax before value", "SET k t NX PX abc EX 5", SetArgs{}, ErrSyntax},
		{"nx and xx", "SET k t NX XX PX 5", SetArgs{}, ErrSyntax},
		{"keepttl after px", "SET k t NX PX 5 KEEPTTL", SetArgs{}, ErrSyntax},
		{"bad value before refusing xx", "SET k t XX PX abc", SetArgs{}, ErrNotInteger},
		{"ex that overflows in ms", "SET k t NX EX 9223372036854776", SetArgs{}, ErrExpireTime},
		// Redis 8.4's conditions (redis/redis tests/unit/type/string.tcl:1280-1595)
		// and Valkey's IFEQ (valkey tests/unit/type/string.tcl "SET with IFEQ
		// conditional - with xx", "- with nx": a syntax error).
		{"ifeq", "SET k t IFEQ t PX 5000", SetArgs{Key: "k", Token: "t", Unit: px, expiry: 5000, Cond: IFEQ, Match: "t"}, nil},
		{"go-redis order", "set k t px 5000 ifeq t", SetArgs{Key: "k", Token: "t", Unit: px, expiry: 5000, Cond: IFEQ, Match: "t"}, nil},
		{"case insensitive", "SET k t IfEq o", SetArgs{Key: "k", Token: "t", Cond: IFEQ, Match: "o"}, nil},
		// Options fold A-Z only, as Redis's strcasecmp: a dotless i or a
		// Kelvin sign is no option's letter.
		{"dotless i", "SET k t ıFEQ o", SetArgs{}, ErrSyntax},
		{"kelvin sign", "SET k t NX KEEPTTL", SetArgs{}, ErrSyntax},
		{"ifeq with get", "SET k t IFEQ t GET EX 5", SetArgs{Key: "k", Token: "t", Unit: ex, expiry: 5, Cond: IFEQ, Match: "t", Get: true}, nil},
		{"ifne", "SET k t IFNE o", SetArgs{Key: "k", Token: "t", Cond: IFNE, Match: "o"}, nil},
		{"ifdeq", "SET k t IFDEQ 0123456789abcdef", SetArgs{Key: "k", Token: "t", Cond: IFDEQ, Match: "0123456789abcdef"}, nil},
		{"ifdne", "SET k t IFDNE 0123456789abcdef", SetArgs{Key: "k", Token: "t", Cond: IFDNE, Match: "0123456789abcdef"}, nil},
		{"a digest's length is checked later", "SET k t IFDEQ 12", SetArgs{Key: "k", Token: "t", Cond: IFDEQ, Match: "12"}, nil},
		{"same condition twice", "SET k t IFEQ a IFEQ b", SetArgs{Key: "k", Token: "t", Cond: IFEQ, Match: "b"}, nil},
		{"two conditions", "SET k t IFEQ a IFNE b", SetArgs{}, ErrSyntax},
		{"condition and nx", "SET k t NX IFEQ a", SetArgs{}, ErrSyntax},
		{"nx after condition", "SET k t IFEQ a NX", SetArgs{}, ErrSyntax},
		{"condition and xx", "SET k t IFEQ a XX", SetArgs{}, ErrSyntax},
		{"condition without value", "SET k t PX 5 IFEQ", SetArgs{}, ErrSyntax},
		{"syntax before expiry value", "SET k t PX abc IFEQ", SetArgs{}, ErrSyntax},
		{"expiry value before the lock check", "SET k t IFEQ t PX abc", SetArgs{}, ErrNotInteger},
		{"condition and keepttl", "SET k t IFEQ t KEEPTTL", SetArgs{}, ErrSetOption},
		{"ex just inside", "SET k t NX EX 9223372036854775", SetArgs{Key: "k", Token: "t", Unit: ex, expiry: 9223372036854775}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSet(args(tt.cmd))
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("ParseSet(%q) = %+v, %v; want %+v, %v", tt.cmd, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestSetArgsTTL(t *testing.T) {
	const now = 1_700_000_000_000 // Unix ms
	tests := []struct {
		name string
		a    SetArgs
		want time.Duration
		err  error
	}{
		{"px", SetArgs{Unit: px, expiry: 1500}, 1500 * time.Millisecond, nil},
		{"ex", SetArgs{Unit: ex, expiry: 8}, 8 * time.Second, nil},
		{"none", SetArgs{Unit: NoExpiry}, 0, nil},
		{"pxat ahead", SetArgs{Unit: pxat, expiry: now + 2500}, 2500 * time.Millisecond, nil},
		{"exat ahead", SetArgs{Unit: exat, expiry: now/1000 + 3}, 3 * time.Second, nil},
		{"pxat past", SetArgs{Unit: pxat, expiry: now - 1}, 0, ErrExpireTime},
		{"pxat now", SetArgs{Unit: pxat, expiry: now}, 0, ErrExpireTime},
		{"ex overflows ms", SetArgs{Unit: ex, expiry: 1 << 62}, 0, ErrExpireTime},
		{"px overflows duration", SetArgs{Unit: px, expiry: 1 << 62}, 0, ErrExpireTime},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.a.TTL(now)
			if got != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("%+v.TTL(now) = %v, %v; want %v, %v", tt.a, got, err, tt.want, tt.err)
			}
		})
	}
}

func FuzzParseSet(f *testing.F) {
	f.Add("SET k t PX 5000 NX")
	f.Add("set k t ex 8 nx")
	f.Add("SET k t NX PXAT 99999999999999")
	f.Add("SET k t IFEQ t PX 5000 GET")
	f.Add("set k t ifdeq 0123456789abcdef ex 5")
	f.Add("SET k t IFNE a IFEQ b")
	f.Fuzz(func(t *testing.T, cmd string) {
		a, err := ParseSet(args(cmd))
		if err != nil {
			return
		}
		// GET comes only with a compare-and-set, and Match only with its
		// condition.
		if a.Cond == NoCondition && (a.Get || a.Match != "") {
			t.Fatalf("ParseSet(%q) = %+v; GET or a match value without a condition", cmd, a)
		}
		if a.Unit != NoExpiry && a.expiry <= 0 {
			t.Fatalf("ParseSet(%q) = %+v; accepted a non-positive expiry", cmd, a)
		}
		if ttl, err := a.TTL(0); err == nil && ttl < 0 {
			t.Fatalf("%+v.TTL(0) = %v; negative", a, ttl)
		}
	})
}
