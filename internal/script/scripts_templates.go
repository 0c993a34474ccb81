package script

import "fmt"

// Templates are lock scripts written in canonical Lua with holes:
//
//	$tok, $ttl, $pfx, $mode   an ARGV index: TokenArg, TTLArg, PrefixArg, ModeArg
//	$fail, $missing           a returned literal (an integer, or nil, false or
//	                          nothing): Fail or FailNil, Missing
//	any other $name           the name of a local variable
//
// A hole matches the same thing everywhere it appears. Everything else
// must match exactly, after both sides went through canonicalize.

// getKey is the read of the lock every single-key guard compares.
const getKey = `redis.call("get",KEYS[1])`

// setNX is an acquire of the single key.
const setNX = `redis.call("set",KEYS[1],ARGV[$tok],"nx","px",ARGV[$ttl])`

// guards are the ways a script checks that KEYS[1] holds ARGV[$tok]
// before it acts; %s is the action, which ends in a return.
var guards = []string{
	`if ` + getKey + `==ARGV[$tok] then %s end return $fail`,
	`local $v=` + getKey + ` if $v==ARGV[$tok] then %s end return $fail`,
	`if ` + getKey + `~=ARGV[$tok] then return $fail end %s`,
	`local $v=` + getKey + ` if $v~=ARGV[$tok] then return $fail end %s`,
	`local $v=` + getKey + ` if not $v or $v~=ARGV[$tok] then return $fail end %s`,
	`local $v=` + getKey + ` if $v==false or $v~=ARGV[$tok] then return $fail end %s`,
}

// threeWayGuards also tell a missing key ($missing) from another
// token's ($fail), as redsync's delete does.
var threeWayGuards = []string{
	`local $v=` + getKey + ` if $v==ARGV[$tok] then %s end if $v==false then return $missing end return $fail`,
	`local $v=` + getKey + ` if $v==ARGV[$tok] then %s end if not $v then return $missing end return $fail`,
	`local $v=` + getKey + ` if $v==false then return $missing end if $v==ARGV[$tok] then %s end return $fail`,
	`local $v=` + getKey + ` if not $v then return $missing end if $v==ARGV[$tok] then %s end return $fail`,
	`local $v=` + getKey + ` if $v==false then return $missing end if $v~=ARGV[$tok] then return $fail end %s`,
	`local $v=` + getKey + ` if not $v then return $missing end if $v~=ARGV[$tok] then return $fail end %s`,
}

// orSetNXGuards extend the key if it holds the token, and otherwise try
// to set it (redsync's touch with SetNX).
var orSetNXGuards = []string{
	`if ` + getKey + `==ARGV[$tok] then %s end if ` + setNX + ` then return 1 end return $fail`,
	`local $v=` + getKey + ` if $v==ARGV[$tok] then %s end if ` + setNX + ` then return 1 end return $fail`,
}

// guardedAction is what a script does once the guard passed.
type guardedAction struct {
	src      string
	script   Script
	threeWay bool // may sit in threeWayGuards
	orSetNX  bool // may sit in orSetNXGuards
}

var guardedActions = []guardedAction{
	{`return redis.call("del",KEYS[1])`, Script{Op: OpRelease, Success: SuccessOne}, true, false},
	{`redis.call("del",KEYS[1]) return 1`, Script{Op: OpRelease, Success: SuccessOne}, true, false},
	{`return redis.call("pexpire",KEYS[1],ARGV[$ttl])`, Script{Op: OpExtend, Success: SuccessOne}, false, true},
	{`redis.call("pexpire",KEYS[1],ARGV[$ttl]) return 1`, Script{Op: OpExtend, Success: SuccessOne}, false, true},
	{`return redis.call("set",KEYS[1],ARGV[$tok],"px",ARGV[$ttl])`, Script{Op: OpExtend, Success: SuccessOK}, false, false},
	{`redis.call("set",KEYS[1],ARGV[$tok],"px",ARGV[$ttl]) return 1`, Script{Op: OpExtend, Success: SuccessOne}, false, true},
	{`return redis.call("pttl",KEYS[1])`, Script{Op: OpPTTL, Success: SuccessPTTL}, false, false},
	// redis-py's extend: ARGV[$mode] == "0" adds to the remaining TTL.
	{pyExtend(`if not $e then $e=0 end `), Script{Op: OpExtend, Success: SuccessOne}, false, false},
	{pyExtend(``), Script{Op: OpExtend, Success: SuccessOne}, false, false},
}

