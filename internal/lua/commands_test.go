package lua

import (
	"maps"
	"slices"
	"testing"
)

func TestCommandsSortedAndUnique(t *testing.T) {
	names := slices.Collect(maps.Keys(maps.Collect(Commands())))
	slices.Sort(names)
	var inOrder []string
	for name := range Commands() {
		inOrder = append(inOrder, name)
	}
	if !slices.Equal(inOrder, names) {
		t.Errorf("Commands() = %v; want each name once, in order: %v", inOrder, names)
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		name string
		want Command
		ok   bool
	}{
		{"get", Command{Keys: FirstKey, ReadOnly: true}, true},
		{"set", Command{Keys: FirstKey}, true},
		{"del", Command{Keys: AllKeys}, true},
		{"exists", Command{Keys: AllKeys, ReadOnly: true}, true},
		{"unlink", Command{Keys: AllKeys}, true},
		{"getrange", Command{Keys: FirstKey}, true},               // a read, snapshotted as a write
		{"zscore", Command{Keys: FirstKey, ReadOnly: true}, true}, // the last in order
		{"publish", Command{Keys: NoKeys}, true},
		{"select", Command{Keys: NoKeys}, true},
		{"time", Command{Keys: NoKeys}, true},
		{"GET", Command{}, false}, // callers lower-case first
		{"eval", Command{}, false},
		{"flushall", Command{}, false},
		{"config", Command{}, false},
		{"", Command{}, false},
		{"zz", Command{}, false},
	}
	for _, tt := range tests {
		if got, ok := Lookup(tt.name); got != tt.want || ok != tt.ok {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	for name, c := range Commands() {
		if got, ok := Lookup(name); got != c || !ok {
			t.Errorf("Lookup(%q) = %+v, %v; want %+v, true", name, got, ok, c)
		}
		if c.ReadOnly && c.Keys == NoKeys {
			t.Errorf("%s is ReadOnly without keys; ReadOnly is for commands with keys", name)
		}
	}
}
