package quorum

import (
	"errors"
	"testing"
)

func TestKillReply(t *testing.T) {
	unkillable := replyErr("UNKILLABLE Sorry the script already executed write commands against the dataset.")
	tests := []struct {
		name    string
		err     error
		want    Kill
		text    string
		wantErr bool
	}{
		{"OK: stopped", nil, KillDone, "", false},
		{"NOTBUSY", replyErr("NOTBUSY No scripts in execution right now."), KillNotBusy, "", false},
		{"UNKILLABLE keeps Redis's text", unkillable, KillUnkillable, unkillable.Error(), false},
		{"any other error reply is a failure", replyErr("NOPERM this user has no permissions"), KillNotBusy, "", true},
		{"an I/O error is a failure", errors.New("i/o timeout"), KillNotBusy, "", true},
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
