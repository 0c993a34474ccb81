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

func TestCommand(t *testing.T) {
	tests := []struct {
		name string
		keys Keys
		ok   bool
	}{
		{"get", FirstKey, true},
		{"set", FirstKey, true},
		{"del", AllKeys, true},
		{"exists", AllKeys, true},
		{"unlink", AllKeys, true},
		{"zscore", FirstKey, true}, // the last in order
		{"publish", NoKeys, true},
		{"select", NoKeys, true},
		{"time", NoKeys, true},
		{"GET", NoKeys, false}, // callers lower-case first
		{"eval", NoKeys, false},
		{"flushall", NoKeys, false},
		{"config", NoKeys, false},
		{"", NoKeys, false},
		{"zz", NoKeys, false},
	}
	for _, tt := range tests {
		if keys, ok := Command(tt.name); keys != tt.keys || ok != tt.ok {
			t.Errorf("Command(%q) = %v, %v; want %v, %v", tt.name, keys, ok, tt.keys, tt.ok)
		}
	}
	for name, keys := range Commands() {
		if got, ok := Command(name); got != keys || !ok {
			t.Errorf("Command(%q) = %v, %v; want %v, true", name, got, ok, keys)
		}
	}
}
