package redisnode

import (
	"testing"

	"github.com/redlock-proxy/redlock-proxy/internal/wire"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// The fan-out's NOSCRIPT test reads a reply as noScript reads the
// error of one (go-redis's HasErrorPrefix): KVRocks' "ERR NOSCRIPT"
// is NOSCRIPT too (review30 N1).
func TestIsNoScriptAsTheSingleOpPath(t *testing.T) {
	c := &quorum.Command{Src: "return 1"}
	for _, v := range []any{wire.Error("NOSCRIPT No matching script."), wire.Error("ERR NOSCRIPT No matching script"), wire.Error("ERR unknown"), "NOSCRIPT", nil} {
		e, _ := v.(wire.Error)
		var err error
		if e != "" {
			err = e
		}
		if got, want := isNoScript(v), noScript(c, err); got != want {
			t.Errorf("isNoScript(%#v) = %v; the single op's path reads %v", v, got, want)
		}
	}
}
