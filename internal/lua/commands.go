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

// command is one entry of the allow-list.
type command struct {
	name string // lower case
	keys Keys
}

// commands is the allow-list of what a served script may call: what
// admission lets a script name and the masters' wrapper lets it run. In
// order of name.
var commands = [...]command{
	{"del", AllKeys},
	{"exists", AllKeys},
	{"expire", FirstKey},
	{"expireat", FirstKey},
	{"get", FirstKey},
	{"getrange", FirstKey}, // bsm/redislock's re-entry by token prefix
	{"hdel", FirstKey},     // hashes: Redisson
	{"hexists", FirstKey},
	{"hget", FirstKey},
	{"hincrby", FirstKey},
	{"hlen", FirstKey},
	{"hset", FirstKey},
	{"pexpire", FirstKey},
	{"pexpireat", FirstKey},
	{"pttl", FirstKey},
	{"publish", NoKeys},
	{"select", NoKeys}, // database 0 only
	{"set", FirstKey},
	{"setnx", FirstKey},
	{"spublish", NoKeys},
	{"time", NoKeys},
	{"ttl", FirstKey},
	{"type", FirstKey},
	{"unlink", AllKeys},
	{"zadd", FirstKey}, // sorted sets, as Symfony uses them
	{"zcard", FirstKey},
	{"zcount", FirstKey},
	{"zrange", FirstKey},
	{"zrem", FirstKey},
	{"zremrangebyscore", FirstKey},
	{"zrevrange", FirstKey},
	{"zscore", FirstKey},
}

// Command reports whether a served script may call name (lower case),
// and which of its arguments are keys.
func Command(name string) (Keys, bool) {
	i, ok := slices.BinarySearchFunc(commands[:], name, func(c command, name string) int {
		return strings.Compare(c.name, name)
	})
	if !ok {
		return NoKeys, false
	}
	return commands[i].keys, true
}

// Commands yields the allow-list, in order of name.
func Commands() iter.Seq2[string, Keys] {
	return func(yield func(string, Keys) bool) {
		for _, c := range &commands {
			if !yield(c.name, c.keys) {
				return
			}
		}
	}
}
