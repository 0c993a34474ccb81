package main

import (
	"os"
	"strings"
	"testing"
)

func TestShippedConfigIsTheDefault(t *testing.T) {
	shipped, err := os.ReadFile("config.toml")
	if err != nil {
		t.Fatal(err)
	}
	if string(shipped) != defaultConfig {
		t.Errorf("the embedded default differs from config.toml")
	}
}

func TestRunRefusesBadFlagsAndConfig(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"-bogus"}, "bogus"},
		{"bad node", []string{"-nodes", "nohost"}, `nodes: "nohost" is not host:port`},
		{"listen taken by garbage", []string{"-listen", "256.0.0.1:1", "-nodes", "127.0.0.1:1"}, "256.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := run(tt.args); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run(%q) = %v; want an error containing %q", tt.args, err, tt.want)
			}
		})
	}
}
