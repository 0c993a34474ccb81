package redisnode

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

var readKeyScript = luaScript("", "read_key")

// KeyCount reads INFO keyspace's db0 line and leaves the membership
// record and the counters, which have no TTL, out of the count.
func (n *redisNode) KeyCount(ctx context.Context) (quorum.KeyCount, error) {
	var info *redis.StringCmd
	var members *redis.IntCmd
	_, err := n.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		info = p.Info(ctx, "keyspace")
		members = p.Exists(ctx, quorum.MembersKey, quorum.CountersKey)
		return nil
	})
	if err != nil {
		return quorum.KeyCount{}, err
	}
	kc := parseKeyspace(info.Val())
	kc.Keys -= members.Val()
	return kc, nil
}

// parseKeyspace reads db0's keys and expires from INFO keyspace.
func parseKeyspace(text string) quorum.KeyCount {
	var kc quorum.KeyCount
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

// ReadKey runs read_key.lua.
func (n *redisNode) ReadKey(ctx context.Context, key string) (quorum.NodeKey, error) {
	return evalSlice(ctx, n.p, nodeKeyResult, readKeyScript, []string{key})
}

// nodeKeyResult decodes read_key.lua's {type, items, pttl, encoding}.
func nodeKeyResult(vals []any) (quorum.NodeKey, error) {
	if len(vals) != 4 {
		return quorum.NodeKey{}, fmt.Errorf("read_key replied %d values", len(vals))
	}
	typ, ok1 := vals[0].(string)
	raw, ok2 := vals[1].([]any)
	pttl, ok3 := vals[2].(int64)
	enc, ok4 := vals[3].(string)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return quorum.NodeKey{}, fmt.Errorf("read_key replied %T %T %T %T", vals[0], vals[1], vals[2], vals[3])
	}
	v := quorum.NodeKey{Type: typ, TTL: time.Duration(pttl) * time.Millisecond, Encoding: enc, Items: make([]string, len(raw))}
	for i, it := range raw {
		s, ok := it.(string)
		if !ok {
			return quorum.NodeKey{}, fmt.Errorf("read_key replied item %T", it)
		}
		v.Items[i] = s
	}
	return v, nil
}

// ScanKeys runs SCAN on the node.
func (n *redisNode) ScanKeys(ctx context.Context, cursor uint64, match string, count int64, typ string) ([]string, uint64, error) {
	if typ != "" {
		return n.c.ScanType(ctx, cursor, match, count, typ).Result()
	}
	return n.c.Scan(ctx, cursor, match, count).Result()
}
