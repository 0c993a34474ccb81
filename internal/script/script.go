package script

// Op is the lock operation a recognised script performs.
type Op uint8

const (
	// OpUnknown is any script that is not a recognised lock operation.
	OpUnknown Op = iota
	// OpAcquire sets every key to the token with a TTL if none exists
	// (all-or-nothing over KEYS). With PrefixArg, a key whose value starts
	// with the token's first ARGV[PrefixArg] bytes is re-acquired
	// (bsm/redislock).
	OpAcquire
	// OpRelease deletes every key that still holds the token.
	OpRelease
	// OpExtend sets a new TTL on every key that still holds the token.
	// With ModeArg, ARGV[ModeArg] == "0" adds the TTL to the key's
	// remaining one instead (redis-py extend).
	OpExtend
	// OpExtendOrAcquire extends the key if it holds the token, or sets it
	// if it is missing (redsync touch-or-setnx).
	OpExtendOrAcquire
	// OpPTTL returns the key's remaining TTL in milliseconds if it holds
	// the token (bsm/redislock TTL).
	OpPTTL
)

// String names the operation for logs and errors.
func (o Op) String() string {
	switch o {
	case OpAcquire:
		return "acquire"
	case OpRelease:
		return "release"
	case OpExtend:
		return "extend"
	case OpExtendOrAcquire:
		return "extend-or-acquire"
	case OpPTTL:
		return "pttl"
	}
	return "unknown"
}

// Success is the shape of a script's reply when the operation succeeded.
type Success uint8

const (
	// SuccessOne replies the integer 1.
	SuccessOne Success = iota
	// SuccessOK replies the status +OK.
	SuccessOK
	// SuccessKeyCount replies the number of keys the operation applied
	// to (#KEYS on success; for a release, the count that was released).
	SuccessKeyCount
	// SuccessPTTL replies the remaining TTL in milliseconds.
	SuccessPTTL
	// SuccessMinPTTL replies the shortest remaining TTL over the keys in
	// milliseconds, 0 when none is positive (bsm/redislock v0.10 pttl).
	SuccessMinPTTL
)

// Script describes a recognised lock script: what it does, which ARGV
// holds what, and what it replies. ARGV positions are 1-based; 0 means
// the script has no such argument.
type Script struct {
	Op   Op
	Name string // e.g. "redsync delete", or "hand-written release"

	// MultiKey is true when the script loops over KEYS (node-redlock):
	// numkeys may be any n >= 1, and the keys are all-or-nothing. When
	// false the script uses KEYS[1] only and numkeys must be 1.
	MultiKey bool

	TokenArg  int // ARGV index of the token; never 0 for a known script
	TTLArg    int // ARGV index of the TTL in milliseconds
	PrefixArg int // ARGV index of the token-prefix length (redislock obtain)
	ModeArg   int // ARGV index of "0" (add) or "1" (replace) (redis-py extend)

	Success Success
	// Fail is the integer replied when the operation did not succeed:
	// the lock is held by another token, or not held. Unused when
	// FailNil is set.
	Fail int64
	// FailNil replies nil instead of Fail (redislock obtain, and every
	// redislock v0.10 script).
	FailNil bool
	// Missing, when HasMissing is set, is replied instead of Fail when
	// the key is absent on every node that answered (redsync delete: -1).
	Missing    int64
	HasMissing bool
}
