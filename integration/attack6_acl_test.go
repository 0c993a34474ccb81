package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
)

// attack6 A9. The runbook's reads of a lock whole (HGETALL, HGET, ZRANGE,
// OBJECT ENCODING, ...) run quorum/redisnode/lua/read_key.lua, which calls OBJECT
// ENCODING: a command the least-privilege ACL of docs/operations.md (and
// TestLeastPrivilegeNodeACL's proxyACL) does not give. Under it every
// master refuses the script (NOPERM), and the read answers an error with
// every master up. (rwlock_undo.lua's RENAME is missing from it too.)
func TestAttack6RunbookReadsUnderTheDocumentedNodeACL(t *testing.T) {
	masters := []*redisProc{startACLMaster(t), startACLMaster(t), startACLMaster(t)}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.toml")
	text := fmt.Sprintf("nodes = [%q, %q, %q]\nnode_username = \"redlock\"\nnode_password = \"node-secret\"\nmax_ttl = \"30s\"\n",
		masters[0].Addr, masters[1].Addr, masters[2].Addr)
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBinary(t, "-config", cfg)
	c := newClient(t, b.Addr, nil)
	ctx := t.Context()
	owner := "9f1c2d3e-aaaa-bbbb-cccc-000000000001:1"
	if err := redis.NewScript(redissonLock).Run(ctx, c, []string{"acl:who"}, 20000, owner).Err(); err != redis.Nil {
		t.Fatalf("Redisson lock = %v; want nil (acquired)", err)
	}
	if v, err := c.HGetAll(ctx, "acl:who").Result(); err != nil || v[owner] != "1" {
		t.Errorf("HGETALL of a Redisson lock under the documented ACL = %v, %v; want its holder", v, err)
	}
	if v, err := c.ObjectEncoding(ctx, "acl:who").Result(); err != nil || v != "listpack" {
		t.Errorf("OBJECT ENCODING of a Redisson lock under the documented ACL = %q, %v; want listpack", v, err)
	}
	for i, m := range masters {
		if log, err := adminClient(t, m.Addr).Do(ctx, "ACL", "LOG").Slice(); err != nil || len(log) != 0 {
			t.Errorf("master %d ACL LOG = %v, %v; want no denied command", i, log, err)
		}
	}
}
