// Package script decides which Lua scripts the proxy serves: the Lua
// front end (lexer, parser, canonical form), admission by what a script
// may do and the re-printing of what it admitted, and the catalogue of
// lock scripts real clients send, recognised by digest and by structure.
// It is pure code: no I/O, no goroutines, no clocks.
package script
