// Package script decides which Lua scripts the proxy serves: the Lua
// front end (lexer, parser, canonical form), and the catalogue of lock
// scripts real clients send, recognised by digest and by structure. It is
// pure code: no I/O, no goroutines, no clocks.
package script
