package script

import (
	"crypto/sha1"
	"encoding/hex"
	"slices"
)

// knownScript is a lock script a client library sends, byte for byte.
type knownScript struct {
	src    string
	script Script
}

// knownScripts are the lock scripts of CLIENTS.md section 1, plus the
// redis.io distlock release. The sources are the exact bytes the clients
// send: one changed space is another SHA-1.
var knownScripts = []knownScript{
	// go-redsync/redsync v4.18.1
	{"\n\tlocal val = redis.call(\"GET\", KEYS[1])\n\tif val == ARGV[1] then\n\t\treturn redis.call(\"DEL\", KEYS[1])\n\telseif val == false then\n\t\treturn -1\n\telse\n\t\treturn 0\n\tend\n",
		Script{Op: OpRelease, Name: "redsync delete", TokenArg: 1, Success: SuccessOne, Fail: 0, HasMissing: true, Missing: -1}},
	{"\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telse\n\t\treturn 0\n\tend\n",
		Script{Op: OpExtend, Name: "redsync touch", TokenArg: 1, TTLArg: 2, Success: SuccessOne, Fail: 0}},
	{"\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telseif redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2], \"NX\") then\n\t\treturn 1\n\telse\n\t\treturn 0\n\tend\n",
		Script{Op: OpExtendOrAcquire, Name: "redsync touchWithSetNX", TokenArg: 1, TTLArg: 2, Success: SuccessOne, Fail: 0}},

	// bsm/redislock v0.9.4
	{"\nif redis.call(\"set\", KEYS[1], ARGV[1], \"NX\", \"PX\", ARGV[3]) then return redis.status_reply(\"OK\") end\n\nlocal offset = tonumber(ARGV[2])\nif redis.call(\"getrange\", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call(\"set\", KEYS[1], ARGV[1], \"PX\", ARGV[3]) end\n",
		Script{Op: OpAcquire, Name: "redislock obtain", TokenArg: 1, PrefixArg: 2, TTLArg: 3, Success: SuccessOK, FailNil: true}},
	{"if redis.call(\"get\", KEYS[1]) == ARGV[1] then return redis.call(\"del\", KEYS[1]) else return 0 end",
		Script{Op: OpRelease, Name: "redislock release", TokenArg: 1, Success: SuccessOne, Fail: 0}},
	{"if redis.call(\"get\", KEYS[1]) == ARGV[1] then return redis.call(\"pexpire\", KEYS[1], ARGV[2]) else return 0 end",
		Script{Op: OpExtend, Name: "redislock refresh", TokenArg: 1, TTLArg: 2, Success: SuccessOne, Fail: 0}},
	{"if redis.call(\"get\", KEYS[1]) == ARGV[1] then return redis.call(\"pttl\", KEYS[1]) else return -3 end",
		Script{Op: OpPTTL, Name: "redislock pttl", TokenArg: 1, Success: SuccessPTTL, Fail: -3}},

	// redis-py 4.3.4
	{"\n        local token = redis.call('get', KEYS[1])\n        if not token or token ~= ARGV[1] then\n            return 0\n        end\n        redis.call('del', KEYS[1])\n        return 1\n    ",
		Script{Op: OpRelease, Name: "redis-py release", TokenArg: 1, Success: SuccessOne, Fail: 0}},
	{"\n        local token = redis.call('get', KEYS[1])\n        if not token or token ~= ARGV[1] then\n            return 0\n        end\n        local expiration = redis.call('pttl', KEYS[1])\n        if not expiration then\n            expiration = 0\n        end\n        if expiration < 0 then\n            return 0\n        end\n\n        local newttl = ARGV[2]\n        if ARGV[3] == \"0\" then\n            newttl = ARGV[2] + expiration\n        end\n        redis.call('pexpire', KEYS[1], newttl)\n        return 1\n    ",
		Script{Op: OpExtend, Name: "redis-py extend", TokenArg: 1, TTLArg: 2, ModeArg: 3, Success: SuccessOne, Fail: 0}},
	{"\n        local token = redis.call('get', KEYS[1])\n        if not token or token ~= ARGV[1] then\n            return 0\n        end\n        redis.call('pexpire', KEYS[1], ARGV[2])\n        return 1\n    ",
		Script{Op: OpExtend, Name: "redis-py reacquire", TokenArg: 1, TTLArg: 2, Success: SuccessOne, Fail: 0}},

	// node redlock 5.0.0-beta.2
	{"\n  -- Return 0 if an entry already exists.\n  for i, key in ipairs(KEYS) do\n    if redis.call(\"exists\", key) == 1 then\n      return 0\n    end\n  end\n\n  -- Create an entry for each provided key.\n  for i, key in ipairs(KEYS) do\n    redis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n  end\n\n  -- Return the number of entries added.\n  return #KEYS\n",
		Script{Op: OpAcquire, Name: "redlock v5 acquire", MultiKey: true, TokenArg: 1, TTLArg: 2, Success: SuccessKeyCount, Fail: 0}},
	{"\n  -- Return 0 if an entry exists with a *different* lock value.\n  for i, key in ipairs(KEYS) do\n    if redis.call(\"get\", key) ~= ARGV[1] then\n      return 0\n    end\n  end\n\n  -- Update the entry for each provided key.\n  for i, key in ipairs(KEYS) do\n    redis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n  end\n\n  -- Return the number of entries updated.\n  return #KEYS\n",
		Script{Op: OpExtend, Name: "redlock v5 extend", MultiKey: true, TokenArg: 1, TTLArg: 2, Success: SuccessKeyCount, Fail: 0}},
	{"\n  local count = 0\n  for i, key in ipairs(KEYS) do\n    -- Only remove entries for *this* lock value.\n    if redis.call(\"get\", key) == ARGV[1] then\n      redis.pcall(\"del\", key)\n      count = count + 1\n    end\n  end\n\n  -- Return the number of entries removed.\n  return count\n",
		Script{Op: OpRelease, Name: "redlock v5 release", MultiKey: true, TokenArg: 1, Success: SuccessKeyCount, Fail: 0}},

	// node redlock 4.2.0
	{"\n\t-- Return 0 if an entry already exists.\n\tfor i, key in ipairs(KEYS) do\n\t\tif redis.call(\"exists\", key) == 1 then\n\t\t\treturn 0\n\t\tend\n\tend\n\n\t-- Create an entry for each provided key.\n\tfor i, key in ipairs(KEYS) do\n\t\tredis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n\tend\n\n\t-- Return the number of entries added.\n\treturn #KEYS\n",
		Script{Op: OpAcquire, Name: "redlock v4 lock", MultiKey: true, TokenArg: 1, TTLArg: 2, Success: SuccessKeyCount, Fail: 0}},
	{"\n\t-- Return 0 if an entry exists with a *different* lock value.\n\tfor i, key in ipairs(KEYS) do\n\t\tif redis.call(\"get\", key) ~= ARGV[1] then\n\t\t\treturn 0\n\t\tend\n\tend\n\n\t-- Update the entry for each provided key.\n\tfor i, key in ipairs(KEYS) do\n\t\tredis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n\tend\n\n\t-- Return the number of entries updated.\n\treturn #KEYS\n",
		Script{Op: OpExtend, Name: "redlock v4 extend", MultiKey: true, TokenArg: 1, TTLArg: 2, Success: SuccessKeyCount, Fail: 0}},
	{"\n\tlocal count = 0\n\tfor i, key in ipairs(KEYS) do\n\t\t-- Only remove entries for *this* lock value.\n\t\tif redis.call(\"get\", key) == ARGV[1] then\n\t\t\tredis.pcall(\"del\", key)\n\t\t\tcount = count + 1\n\t\tend\n\tend\n\n\t-- Return the number of entries removed.\n\treturn count\n",
		Script{Op: OpRelease, Name: "redlock v4 unlock", MultiKey: true, TokenArg: 1, Success: SuccessKeyCount, Fail: 0}},

	// The release on https://redis.io/docs/latest/develop/use/patterns/distributed-locks/
	{"if redis.call(\"get\",KEYS[1]) == ARGV[1] then\n    return redis.call(\"del\",KEYS[1])\nelse\n    return 0\nend",
		Script{Op: OpRelease, Name: "distlock release", TokenArg: 1, Success: SuccessOne, Fail: 0}},
}

