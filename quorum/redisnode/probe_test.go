package redisnode

import (
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

func TestParseInfo(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    quorum.Probe
		wantErr bool
	}{
		{"master", "# Server\r\nrun_id:abc\r\nuptime_in_seconds:42\r\n# Persistence\r\nloading:0\r\naof_enabled:1\r\n# Memory\r\nmaxmemory_policy:noeviction\r\n# Replication\r\nrole:master\r\n",
			quorum.Probe{RunID: "abc", Uptime: 42 * time.Second, Role: "master", MaxmemoryPolicy: "noeviction", AOF: true}, false},
		{"loading replica", "run_id:def\nuptime_in_seconds:0\nloading:1\nrole:slave\n",
			quorum.Probe{RunID: "def", Loading: true, Role: "slave"}, false},
		{"no run_id", "uptime_in_seconds:1\r\n", quorum.Probe{}, true},
		{"bad uptime", "run_id:x\r\nuptime_in_seconds:soon\r\n", quorum.Probe{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseInfo(tt.text)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("parseInfo = %+v, %v; want %+v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestRedisNodeProbe(t *testing.T) {
	p := startRedis(t)
	n := p.node(t)
	before := time.Now()
	got, err := n.Probe(t.Context())
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if len(got.RunID) != 40 || got.Role != "master" || got.MaxmemoryPolicy != "noeviction" || got.Loading || got.AOF {
		t.Errorf("Probe = %+v; want a 40-digit run_id, a master, noeviction, not loading, no AOF", got)
	}
	if got.RTT <= 0 || got.Local.Before(before) || got.Time.Sub(got.Local).Abs() > time.Second {
		t.Errorf("Probe clock: Time %v, Local %v, RTT %v; want Time near Local", got.Time, got.Local, got.RTT)
	}
	if err := n.SetMembers(t.Context(), map[string]string{"a:1": "x", "b:2": "y"}); err != nil {
		t.Fatalf("SetMembers: %v", err)
	}
	m, err := n.Members(t.Context())
	if want := map[string]string{"a:1": "x", "b:2": "y"}; err != nil || !maps.Equal(m, want) {
		t.Errorf("Members = %v, %v; want %v", m, err, want)
	}
}

func TestRedisNodeReportsRunIDOnConnect(t *testing.T) {
	p := startRedis(t)
	n := p.node(t)
	var mu sync.Mutex
	var seen []string
	n.WatchConnects(func(runID string) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, runID)
	})
	got, err := n.Probe(t.Context()) // the first connection
	if err != nil {
		t.Fatalf("Probe: %v", err)
	}
	if _, err := n.Members(t.Context()); err != nil { // reuses it
		t.Fatalf("Members: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != got.RunID {
		t.Errorf("watcher saw %v; want [%s], once", seen, got.RunID)
	}
}
