// Package resp holds the proxy's reply values and how they are written,
// and the parsing of SET options. It does no I/O, starts no goroutines and
// reads no clocks.
package resp
