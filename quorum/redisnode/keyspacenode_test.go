package redisnode

import (
	"testing"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

func TestParseKeyspace(t *testing.T) {
	tests := []struct {
		name, text string
		want       quorum.KeyCount
	}{
		{"empty", "# Keyspace\r\n", quorum.KeyCount{}},
		{"db0", "# Keyspace\r\ndb0:keys=7,expires=5,avg_ttl=1234\r\n", quorum.KeyCount{Keys: 7, Expires: 5}},
		{"other dbs ignored", "# Keyspace\r\ndb1:keys=9,expires=0,avg_ttl=0\r\ndb0:keys=2,expires=2,avg_ttl=0\r\n", quorum.KeyCount{Keys: 2, Expires: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseKeyspace(tt.text); got != tt.want {
				t.Errorf("parseKeyspace = %+v; want %+v", got, tt.want)
			}
		})
	}
}
