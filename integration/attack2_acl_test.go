package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAttack2ACLRunbookReads: the runbook's reads (SCAN, SCAN TYPE,
// TYPE, HGETALL, STRLEN, DBSIZE) and SCRIPT KILL through a proxy whose
// masters give its user only the docs' least-privilege ACL: each
// answers as one Redis, and no master logs a denied command.
func TestAttack2ACLRunbookReads(t *testing.T) {
	masters := []*redisProc{startACLMaster(t), startACLMaster(t), startACLMaster(t)}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	text := fmt.Sprintf("nodes = [%q, %q, %q]\nnode_username = \"redlock\"\nnode_password = \"node-secret\"\nmax_ttl = \"10s\"\nmin_ttl = \"500ms\"\nnode_timeout = \"200ms\"\nprobe_interval = \"100ms\"\n",
		masters[0].Addr, masters[1].Addr, masters[2].Addr)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBinary(t, "-config", cfg)
	c := newClient(t, b.Addr, nil)
	ctx := t.Context()
	if err := c.SetNX(ctx, "acl2:k", "tok", 10*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	var err error
	for cur := uint64(0); ; {
		var more []string
		more, cur, err = c.Scan(ctx, cur, "acl2:*", 100).Result()
		keys = append(keys, more...)
		if err != nil || cur == 0 {
			break
		}
	}
	if err != nil || len(keys) != 1 || keys[0] != "acl2:k" {
		t.Errorf("SCAN MATCH acl2:* = %v, %v; want [acl2:k]", keys, err)
	}
	if _, _, err := c.ScanType(ctx, 0, "acl2:*", 100, "string").Result(); err != nil {
		t.Errorf("SCAN TYPE string: %v", err)
	}
	if v, err := c.Type(ctx, "acl2:k").Result(); err != nil || v != "string" {
		t.Errorf("TYPE = %q, %v", v, err)
	}
	if n, err := c.StrLen(ctx, "acl2:k").Result(); err != nil || n != 3 {
		t.Errorf("STRLEN = %d, %v", n, err)
	}
	if _, err := c.DBSize(ctx).Result(); err != nil {
		t.Errorf("DBSIZE: %v", err)
	}
	if err := c.Do(ctx, "SCRIPT", "KILL").Err(); err == nil || errText(err)[:7] != "NOTBUSY" {
		t.Errorf("SCRIPT KILL with no script running = %v; want NOTBUSY", err)
	}
	for i, m := range masters {
		log, err := adminClient(t, m.Addr).Do(ctx, "ACL", "LOG").Slice()
		if err != nil || len(log) != 0 {
			t.Errorf("master %d ACL LOG = %v, %v; want no denied command", i, log, err)
		}
	}
}
