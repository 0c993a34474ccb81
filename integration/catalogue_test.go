package integration

import "testing"

// catalogueScript is a lock script a real client sends, byte for byte as
// shared/CLIENTS.md records it, with the SHA1 the client passes to
// EVALSHA. The bodies are copied here rather than imported from resp, so
// that these tests check the proxy against what clients really send, not
// against its own table.
type catalogueScript struct {
	name string
	sha  string
	body string
}

// lockScripts are the scripts the proxy runs as quorum operations.
var lockScripts = []catalogueScript{
	{"redsync delete", "e950836ed1e694540c503ef9972b8de518044d3b", "\n\tlocal val = redis.call(\"GET\", KEYS[1])\n\tif val == ARGV[1] then\n\t\treturn redis.call(\"DEL\", KEYS[1])\n\telseif val == false then\n\t\treturn -1\n\telse\n\t\treturn 0\n\tend\n"},
	{"redsync touch", "d75bb8b5bd13532ddedd17762e772346e39b321e", "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telse\n\t\treturn 0\n\tend\n"},
	{"redsync touch-or-setnx", "b6b55c439e02c6f52ffb8be7ec8c0d0ac816ea79", "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telseif redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2], \"NX\") then\n\t\treturn 1\n\telse\n\t\treturn 0\n\tend\n"},
	{"redislock obtain", "80a1b5f2cfccec3b7119ba7721d2127682b691a7", "\nif redis.call(\"set\", KEYS[1], ARGV[1], \"NX\", \"PX\", ARGV[3]) then return redis.status_reply(\"OK\") end\n\nlocal offset = tonumber(ARGV[2])\nif redis.call(\"getrange\", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call(\"set\", KEYS[1], ARGV[1], \"PX\", ARGV[3]) end\n"},
	{"redislock release", "cf0e94b2e9ffc7e04395cf88f7583fc309985910", "if redis.call(\"get\", KEYS[1]) == ARGV[1] then return redis.call(\"del\", KEYS[1]) else return 0 end"},
	{"redislock refresh", "a7aba3bc5d6e99b3003da8b9d80a63b9f4092ecf", "if redis.call(\"get\", KEYS[1]) == ARGV[1] then return redis.call(\"pexpire\", KEYS[1], ARGV[2]) else return 0 end"},
	{"redislock pttl", "6484da7d58920897fdc22b7f9afd1a3d47524ea8", "if redis.call(\"get\", KEYS[1]) == ARGV[1] then return redis.call(\"pttl\", KEYS[1]) else return -3 end"},
	{"redis-py release", "c3f8721cbb97f72bc19e972846bd7aaf91901658", "\n        local token = redis.call('get', KEYS[1])\n        if not token or token ~= ARGV[1] then\n            return 0\n        end\n        redis.call('del', KEYS[1])\n        return 1\n    "},
	{"redis-py extend", "a4e8783852e6b949f9ef3a97212805108459a890", "\n        local token = redis.call('get', KEYS[1])\n        if not token or token ~= ARGV[1] then\n            return 0\n        end\n        local expiration = redis.call('pttl', KEYS[1])\n        if not expiration then\n            expiration = 0\n        end\n        if expiration < 0 then\n            return 0\n        end\n\n        local newttl = ARGV[2]\n        if ARGV[3] == \"0\" then\n            newttl = ARGV[2] + expiration\n        end\n        redis.call('pexpire', KEYS[1], newttl)\n        return 1\n    "},
	{"redis-py reacquire", "1cac51482acf5858da00f6d685d68f886cd6b6b2", "\n        local token = redis.call('get', KEYS[1])\n        if not token or token ~= ARGV[1] then\n            return 0\n        end\n        redis.call('pexpire', KEYS[1], ARGV[2])\n        return 1\n    "},
	{"node-redlock v5 acquire", "96da70f7716f27d278a5218544df37fd8b0a5e4c", "\n  -- Return 0 if an entry already exists.\n  for i, key in ipairs(KEYS) do\n    if redis.call(\"exists\", key) == 1 then\n      return 0\n    end\n  end\n\n  -- Create an entry for each provided key.\n  for i, key in ipairs(KEYS) do\n    redis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n  end\n\n  -- Return the number of entries added.\n  return #KEYS\n"},
	{"node-redlock v5 extend", "aed6f382e410db8ba7926d4e5e9aab410bf2a78a", "\n  -- Return 0 if an entry exists with a *different* lock value.\n  for i, key in ipairs(KEYS) do\n    if redis.call(\"get\", key) ~= ARGV[1] then\n      return 0\n    end\n  end\n\n  -- Update the entry for each provided key.\n  for i, key in ipairs(KEYS) do\n    redis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n  end\n\n  -- Return the number of entries updated.\n  return #KEYS\n"},
	{"node-redlock v5 release", "e4612211c9f8f51c257e26e056b0a654b3187242", "\n  local count = 0\n  for i, key in ipairs(KEYS) do\n    -- Only remove entries for *this* lock value.\n    if redis.call(\"get\", key) == ARGV[1] then\n      redis.pcall(\"del\", key)\n      count = count + 1\n    end\n  end\n\n  -- Return the number of entries removed.\n  return count\n"},
	{"node-redlock v4 acquire", "e5a322e2634ef59a516e8ea150cb085afafee684", "\n\t-- Return 0 if an entry already exists.\n\tfor i, key in ipairs(KEYS) do\n\t\tif redis.call(\"exists\", key) == 1 then\n\t\t\treturn 0\n\t\tend\n\tend\n\n\t-- Create an entry for each provided key.\n\tfor i, key in ipairs(KEYS) do\n\t\tredis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n\tend\n\n\t-- Return the number of entries added.\n\treturn #KEYS\n"},
	{"node-redlock v4 extend", "ce46f80993d5dac20dd066eb301a4e37994bdbed", "\n\t-- Return 0 if an entry exists with a *different* lock value.\n\tfor i, key in ipairs(KEYS) do\n\t\tif redis.call(\"get\", key) ~= ARGV[1] then\n\t\t\treturn 0\n\t\tend\n\tend\n\n\t-- Update the entry for each provided key.\n\tfor i, key in ipairs(KEYS) do\n\t\tredis.call(\"set\", key, ARGV[1], \"PX\", ARGV[2])\n\tend\n\n\t-- Return the number of entries updated.\n\treturn #KEYS\n"},
	{"node-redlock v4 release", "0f0f23b9048b36752b5be114f357ba083449f908", "\n\tlocal count = 0\n\tfor i, key in ipairs(KEYS) do\n\t\t-- Only remove entries for *this* lock value.\n\t\tif redis.call(\"get\", key) == ARGV[1] then\n\t\t\tredis.pcall(\"del\", key)\n\t\t\tcount = count + 1\n\t\tend\n\tend\n\n\t-- Return the number of entries removed.\n\treturn count\n"},
}

