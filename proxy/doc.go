// Package proxy is the client side of redlock-proxy: a redcon listener
// behind a RESP framing validator that stands in front of redcon's reader,
// speaking to unmodified single-instance Redis lock clients, turning their
// commands and scripts into quorum operations, and answering as one Redis
// would.
package proxy
