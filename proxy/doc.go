// Package proxy is the client side of redlock-proxy: a redcon listener
// that speaks to unmodified single-instance Redis lock clients, turns
// their commands and scripts into quorum operations, and answers as one
// Redis would.
package proxy
