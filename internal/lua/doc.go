// Package lua holds what every part of the proxy that reads or writes
// Lua shares: how a Go string is written as a Lua 5.1 string literal,
// and the allow-list of Redis commands a served script may call. It is a
// leaf: pure code that imports nothing of this repository.
package lua
