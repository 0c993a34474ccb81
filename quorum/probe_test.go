package quorum

import (
	"maps"
	"sync"
	"testing"
	"time"
)

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
