// Package resp holds the proxy's pure protocol pieces: reply values and
// how they are written, the RESP framing validator that stands in front of
// the client listener, parsing of SET options, and recognition of the lock
// scripts that real clients send. It does no I/O, starts no goroutines and
// reads no clocks.
package resp
