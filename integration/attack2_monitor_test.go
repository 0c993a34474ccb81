package integration

import (
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/internal/acl"
	"github.com/redlock-proxy/redlock-proxy/proxy"
)

// TestAttack2MonitorRedactsEveryPassword: passwords a client sends in
// shapes the redaction did not expect stay out of MONITOR, as Redis keeps
// them out of its own: HELLO's AUTH after a SETNAME whose name is "auth",
// and CONFIG SET of requirepass / masterauth (refused by the proxy, but
// served, so shown).
func TestAttack2MonitorRedactsEveryPassword(t *testing.T) {
	_, p := setup(t, 3, proxy.Config{Users: []acl.UserConfig{
		{Name: "admin", Password: "admin-pw", Allow: []string{"lock", "read", "admin"}},
		{Name: "app", Password: "app-pw-secret1", Allow: []string{"lock", "read"}},
	}})
	mc, mr := monitorConn(t, p.Addr, "admin", "admin-pw")
	app := dialResp(t, p.Addr)
	for _, c := range [][]string{
		{"HELLO", "2", "SETNAME", "auth", "AUTH", "app", "app-pw-secret1"},
		{"CONFIG", "SET", "requirepass", "cfg-secret2"},
		{"CONFIG", "SET", "masterauth", "cfg-secret3"},
		{"PING", "done"},
	} {
		if _, err := app.do(cmdOf(c...)); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
	}
	lines := readUntil(t, mc, mr, `"done"`)
	for _, l := range lines {
		for _, secret := range []string{"app-pw-secret1", "cfg-secret2", "cfg-secret3"} {
			if strings.Contains(l, secret) {
				t.Errorf("MONITOR line shows a password: %s", l)
			}
		}
	}
}
