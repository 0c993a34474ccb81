package redisnode

import (
	"errors"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

func TestKillReply(t *testing.T) {
	unkillable := replyError("UNKILLABLE Sorry the script already executed write commands against the dataset.")
	tests := []struct {
		name    string
		err     error
		want    quorum.Kill
		text    string
		wantErr bool
	}{
		{"OK: stopped", nil, quorum.KillDone, "", false},
		{"NOTBUSY", replyError("NOTBUSY No scripts in execution right now."), quorum.KillNotBusy, "", false},
		{"UNKILLABLE keeps Redis's text", unkillable, quorum.KillUnkillable, unkillable.Error(), false},
		{"any other error reply is a failure", replyError("NOPERM this user has no permissions"), quorum.KillNotBusy, "", true},
		{"an I/O error is a failure", errors.New("i/o timeout"), quorum.KillNotBusy, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, text, err := killReply(tt.err)
			if k != tt.want || text != tt.text || (err != nil) != tt.wantErr {
				t.Errorf("killReply(%v) = %v, %q, %v; want %v, %q, error %v", tt.err, k, text, err, tt.want, tt.text, tt.wantErr)
			}
		})
	}
}
