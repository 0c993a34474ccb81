package integration

import (
	"testing"
)

// attack14 (a net, held): one redis-server 7.0.15 crashes on EVAL
// "error({})" (Redis's own bug: an error table with no err). Through the
// proxy the wrapper catches the table and answers an error; no master
// goes down, also by EVALSHA after SCRIPT LOAD. Any path that ever sends
// a client's body to the masters as it is would fail this.
func TestAttack14ErrorTableCrashesNoMaster(t *testing.T) {
	c := startNodes(t, 3)
	p := startProxy(t, latchConfig(), engineConfig(), c.addrs...)
	for _, args := range [][]any{
		{"EVAL", "error({})", "1", "k"},
		{"EVAL", "return redis.call('get', KEYS[1]) or error({})", "1", "k"},
		{"SCRIPT", "LOAD", "error({})"},
		{"EVAL_RO", "error({})", "1", "k"},
		{"FCALL", "x", "0"},
	} {
		v, err := p.Client.Do(t.Context(), args...).Result()
		t.Logf("%q: %v, %v", args, v, err)
	}
	for i, d := range c.direct {
		if err := d.Ping(t.Context()).Err(); err != nil {
			t.Errorf("master %d after the scripts: %v", i, err)
		}
	}
	if sha, err := p.Client.Do(t.Context(), "SCRIPT", "LOAD", "error({})").Text(); err == nil {
		v, err := p.Client.Do(t.Context(), "EVALSHA", sha, "1", "k").Result()
		t.Logf("EVALSHA %s: %v, %v", sha, v, err)
		for i, d := range c.direct {
			if err := d.Ping(t.Context()).Err(); err != nil {
				t.Errorf("master %d after EVALSHA: %v", i, err)
			}
		}
	}
}
