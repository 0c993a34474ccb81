package redisnode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// Probe reads INFO, then TIME on its own so that its round trip is tight,
// then, on a node with AOF on, CONFIG GET of appendfsync and
// no-appendfsync-on-rewrite (which an ACL may refuse; then both stay
// empty).
func (n *redisNode) Probe(ctx context.Context) (quorum.Probe, error) {
	text, err := n.c.Info(ctx).Result()
	if err != nil {
		return quorum.Probe{}, err
	}
	p, err := parseInfo(text)
	if err != nil {
		return quorum.Probe{}, err
	}
	n.reveals.Store(setTakesNXGet(p.Version))
	sent := time.Now()
	now, err := n.c.Time(ctx).Result()
	if err != nil {
		return quorum.Probe{}, err
	}
	p.RTT = time.Since(sent)
	p.Local = sent.Add(p.RTT / 2)
	p.Time = now
	if p.AOF {
		if v, err := n.c.ConfigGet(ctx, "*fsync*").Result(); err == nil {
			p.Appendfsync, p.NoFsyncOnRewrite = v["appendfsync"], v["no-appendfsync-on-rewrite"]
		}
	}
	return p, nil
}

// parseInfo reads the fields a Probe needs from an INFO reply.
func parseInfo(text string) (quorum.Probe, error) {
	var p quorum.Probe
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			fields[k] = v
		}
	}
	p.RunID = fields["run_id"]
	p.Version = fields["redis_version"]
	if p.RunID == "" {
		return quorum.Probe{}, errors.New("INFO has no run_id")
	}
	up, err := strconv.ParseInt(fields["uptime_in_seconds"], 10, 64)
	if err != nil {
		return quorum.Probe{}, fmt.Errorf("INFO uptime_in_seconds: %w", err)
	}
	p.Uptime = time.Duration(up) * time.Second
	p.Loading = fields["loading"] == "1"
	p.Role = fields["role"]
	p.MaxmemoryPolicy = fields["maxmemory_policy"]
	p.AOF = fields["aof_enabled"] == "1"
	return p, nil
}

func (n *redisNode) Members(ctx context.Context) (map[string]string, error) {
	return n.c.HGetAll(ctx, quorum.MembersKey).Result()
}

func (n *redisNode) SetMembers(ctx context.Context, fields map[string]string) error {
	return n.c.HSet(ctx, quorum.MembersKey, fields).Err()
}

// WatchConnects makes every new connection read the node's run_id and
// pass it to f before the connection carries a command.
func (n *redisNode) WatchConnects(f func(runID string)) { n.onRunID.Store(&f) }

// connected is go-redis's OnConnect hook. Until the engine watches, it
// costs nothing.
func (n *redisNode) connected(ctx context.Context, cn *redis.Conn) error {
	f := n.onRunID.Load()
	if f == nil {
		return nil
	}
	text, err := cn.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	p, err := parseInfo(text)
	if err != nil {
		return err
	}
	n.reveals.Store(setTakesNXGet(p.Version))
	(*f)(p.RunID)
	return nil
}

// setTakesNXGet reports whether a server of INFO's redis_version v takes
// SET with both NX and GET: Redis 7.0 and later (Valkey reports 7.2.4).
// Before, it answers a syntax error.
func setTakesNXGet(v string) bool {
	major, _, _ := strings.Cut(v, ".")
	m, err := strconv.Atoi(major)
	return err == nil && m >= 7
}
