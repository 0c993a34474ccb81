package script

import "fmt"

// Templates are lock scripts written in plain, canonical Lua, parsed at
// start by the same front end as scripts, whose names that start with
// "_" are holes:
//
//	_tok, _ttl, _pfx, _mode   an ARGV index: TokenArg, TTLArg, PrefixArg, ModeArg
//	_fail, _missing           a returned literal (an integer, or nil, false or
//	                          nothing): Fail or FailNil, Missing
//	any other _name           the name of a local variable
//
// A hole matches the same thing everywhere it appears. Everything else
// must match exactly, after both sides went through canonicalize.

// getKey is the read of the lock every single-key guard compares.
const getKey = `redis.call("get",KEYS[1])`

// setNX is an acquire of the single key.
const setNX = `redis.call("set",KEYS[1],ARGV[_tok],"nx","px",ARGV[_ttl])`

// guards are the ways a script checks that KEYS[1] holds ARGV[_tok]
// before it acts; %s is the action, which ends in a return.
var guards = []string{
	`if ` + getKey + `==ARGV[_tok] then %s end return _fail`,
	`local _v=` + getKey + ` if _v==ARGV[_tok] then %s end return _fail`,
	`if ` + getKey + `~=ARGV[_tok] then return _fail end %s`,
	`local _v=` + getKey + ` if _v~=ARGV[_tok] then return _fail end %s`,
	`local _v=` + getKey + ` if not _v or _v~=ARGV[_tok] then return _fail end %s`,
	`local _v=` + getKey + ` if _v==false or _v~=ARGV[_tok] then return _fail end %s`,
}

// threeWayGuards also tell a missing key (_missing) from another
// token's (_fail), as redsync's delete does.
var threeWayGuards = []string{
	`local _v=` + getKey + ` if _v==ARGV[_tok] then %s end if _v==false then return _missing end return _fail`,
	`local _v=` + getKey + ` if _v==ARGV[_tok] then %s end if not _v then return _missing end return _fail`,
	`local _v=` + getKey + ` if _v==false then return _missing end if _v==ARGV[_tok] then %s end return _fail`,
	`local _v=` + getKey + ` if not _v then return _missing end if _v==ARGV[_tok] then %s end return _fail`,
	`local _v=` + getKey + ` if _v==false then return _missing end if _v~=ARGV[_tok] then return _fail end %s`,
	`local _v=` + getKey + ` if not _v then return _missing end if _v~=ARGV[_tok] then return _fail end %s`,
}

// orSetNXGuards extend the key if it holds the token, and otherwise try
// to set it (redsync's touch with SetNX).
var orSetNXGuards = []string{
	`if ` + getKey + `==ARGV[_tok] then %s end if ` + setNX + ` then return 1 end return _fail`,
	`local _v=` + getKey + ` if _v==ARGV[_tok] then %s end if ` + setNX + ` then return 1 end return _fail`,
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
	{`return redis.call("pexpire",KEYS[1],ARGV[_ttl])`, Script{Op: OpExtend, Success: SuccessOne}, false, true},
	{`redis.call("pexpire",KEYS[1],ARGV[_ttl]) return 1`, Script{Op: OpExtend, Success: SuccessOne}, false, true},
	{`return redis.call("set",KEYS[1],ARGV[_tok],"px",ARGV[_ttl])`, Script{Op: OpExtend, Success: SuccessOK}, false, false},
	{`redis.call("set",KEYS[1],ARGV[_tok],"px",ARGV[_ttl]) return 1`, Script{Op: OpExtend, Success: SuccessOne}, false, true},
	{`return redis.call("pttl",KEYS[1])`, Script{Op: OpPTTL, Success: SuccessPTTL}, false, false},
	// redis-py's extend: ARGV[_mode] == "0" adds to the remaining TTL.
	{pyExtend(`if not _e then _e=0 end `), Script{Op: OpExtend, Success: SuccessOne}, false, false},
	{pyExtend(``), Script{Op: OpExtend, Success: SuccessOne}, false, false},
}

func pyExtend(orZero string) string {
	return `local _e=redis.call("pttl",KEYS[1]) ` + orZero + `if _e<0 then return _fail end ` +
		`local _n=ARGV[_ttl] if ARGV[_mode]=="0" then _n=ARGV[_ttl]+_e end ` +
		`redis.call("pexpire",KEYS[1],_n) return 1`
}

// scriptShape is a whole template.
type scriptShape struct {
	src    string
	script Script
}

// scriptShapes are the templates that are not a guard around an action.
var scriptShapes = []scriptShape{
	{`if ` + setNX + ` then return 1 end return _fail`, Script{Op: OpAcquire, Success: SuccessOne}},
	{`if not ` + setNX + ` then return _fail end return 1`, Script{Op: OpAcquire, Success: SuccessOne}},
	{`local _v=` + setNX + ` if _v then return 1 end return _fail`, Script{Op: OpAcquire, Success: SuccessOne}},
	{`if ` + setNX + ` then return redis.status_reply("OK") end return _fail`, Script{Op: OpAcquire, Success: SuccessOK}},
	{`return ` + setNX, Script{Op: OpAcquire, Success: SuccessOK, FailNil: true}},
	{`if redis.call("setnx",KEYS[1],ARGV[_tok])==1 then redis.call("pexpire",KEYS[1],ARGV[_ttl]) return 1 end return _fail`,
		Script{Op: OpAcquire, Success: SuccessOne}},
	// bsm/redislock's obtain: re-acquire when the first ARGV[_pfx] bytes
	// of the stored value are the token's.
	{`if ` + setNX + ` then return redis.status_reply("OK") end ` +
		`local _o=tonumber(ARGV[_pfx]) ` +
		`if redis.call("getrange",KEYS[1],0,_o-1)==string.sub(ARGV[_tok],1,_o) then ` +
		`return redis.call("set",KEYS[1],ARGV[_tok],"px",ARGV[_ttl]) end return _fail`,
		Script{Op: OpAcquire, Success: SuccessOK}},
	// node-redlock: every key, all or nothing.
	{`for _i,_k in ipairs(KEYS) do if redis.call("exists",_k)==1 then return _fail end end ` +
		`for _j,_l in ipairs(KEYS) do redis.call("set",_l,ARGV[_tok],"px",ARGV[_ttl]) end return #KEYS`,
		Script{Op: OpAcquire, MultiKey: true, Success: SuccessKeyCount}},
	{`for _i,_k in ipairs(KEYS) do if redis.call("get",_k)~=ARGV[_tok] then return _fail end end ` +
		`for _j,_l in ipairs(KEYS) do redis.call("set",_l,ARGV[_tok],"px",ARGV[_ttl]) end return #KEYS`,
		Script{Op: OpExtend, MultiKey: true, Success: SuccessKeyCount}},
	{`for _i,_k in ipairs(KEYS) do if redis.call("get",_k)~=ARGV[_tok] then return _fail end end ` +
		`for _j,_l in ipairs(KEYS) do redis.call("pexpire",_l,ARGV[_ttl]) end return #KEYS`,
		Script{Op: OpExtend, MultiKey: true, Success: SuccessKeyCount}},
	{`local _c=0 for _i,_k in ipairs(KEYS) do if redis.call("get",_k)==ARGV[_tok] then ` +
		`redis.call("del",_k) _c=_c+1 end end return _c`,
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
