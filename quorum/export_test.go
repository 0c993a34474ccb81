package quorum

// RedisNode makes the go-redis node (quorum/redisnode) for this package's
// tests that run the engine on real redis-servers: with noFunctions, it
// runs wrapped scripts as scripts from the start. redisnode imports quorum,
// so these tests cannot import it; realnode_test.go (package quorum_test)
// sets RedisNode before any test runs.
var RedisNode func(addr string, noFunctions bool) Node