// redissonScripts are Redisson's hash-lock scripts, which the proxy
// refuses: they need hashes and pub/sub.
var redissonScripts = []catalogueScript{
	{"Redisson lock", "149c5a8bf18676fd99e9e6e24923bd64d9b62f94", "if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);"},
	{"Redisson unlock", "6866459238a13a701d42f4971f12d9f3a50e2442", "local val = redis.call('get', KEYS[3]); if val ~= false then return tonumber(val);end; if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil;end; local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); redis.call('set', KEYS[3], 0, 'px', ARGV[5]); return 0; else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); redis.call('set', KEYS[3], 1, 'px', ARGV[5]); return 1; end; "},
	{"Redisson renew", "6a3d31570dc6f4b0bd32bcdc8e75667747c6f635", "local result = {} for i = 1, #KEYS, 1 do if (redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1) then redis.call('pexpire', KEYS[i], ARGV[1]); table.insert(result, 1); else table.insert(result, 0); end; end; return result;"},
	{"Redisson forceUnlock", "605e338249a7a1d40df83b04f7658354f883b41b", "if (redis.call('del', KEYS[1]) == 1) then redis.call(ARGV[2], KEYS[2], ARGV[1]); return 1 else return 0 end"},
}

// scriptNamed returns the lock script called name.
func scriptNamed(t *testing.T, name string) catalogueScript {
	t.Helper()
	for _, s := range lockScripts {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no catalogue script %q", name)
	return catalogueScript{}
}