func pyExtend(orZero string) string {
	return `local $e=redis.call("pttl",KEYS[1]) ` + orZero + `if $e<0 then return $fail end ` +
		`local $n=ARGV[$ttl] if ARGV[$mode]=="0" then $n=ARGV[$ttl]+$e end ` +
		`redis.call("pexpire",KEYS[1],$n) return 1`
}

// scriptShape is a whole template.
type scriptShape struct {
	src    string
	script Script
}

// scriptShapes are the templates that are not a guard around an action.
var scriptShapes = []scriptShape{
	{`if ` + setNX + ` then return 1 end return $fail`, Script{Op: OpAcquire, Success: SuccessOne}},
	{`if not ` + setNX + ` then return $fail end return 1`, Script{Op: OpAcquire, Success: SuccessOne}},
	{`local $v=` + setNX + ` if $v then return 1 end return $fail`, Script{Op: OpAcquire, Success: SuccessOne}},
	{`if ` + setNX + ` then return redis.status_reply("OK") end return $fail`, Script{Op: OpAcquire, Success: SuccessOK}},
	{`return ` + setNX, Script{Op: OpAcquire, Success: SuccessOK, FailNil: true}},
	{`if redis.call("setnx",KEYS[1],ARGV[$tok])==1 then redis.call("pexpire",KEYS[1],ARGV[$ttl]) return 1 end return $fail`,
		Script{Op: OpAcquire, Success: SuccessOne}},
	// bsm/redislock's obtain: re-acquire when the first ARGV[$pfx] bytes
	// of the stored value are the token's.
	{`if ` + setNX + ` then return redis.status_reply("OK") end ` +
		`local $o=tonumber(ARGV[$pfx]) ` +
		`if redis.call("getrange",KEYS[1],0,$o-1)==string.sub(ARGV[$tok],1,$o) then ` +
		`return redis.call("set",KEYS[1],ARGV[$tok],"px",ARGV[$ttl]) end return $fail`,
		Script{Op: OpAcquire, Success: SuccessOK}},
	// node-redlock: every key, all or nothing.
	{`for $i,$k in ipairs(KEYS) do if redis.call("exists",$k)==1 then return $fail end end ` +
		`for $j,$l in ipairs(KEYS) do redis.call("set",$l,ARGV[$tok],"px",ARGV[$ttl]) end return #KEYS`,
		Script{Op: OpAcquire, MultiKey: true, Success: SuccessKeyCount}},
	{`for $i,$k in ipairs(KEYS) do if redis.call("get",$k)~=ARGV[$tok] then return $fail end end ` +
		`for $j,$l in ipairs(KEYS) do redis.call("set",$l,ARGV[$tok],"px",ARGV[$ttl]) end return #KEYS`,
		Script{Op: OpExtend, MultiKey: true, Success: SuccessKeyCount}},
	{`for $i,$k in ipairs(KEYS) do if redis.call("get",$k)~=ARGV[$tok] then return $fail end end ` +
		`for $j,$l in ipairs(KEYS) do redis.call("pexpire",$l,ARGV[$ttl]) end return #KEYS`,
		Script{Op: OpExtend, MultiKey: true, Success: SuccessKeyCount}},
	{`local $c=0 for $i,$k in ipairs(KEYS) do if redis.call("get",$k)==ARGV[$tok] then ` +
		`redis.call("del",$k) $c=$c+1 end end return $c`,
		Script{Op: OpRelease, MultiKey: true, Success: SuccessKeyCount}},
}

// luaTemplate is a compiled scriptShape.
type luaTemplate struct {
	script Script
	tree   *luaNode
}

var luaTemplates = compileTemplates()

func compileTemplates() []luaTemplate {
	var ts []luaTemplate
	add := func(src string, s Script) {
		tree, ok := parseScript([]byte(src), true)
		if !ok {
			panic("script: template does not parse: " + src)
		}
		ts = append(ts, luaTemplate{script: s, tree: tree})
	}
	for _, a := range guardedActions {
		for _, g := range guards {
			add(fmt.Sprintf(g, a.src), a.script)
		}
		for _, g := range threeWayGuards {
			if a.threeWay {
				add(fmt.Sprintf(g, a.src), a.script)
			}
		}
		for _, g := range orSetNXGuards {
			if a.orSetNX {
				s := a.script
				s.Op = OpExtendOrAcquire
				add(fmt.Sprintf(g, a.src), s)
			}
		}
	}
	for _, s := range scriptShapes {
		add(s.src, s.script)
	}
	return ts
}
