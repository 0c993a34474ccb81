package redisnode

import (
	"strings"
	"testing"
	"time"

	"github.com/yuin/gopher-lua/parse"

	"github.com/redlock-proxy/redlock-proxy/internal/clientlua"
	"github.com/redlock-proxy/redlock-proxy/internal/lua"
)

// TestWrapperFormsParse parses, as Lua 5.1, every form the wrapper is
// assembled into from its lua/ files: the script around a body, the one
// library, a body's chunk, and the undo script. The real servers run
// them in the other tests; this names a broken assembly at once.
func TestWrapperFormsParse(t *testing.T) {
	bodies := map[string]string{
		"go-zero":         clientlua.GoZeroLock,
		"Redisson unlock": clientlua.RedissonUnlock,
		"Symfony save":    clientlua.SymfonySave,
		"redis-semaphore": clientlua.SemaphoreAcquire,
		"varargs":         `return select("#", ...)`,
	}
	for name, body := range bodies {
		w := wrapBody(body, []string{"1", "__write__"}, time.Minute)
		shebang, lib, _ := strings.Cut(w.lib.text, "\n")
		if shebang != "#!lua name="+w.fn {
			t.Errorf("%s: library starts %q; want #!lua name=%s", name, shebang, w.fn)
		}
		for form, src := range map[string]string{"script": w.eval, "library": lib, "chunk": w.lib.chunk} {
			if _, err := parse.Parse(strings.NewReader(src), form); err != nil {
				t.Errorf("%s as a %s: %v", name, form, err)
			}
			if strings.Contains(src, "__RLP_") || strings.Contains(src, "${") {
				t.Errorf("%s as a %s keeps a placeholder", name, form)
			}
		}
		// The chunk puts the body's first line on its own first line.
		if first, _, _ := strings.Cut(w.lib.chunk, "\n"); !strings.HasSuffix(first, strings.SplitN(body, "\n", 2)[0]) {
			t.Errorf("%s: chunk's first line %q does not end with the body's", name, first)
		}
	}
	if _, err := parse.Parse(strings.NewReader(undoEffectScript.src), "undo"); err != nil {
		t.Errorf("undo script: %v", err)
	}
}

// TestWrapperKindsFromAllowList checks the wrapper's kind chain against
// the allow-list: every command once, and its kind from its keys and
// whether it writes.
func TestWrapperKindsFromAllowList(t *testing.T) {
	order := commandOrder()
	n := 0
	for name := range lua.Commands() {
		if got := strings.Count(" "+strings.Join(order, " ")+" ", " "+name+" "); got != 1 {
			t.Errorf("commandOrder() lists %s %d times; want once", name, got)
		}
		n++
	}
	if len(order) != n {
		t.Errorf("len(commandOrder()) = %d; want %d, the allow-list's", len(order), n)
	}
	for _, tt := range []struct {
		name string
		want int
	}{
		{"get", 1}, {"exists", 2}, {"set", 3}, {"del", 4}, {"getrange", 3},
		{"time", 0}, {"publish", 0}, {"select", 5},
	} {
		c, ok := lua.Lookup(tt.name)
		if got := commandKind(tt.name, c); !ok || got != tt.want {
			t.Errorf("commandKind(%s) = %d (allowed: %v); want %d", tt.name, got, ok, tt.want)
		}
	}
}

// Every script the node runs, as luaScript and newScript assembled it,
// is Lua that parses, and keeps no placeholder.
func TestNodeScriptsParse(t *testing.T) {
	scripts := map[string]*script{
		"acquire": acquireScript, "undo": undoScript, "release": releaseScript, "extend": extendScript,
		"inspect": inspectScript, "delete": deleteScript, "read_key": readKeyScript, "undo_effect": undoEffectScript,
		"counter_read": counterReadScript, "counter_fence": counterFenceScript, "counter_write": counterWriteScript,
		"counter_mark": counterMarkScript, "counter_seed": counterSeedScript, "counter_name": counterNameScript,
		"latch_set": latchSetScript, "latch_undo": latchUndoScript, "latch_decr": latchDecrScript,
		"latch_claim": latchClaimScript, "latch_del": latchDelScript, "latch_reset": latchResetScript,
		"rwlock_take": rwTakeScript, "rwlock_undo": rwUndoScript, "rwlock_unlock": rwUnlockScript,
		"rwlock_force": rwForceScript, "rwlock_renew": rwRenewScript, "rwlock_publish": rwPublishScript,
		"rwlock_renewlock": rwRenewLockScript, "rwlock_wunlock": rwWriteUnlockScript,
	}
	for name, s := range scripts {
		if _, err := parse.Parse(strings.NewReader(s.src), name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if strings.Contains(s.src, "__RLP_") {
			t.Errorf("%s keeps a placeholder", name)
		}
	}
}
