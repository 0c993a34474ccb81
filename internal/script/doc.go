// Package script decides which Lua scripts the proxy serves: the Lua
// front end (gopher-lua's parser, with the checks where Lua 5.1 reads a
// body otherwise), admission by what a script may do and the re-printing
// of what it admitted, and the catalogue of lock scripts real clients
// send, recognised by digest and by structure (on the parsed tree, against
// templates written in Lua).
// It is pure code: no I/O, no goroutines, no clocks.
package script