// digestOnlyScripts are lock scripts known by their exact bytes alone:
// they call commands no other served script may (MSETNX, MGET), so no
// template reads them and a respelled copy is refused.
var digestOnlyScripts = []knownScript{
	// bsm/redislock v0.10.0: each script runs over every key of the lock
	// (ObtainMulti), all or nothing, and answers +OK or nil.
	{"-- obtain.lua: arguments => [value, tokenLen, ttl]\n-- Obtain.lua try to set provided keys's with value and ttl if they do not exists.\n-- Keys can be overriden if they already exists and the correct value+tokenLen is provided. \n\nlocal function pexpire(ttl)\n\t-- Update keys ttls.\n\tfor _, key in ipairs(KEYS) do\n\t\tredis.call(\"pexpire\", key, ttl)\n\tend\nend\n\n-- canOverrideLock check either or not the provided token match\n-- previously set lock's tokens.\nlocal function canOverrideKeys() \n\tlocal offset = tonumber(ARGV[2])\n\n\tfor _, key in ipairs(KEYS) do\n\t\tif redis.call(\"getrange\", key, 0, offset-1) ~= string.sub(ARGV[1], 1, offset) then\n\t\t\treturn false\n\t\tend\n\tend\n\treturn true\nend\n\n-- Prepare mset arguments.\nlocal setArgs = {}\nfor _, key in ipairs(KEYS) do\n\ttable.insert(setArgs, key)\n\ttable.insert(setArgs, ARGV[1])\nend\n\nif redis.call(\"msetnx\", unpack(setArgs)) ~= 1 then\n\tif canOverrideKeys() == false then\n\t\treturn false\n\tend\n\tredis.call(\"mset\", unpack(setArgs))\nend\n\npexpire(ARGV[3])\nreturn redis.status_reply(\"OK\")",
		Script{Op: OpAcquire, Name: "redislock v0.10 obtain", MultiKey: true, TokenArg: 1, PrefixArg: 2, TTLArg: 3, Success: SuccessOK, FailNil: true}},
	{"-- release.lua: => Arguments: [value]\n-- Release.lua deletes provided keys if all their values match the input. \n\n-- Check all keys values matches provided input.\nlocal values = redis.call(\"mget\", unpack(KEYS))\nfor i, _ in ipairs(KEYS) do\n\tif values[i] ~= ARGV[1] then\n\t\treturn false\n\tend\nend\n\n-- Delete keys.\nredis.call(\"del\", unpack(KEYS))\n\nreturn redis.status_reply(\"OK\")",
		Script{Op: OpRelease, Name: "redislock v0.10 release", MultiKey: true, TokenArg: 1, Success: SuccessOK, FailNil: true}},
	{"-- refresh.lua: => Arguments: [value, ttl]\n-- refresh.lua refreshes provided keys's ttls if all their values match the input. \n\n-- Check all keys values matches provided input.\nlocal values = redis.call(\"mget\", unpack(KEYS))\nfor i, _ in ipairs(KEYS) do\n\tif values[i] ~= ARGV[1] then\n\t\treturn false\n\tend\nend\n\n-- Update keys ttls.\nfor _, key in ipairs(KEYS) do\n\tredis.call(\"pexpire\", key, ARGV[2]) \nend\n\nreturn redis.status_reply(\"OK\")",
		Script{Op: OpExtend, Name: "redislock v0.10 refresh", MultiKey: true, TokenArg: 1, TTLArg: 2, Success: SuccessOK, FailNil: true}},
	{"-- pttl.lua: => Arguments: [value]\n-- pttl.lua returns provided keys's ttls if all their values match the input. \n\n-- Check all keys values matches provided input.\nlocal values = redis.call(\"mget\", unpack(KEYS))\nfor i, _ in ipairs(KEYS) do\n\tif values[i] ~= ARGV[1] then\n\t\treturn false\n\tend\nend\n\n-- Find and return shortest TTL among keys.\nlocal minTTL = 0\nfor _, key in ipairs(KEYS) do\n\tlocal ttl = redis.call(\"pttl\", key)\n\t-- Note: ttl < 0 probably means the key no longer exists.\n\tif ttl > 0 and (minTTL == 0 or ttl < minTTL) then\n\t\tminTTL = ttl\n\tend\nend\nreturn minTTL",
		Script{Op: OpPTTL, Name: "redislock v0.10 pttl", MultiKey: true, TokenArg: 1, Success: SuccessMinPTTL, FailNil: true}},
}

