package redisnode

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/internal/redistest"
)

// redisProc is a redis-server started for one test.
type redisProc struct{ *redistest.Server }

// startRedis runs a redis-server with no persistence on a free loopback
// port and stops it when the test ends.
func startRedis(t *testing.T) *redisProc {
	t.Helper()
	return &redisProc{redistest.Start(t)}
}

// admin returns a plain client for setting up and checking keys.
func (p *redisProc) admin(t *testing.T) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: p.Addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// node returns the redisNode for p, closed when the test ends.
func (p *redisProc) node(t *testing.T) *redisNode {
	t.Helper()
	n := NewRedisNode(p.Addr, NodeOptions{}).(*redisNode)
	t.Cleanup(func() { n.Close() })
	return n
}
