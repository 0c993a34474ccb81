package proxy

import "testing"

// A full slow log drops its oldest entry per add without copying the
// others each time, and keeps the newest max in order.
func TestSlowlogAddCopiesRarely(t *testing.T) {
	var l slowlog
	const max = 128
	for range max {
		l.add(slowEntry{}, max)
	}
	allocs := testing.AllocsPerRun(10*max, func() { l.add(slowEntry{}, max) })
	if allocs > 0.1 {
		t.Errorf("add allocates %.2f times per entry once full; want a copy per many entries", allocs)
	}
	if len(l.entries) != max || l.entries[0].id != l.nextID-max || l.entries[max-1].id != l.nextID-1 {
		t.Errorf("slow log = %d entries, ids %d..%d; want the newest %d", len(l.entries), l.entries[0].id, l.entries[len(l.entries)-1].id, max)
	}
}
