package lua

import (
	"iter"
	"slices"
	"strings"
)

// Keys says which arguments of a command are keys.
type Keys uint8

const (
	NoKeys   Keys = iota // no argument is a key
	FirstKey             // the first argument
	AllKeys              // every argument
)

// Command is what the allow-list says of one command.
type Command struct {
	Keys Keys
	// ReadOnly is set for a command with keys that the masters' wrapper
	// runs without a snapshot of them, as it changes none. Any other is
	// taken as a write, the safe side: a command added without it, and
	// GETRANGE (a read the wrapper has always snapshotted before).
	ReadOnly bool
}

// command is one entry of the allow-list.
type command struct {
	name string // lower case
	Command
}

// commands is the allow-list of what a served script may call: what
// admission lets a script name and the masters' wrapper lets it run. In
// order of name.
var commands = [...]command{
	{"del", Command{Keys: AllKeys}},
	{"exists", Command{Keys: AllKeys, ReadOnly: true}},
	{"expire", Command{Keys: FirstKey}},
	{"expireat", Command{Keys: FirstKey}},
	{"get", Command{Keys: FirstKey, ReadOnly: true}},
	{"getrange", Command{Keys: FirstKey}}, // bsm/redislock's re-entry by token prefix
	{"hdel", Command{Keys: FirstKey}},     // hashes: Redisson
	{"hexists", Command{Keys: FirstKey, ReadOnly: true}},
	{"hget", Command{Keys: FirstKey, ReadOnly: true}},
	{"hincrby", Command{Keys: FirstKey}},
	{"hlen", Command{Keys: FirstKey, ReadOnly: true}},
	{"hset", Command{Keys: FirstKey}},
	{"pexpire", Command{Keys: FirstKey}},
	{"pexpireat", Command{Keys: FirstKey}},
	{"pttl", Command{Keys: FirstKey, ReadOnly: true}},
	{"publish", Command{Keys: NoKeys}},
	{"select", Command{Keys: NoKeys}}, // database 0 only
	{"set", Command{Keys: FirstKey}},
	{"setnx", Command{Keys: FirstKey}},
	{"spublish", Command{Keys: NoKeys}},
	{"time", Command{Keys: NoKeys}},
	{"ttl", Command{Keys: FirstKey, ReadOnly: true}},
	{"type", Command{Keys: FirstKey, ReadOnly: true}},
	{"unlink", Command{Keys: AllKeys}},
	{"zadd", Command{Keys: FirstKey}}, // sorted sets, as Symfony uses them
	{"zcard", Command{Keys: FirstKey, ReadOnly: true}},
	{"zcount", Command{Keys: FirstKey, ReadOnly: true}},
	{"zrange", Command{Keys: FirstKey, ReadOnly: true}},
	{"zrem", Command{Keys: FirstKey}},
	{"zremrangebyscore", Command{Keys: FirstKey}},
	{"zrevrange", Command{Keys: FirstKey, ReadOnly: true}},
	{"zscore", Command{Keys: FirstKey, ReadOnly: true}},
}

// Lookup reports whether a served script may call name (lower case), and
// what the allow-list says of it.
func Lookup(name string) (Command, bool) {
	i, ok := slices.BinarySearchFunc(commands[:], name, func(c command, name string) int {
		return strings.Compare(c.name, name)
	})
	if !ok {
		return Command{}, false
	}
	return commands[i].Command, true
}

// Commands yields the allow-list, in order of name.
func Commands() iter.Seq2[string, Command] {
	return func(yield func(string, Command) bool) {
		for _, c := range &commands {
			if !yield(c.name, c.Command) {
				return
			}
		}
	}
}
