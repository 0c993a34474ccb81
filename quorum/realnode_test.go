package quorum_test

import (
	"github.com/redlock-proxy/redlock-proxy/quorum"
	"github.com/redlock-proxy/redlock-proxy/quorum/redisnode"
)

// The engine's tests on real redis-servers run the go-redis node, which
// package quorum's tests cannot import (redisnode imports quorum).
func init() {
	quorum.RedisNode = func(addr string, noFunctions bool) quorum.Node {
		return redisnode.NewRedisNode(addr, redisnode.NodeOptions{NoFunctions: noFunctions})
	}
}
