package redisnode

import (
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
