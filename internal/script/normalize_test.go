package script

import "testing"

var normalizeTests = []struct {
	name, body, want string
}{
	{"empty", "", ""},
	{"white space only", " \t\r\n\v\f", ""},
	{"distlock", "if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n    return redis.call(\"del\",KEYS[1])\nelse\n    return 0\nend",
		`if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`},
	{"line comments", "-- release\nreturn 1 -- done", `return 1`},
	{"block comments", "--[[ a\nb ]]return --[==[ ]] ]=] ]==] 1", `return 1`},
	{"comment with a lone bracket", "--[ not a block\nreturn 1", `return 1`},
	{"single quotes", `return 'a"b'`, `return "a\"b"`},
	{"escapes", `return 'tab\tnl\nq\'bs\\d\65\066\0067'`, `return "tab\tnl\nq'bs\\dAB\0067"`},
	{"escaped line break", "return 'a\\\r\nb'", `return "a\nb"`},
	{"control and high bytes", "return '\x01\xff'", `return "\001\255"`},
	{"pcall and command case", `return redis.pcall('DEL', KEYS[1])`, `return redis.call("del",KEYS[1])`},
	{"only the command is lower-cased", `redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`,
		`redis.call("set",KEYS[1],ARGV[1],"NX","PX",ARGV[2])`},
	{"command from ARGV untouched", `redis.call(ARGV[1], KEYS[1])`, `redis.call(ARGV[1],KEYS[1])`},
	{"other redis untouched", `x.redis.pcall("GET")`, `x.redis.pcall("GET")`},
	{"semicolons dropped", `local v = 1; v = 2; return v;`, `local v=1 v=2 return v`},
	{"semicolon before ( kept", `f(); (g)()`, `f();(g)()`},
	{"semicolon before a string kept", `f; "x"`, `f;"x"`},
	{"semicolon before an operator word kept", `x = a; or b`, `x=a; or b`},
	{"if condition parentheses", `if (a == b) then return 1 elseif ((c)) then return 2 end`,
		`if a==b then return 1 elseif c then return 2 end`},
	{"parentheses not around the whole condition", `if (a) == (b) then return 1 end`, `if (a)==(b) then return 1 end`},
	{"call of a parenthesised function kept", `if (f)(x) then return 1 end`, `if (f)(x) then return 1 end`},
	{"spaces kept where needed", `return a .. 1 .. .5 .. b - -c`, `return a.. 1 .. .5 ..b- -c`},
	{"number then dots", `return 1 ..x`, `return 1 ..x`},
	{"comparisons", `return a < = b`, `return a< =b`},
	{"statements set apart", `f() g() x = y z = 1`, `f() g() x=y z=1`},
	{"keywords set apart", `return not(x)and#KEYS`, `return not (x) and #KEYS`},
	{"nil, true and false are values", `return x==nil or x==true or x==false`, `return x==nil or x==true or x==false`},
	{"hex and exponents", `return 0xFF + 1e3 + 1.5E-2`, `return 0xFF+1e3+1.5E-2`},
	{"long string", `return [[x]]`, ""},
	{"long string with level", `return [==[x]==]`, ""},
	{"nested long comment", "--[[ a [[ b ]]\nreturn 1", ""},
	{"unterminated block comment", "--[[ a", ""},
	{"unterminated string", `return "a`, ""},
	{"line break in string", "return 'a\nb'", ""},
	{"hex escape", `return "\x41"`, ""},
	{"decimal escape too large", `return "\256"`, ""},
	{"malformed number", `return 1..2`, ""},
	{"lone tilde", `return ~1`, ""},
	{"shebang", "#!lua\nreturn 1", ""},
	{"non-ASCII name", "return é", ""},
}

func TestNormalize(t *testing.T) {
	for _, tt := range normalizeTests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Normalize([]byte(tt.body)); got != tt.want {
				t.Errorf("Normalize(%q) = %q; want %q", tt.body, got, tt.want)
			}
		})
	}
}

// TestNormalizeCatalogue checks CLIENTS.md section 10.5: once
// normalized, the 16 client scripts come down to 12 texts, because
// redlock v4 and v5 differ only in layout, and redislock's refresh is
// redsync's touch.
func TestNormalizeCatalogue(t *testing.T) {
	texts := map[string][]string{}
	for _, k := range knownScripts {
		if k.script.Name == "distlock release" {
			continue
		}
		n := Normalize([]byte(k.src))
		texts[n] = append(texts[n], k.script.Name)
	}
	if len(texts) != 12 {
		t.Errorf("len(distinct Normalize(catalogue)) = %d; want 12: %q", len(texts), texts)
	}
	for _, pair := range [][2]string{
		{"redlock v4 lock", "redlock v5 acquire"},
		{"redlock v4 extend", "redlock v5 extend"},
		{"redlock v4 unlock", "redlock v5 release"},
		{"redislock refresh", "redsync touch"},
	} {
		a, b := normalizedByName(t, pair[0]), normalizedByName(t, pair[1])
		if a != b {
			t.Errorf("Normalize(%s) = %q; want Normalize(%s) = %q", pair[0], a, pair[1], b)
		}
	}
}

func normalizedByName(t *testing.T, name string) string {
	t.Helper()
	for _, k := range knownScripts {
		if k.script.Name == name {
			return Normalize([]byte(k.src))
		}
	}
	t.Fatalf("no known script %q", name)
	return ""
}

func FuzzNormalize(f *testing.F) {
	for _, tt := range normalizeTests {
		f.Add([]byte(tt.body))
	}
	for _, k := range allKnownScripts() {
		f.Add([]byte(k.src))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		once := Normalize(body)
		if twice := Normalize([]byte(once)); twice != once {
			t.Fatalf("Normalize(Normalize(%q)) = %q; want %q", body, twice, once)
		}
	})
}