// redissonScripts are Redisson 4.7.0's lock scripts. They keep the lock in
// a hash and publish on unlock, so the proxy cannot run them; they are
// known only to say which client sent them.
var redissonScripts = []knownScript{
	{"if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);",
		Script{Name: "redisson lock"}},
	{"local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; ",
		Script{Name: "redisson unlock"}},
	{"local result = {} for i = 1, #KEYS, 1 do if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; end; return result;",
		Script{Name: "redisson renew"}},
	{"if (redis.call('del', KEYS[1]) == 1) then redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1 else return 0 end",
		Script{Name: "redisson force unlock"}},
}

// scriptsBySHA maps each known script's SHA-1, computed here from its
// source, to what it does.
var scriptsBySHA = func() map[[sha1.Size]byte]Script {
	m := make(map[[sha1.Size]byte]Script, len(knownScripts)+len(digestOnlyScripts)+len(redissonScripts))
	for _, k := range slices.Concat(knownScripts, digestOnlyScripts, redissonScripts) {
		sum := sha1.Sum([]byte(k.src))
		if _, dup := m[sum]; dup {
			panic("script: known script listed twice: " + k.script.Name)
		}
		m[sum] = k.script
	}
	return m
}()

// sourcesBySHA maps each known lock script's SHA-1 to its exact text.
var sourcesBySHA = func() map[[sha1.Size]byte]string {
	m := make(map[[sha1.Size]byte]string, len(knownScripts)+len(digestOnlyScripts))
	for _, k := range slices.Concat(knownScripts, digestOnlyScripts) {
		m[sha1.Sum([]byte(k.src))] = k.src
	}
	return m
}()

