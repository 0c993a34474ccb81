package proxy

// Reasons the proxy gives for the Redis commands it refuses.
const (
	whyWrite    = "a write outside the lock commands would change the masters apart, with no quorum; take a lock with SET key token NX PX ms"
	whyCounter  = "a counter over independent masters is not monotonic; INCR and INCRBY of a key matching fence_keys are served as quorum counters"
	whyTTL      = "a TTL change without the token could stretch another holder's lock; extend with the token (compare-and-pexpire script, SET key token IFEQ token PX ms)"
	whyFlush    = "it would delete every lock on every master; DEL of named keys, with allow_force_del, is the admin's way"
	whyKeys     = "KEYS blocks every master while it runs; SCAN is served as a quorum scan"
	whyDebug    = "each master is debugged on its own, never through the proxy"
	whyPersist  = "the proxy keeps nothing on disk; persistence is each master's"
	whyShutdown = "the proxy stops on SIGTERM, draining first; a master is shut down on its own"
	whyReplica  = "the proxy is not a replica and has none; the masters are independent by design"
	whyDB       = "the proxy serves database 0 only"
	whyACL      = "users are [[users]] in config.toml, reloaded by SIGHUP"
	whyPublish  = "publish on a master; the proxy relays the masters' messages to its subscribers"
	whyMemory   = "each master's memory is its own; INFO memory shows the proxy's"
)

// unsupported maps the common Redis commands a client might send by
// mistake to why the proxy refuses them, for a clearer error than
// "unknown command" (an empty reason gives none).
var unsupported = map[string]string{
	"incr": whyCounter, "decr": whyCounter, "incrby": whyCounter, "decrby": whyCounter,
	"expire": whyTTL, "pexpire": whyTTL, "persist": whyTTL, "expireat": whyTTL, "pexpireat": whyTTL,
	"getset": whyWrite, "setnx": whyWrite, "setex": whyWrite, "psetex": whyWrite, "mset": whyWrite,
	"hset": whyWrite, "hincrby": whyWrite, "lpush": whyWrite, "rpush": whyWrite, "sadd": whyWrite,
	"zadd": whyWrite, "unlink": whyWrite, "rename": whyWrite, "hexists": "",
	"getdel": whyWrite, "getex": whyWrite, "append": whyWrite, "setrange": whyWrite, "incrbyfloat": whyCounter,
	"msetnx": whyWrite, "hsetnx": whyWrite, "hmset": whyWrite, "hdel": whyWrite, "hincrbyfloat": whyCounter,
	"zrem": whyWrite, "zincrby": whyWrite, "lpop": whyWrite, "rpop": whyWrite, "srem": whyWrite,
	"renamenx": whyWrite, "copy": whyWrite, "restore": whyWrite,
	"publish": whyPublish, "spublish": whyPublish,
	"keys":     whyKeys,
	"flushall": whyFlush, "flushdb": whyFlush,
	"debug": whyDebug,
	"save":  whyPersist, "bgsave": whyPersist, "bgrewriteaof": whyPersist, "lastsave": whyPersist,
	"shutdown":  whyShutdown,
	"replicaof": whyReplica, "slaveof": whyReplica, "failover": whyReplica, "sync": whyReplica, "psync": whyReplica,
	"swapdb": whyDB, "move": whyDB,
	"acl":    whyACL,
	"memory": whyMemory,
}
