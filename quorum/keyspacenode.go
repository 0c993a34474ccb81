package quorum

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// KeyCount reads INFO keyspace's db0 line and leaves the membership
// record and the counters, which have no TTL, out of the count.
func (n *redisNode) KeyCount(ctx context.Context) (KeyCount, error) {
	var info *redis.StringCmd
	var members *redis.IntCmd
	_, err := n.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		info = p.Info(ctx, "keyspace")
		members = p.Exists(ctx, MembersKey, CountersKey)
		return nil
	})
	if err != nil {
		return KeyCount{}, err
	}
	kc := parseKeyspace(info.Val())
	kc.Keys -= members.Val()
	return kc, nil
}

// parseKeyspace reads db0's keys and expires from INFO keyspace.
func parseKeyspace(text string) KeyCount {
	var kc KeyCount
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "db0:")
		if !ok {
			continue
		}
		for f := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(f, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "keys":
				kc.Keys = n
			case "expires":
				kc.Expires = n
			}
		}
	}
	return kc
}