// KnownSource returns the exact text of the catalogue script whose digest
// is sha (either case): what the proxy runs by its effect when a call is
// one the catalogue cannot take.
func KnownSource(sha string) (string, bool) {
	sum, ok := decodeSHA(sha)
	if !ok {
		return "", false
	}
	src, ok := sourcesBySHA[sum]
	return src, ok
}

// SHA1Hex returns the lower-case hex SHA-1 of b, as Redis's SCRIPT LOAD does.
func SHA1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// ClassifySHA reports the lock script whose exact body has digest sha
// (either case). A Redisson script is reported with Op OpUnknown and its
// Name, and false: the proxy knows it but cannot run it.
func ClassifySHA(sha string) (Script, bool) {
	sum, ok := decodeSHA(sha)
	if !ok {
		return Script{}, false
	}
	s := scriptsBySHA[sum]
	return s, s.Op != OpUnknown
}

// ClassifyScript reports which lock operation body performs: first by the
// SHA-1 of the exact bytes, then by matching its structure against the
// lock script shapes the proxy knows. Anything else is unknown: Script{}
// and false, or a Redisson script's name as in ClassifySHA.
func ClassifyScript(body []byte) (Script, bool) {
	if s, ok := scriptsBySHA[sha1.Sum(body)]; ok {
		return s, s.Op != OpUnknown
	}
	return classifyStructure(body)
}

// decodeSHA parses 40 hex digits of either case without allocating.
func decodeSHA(sha string) (sum [sha1.Size]byte, ok bool) {
	if len(sha) != 2*sha1.Size {
		return sum, false
	}
	for i := range sum {
		hi, ok1 := unhex(sha[2*i])
		lo, ok2 := unhex(sha[2*i+1])
		if !ok1 || !ok2 {
			return sum, false
		}
		sum[i] = hi<<4 | lo
	}
	return sum, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
