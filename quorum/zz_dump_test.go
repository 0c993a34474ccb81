package quorum

import (
	"os"
	"testing"
	"time"

	lscript "github.com/redlock-proxy/redlock-proxy/script"
)

func TestZZDump(t *testing.T) {
	body := "if redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n    redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2])\n    return \"OK\"\nelse\n    return redis.call(\"SET\", KEYS[1], ARGV[1], \"NX\", \"PX\", ARGV[2])\nend"
	a, err := lscript.Admit([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	cm := map[string]int{}
	for n, p := range lscript.Commands {
		cm[n] = int(p)
	}
	w := wrapBody(a.Source, cm, a.Literals, 60*time.Second)
	os.WriteFile("/tmp/wrapdump/gozero.lua", []byte(w.eval), 0o644)
	os.WriteFile("/tmp/wrapdump/gozerolib.lua", []byte(w.lib), 0o644)
	os.WriteFile("/tmp/wrapdump/gozerolib.name", []byte(w.fn), 0o644)
}
