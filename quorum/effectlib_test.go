package quorum

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// infoInt reads one integer field of INFO section from a node.
func infoInt(t *testing.T, info, field string) int64 {
	t.Helper()
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s = %q", field, v)
			}
			return n
		}
	}
	t.Fatalf("INFO has no %s", field)
	return 0
}

// TestEffectLibraryStaysBounded: distinct scripts served by effect leave a
// node one library, and its functions' memory stays within a few MB
// however many there are (before, each left a library of ~100 KB); a body
// the library dropped, or a library flushed, runs again.
func TestEffectLibraryStaysBounded(t *testing.T) {
	admin, n, e := formEngine(t, asLibrary)
	ctx := t.Context()
	count := 10000
	if testing.Short() {
		count = 1500
	}
	run := func(i int, key string) {
		t.Helper()
		body := fmt.Sprintf(`local v = %d return redis.call("set", KEYS[1], ARGV[1], "NX", "PX", 5000)`, i)
		ne, err := n.runEffect(ctx, e.Wrap(body, nil), newEffectCall([]string{key}, []string{"tok"}, 1), nil)
		if err != nil || ne.refused != "" || ne.reply.Kind != ValueStatus || ne.reply.Str != "OK" {
			t.Fatalf("script %d = %+v, %v; want OK", i, ne, err)
		}
	}
	for i := range count {
		run(i, "k"+strconv.Itoa(i))
	}
	info := admin.Info(ctx, "memory").Val()
	used := infoInt(t, info, "used_memory_vm_functions") + infoInt(t, info, "used_memory_functions")
	t.Logf("%d distinct scripts: used_memory_vm_functions + used_memory_functions = %d bytes", count, used)
	if used > 4<<20 {
		t.Errorf("%d distinct scripts leave %d bytes of functions; want at most 4 MB", count, used)
	}
	libs, err := admin.Do(ctx, "FUNCTION", "LIST").Slice()
	if err != nil || len(libs) != 1 {
		t.Errorf("FUNCTION LIST = %d libraries, %v; want 1", len(libs), err)
	}
	run(0, "again") // dropped from the library's bodies long ago
	if err := admin.Do(ctx, "FUNCTION", "FLUSH").Err(); err != nil {
		t.Fatal(err)
	}
	run(0, "after a flush")
}
