package proxy

// redissonRefused names, by the SHA-1 of its text, each script of the
// Redisson types that the proxy cannot serve safely over independent
// masters, as redisson/redisson 66863978b4a9 (2026-08-21) sends them
// (integration/redissonrefused_test.go replays each). They are refused
// naming the type before admission, so nothing of them reaches a node.
var redissonRefused = map[string]string{
	"d1ddef65ad80886b5d36e023c99930044ddd653a": "RFairLock",
	"d20501c26a30adf6fb0fe9883bbbcc497e6157e2": "RFairLock",
	"8f6ed299ffd259f0539c20f89253998c0777ea75": "RFairLock",
	"367f80bd2e300e411fb0936d9b601e5bcb3fd4b6": "RFairLock",
	"71ed11d4e4818119ac560b3d670a7f08256afc46": "RFairLock",
	"c7dc9d189c1715465a31a06ddbc008585e0c20be": "RSemaphore",
	"ae27582488dd01f4e238cc0733a12146d410eb44": "RSemaphore",
	"6883802454c09d455e3234c8b01549adf1fb8b4c": "RSemaphore",
	"c87766d572855e9461c4ecd453db5d1cbab6119e": "RSemaphore",
	"241ce4e87e652b4f9b39d33cbcd7df9ee8ed906c": "RSemaphore or RPermitExpirableSemaphore",
	"38bf99884eb94708a40a9aabacb15b4c5f16e804": "RSemaphore",
	"98238d408c6755085344670d3a2ddaa55cf177a9": "RSemaphore",
	"992c96b09a3d8ea0b37f5dc12e5347a44d93909d": "RPermitExpirableSemaphore",
	"4ce079451bee2993ce00c8a4e205b536c6ccad67": "RPermitExpirableSemaphore",
	"cf3ab77b1c0ae1226ae0e06e5cb18ee75f56c96b": "RPermitExpirableSemaphore",
	"26b3972b2c9e617556282f404cb79709d746a713": "RPermitExpirableSemaphore",
	"e242db5c1c68811b0d26a41937dcf22415b6d872": "RPermitExpirableSemaphore",
	"6f0b0be79a0c146c778cb14f40c10eb5b706e574": "RPermitExpirableSemaphore",
	"494d8561fee0cdb033f6c28d74c052c52189a578": "RPermitExpirableSemaphore",
	"ec6fb1cd5f66817424e8fe70fee7929391b7c6f0": "RPermitExpirableSemaphore",
	"2298b02cc67a89f2a638e47503db3675c73d77f5": "RPermitExpirableSemaphore",
	"8be95cb5221cc7ee883cacb8859a8b32ef501a0e": "RPermitExpirableSemaphore",
}

// redissonWhy is why each refused type is not served; docs/compatibility.md's
// Redisson table says the same.
var redissonWhy = map[string]string{
	"RFairLock":                 "its wait queue is a list and a sorted set of thread timeouts, trimmed in unbounded loops, which no quorum decides",
	"RSemaphore":                "its permits are a counter without an expiry, and independent masters cannot keep a count of n permits exact",
	"RPermitExpirableSemaphore": "its permits are a counter without an expiry beside a sorted set of permit ids, and independent masters cannot keep a count of n permits exact",
	"RSemaphore or RPermitExpirableSemaphore": "its permits are a counter without an expiry, and independent masters cannot keep a count of n permits exact",
}
