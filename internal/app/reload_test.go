package app

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// tomlKey is a field's key in config.toml.
func tomlKey(f reflect.StructField) string {
	key, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
	return key
}

// change makes v differ from what it was, whatever its kind: a string
// grows, a number or a duration goes up, a bool flips, a list gains a
// changed element.
func change(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Int, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float() + 0.01)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Struct:
		change(t, v.Field(0))
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		change(t, e)
		v.Set(reflect.Append(v, e))
	default:
		t.Fatalf("change: no way to change a %s", v.Type())
	}
}

// Every key of config.toml is a field of static or of live, nowhere else,
// and once; the shipped config.toml documents each.
func TestEveryKeyIsStaticOrLive(t *testing.T) {
	ft := reflect.TypeFor[fileConfig]()
	var parts []string
	for f := range ft.Fields() {
		parts = append(parts, f.Name)
		if !f.Anonymous {
			t.Errorf("fileConfig.%s is in neither static nor live: a reload would not know whether it may change it", f.Name)
		}
	}
	if !slices.Equal(parts, []string{"static", "live"}) {
		t.Errorf("fileConfig is made of %v; want static and live", parts)
	}
	text := shipped(t)
	seen := map[string]string{}
	for _, part := range []reflect.Type{reflect.TypeFor[static](), reflect.TypeFor[live]()} {
		for f := range part.Fields() {
			key := tomlKey(f)
			if key == "" {
				t.Errorf("%s.%s has no toml key", part.Name(), f.Name)
				continue
			}
			if other, ok := seen[key]; ok {
				t.Errorf("key %s is in both %s and %s", key, other, part.Name())
			}
			seen[key] = part.Name()
			documented := regexp.MustCompile(`(?m)^#? *` + regexp.QuoteMeta(key) + ` +=|\[\[` + regexp.QuoteMeta(key) + `\]\]`)
			if !documented.MatchString(text) {
				t.Errorf("key %s (%s) is not in the shipped config.toml", key, part.Name())
			}
		}
	}
}

// A reload that changes any static key names it, and changes nothing a
// reload hands on; the password is named, never shown.
func TestReloadReportsEveryStaticKey(t *testing.T) {
	running := loadDefault(t) // demo mode: embedded_nodes counts too
	for f := range reflect.TypeFor[static]().Fields() {
		t.Run(tomlKey(f), func(t *testing.T) {
			file := running
			change(t, reflect.ValueOf(&file.static).Elem().FieldByIndex(f.Index))
			keys := notLive(running, file)
			if len(keys) != 1 || keys[0].key != tomlKey(f) {
				t.Fatalf("notLive after changing %s = %+v; want it alone", tomlKey(f), keys)
			}
			if hidden := f.Tag.Get("reload") == "hidden"; hidden != (keys[0].running == "(hidden)" && keys[0].file == "(hidden)") {
				t.Errorf("notLive(%s) = %+v; hidden is %v", tomlKey(f), keys[0], hidden)
			}
			if !reflect.DeepEqual(running.live, file.live) {
				t.Errorf("changing %s changed a live key", tomlKey(f))
			}
		})
	}
	// With real nodes, embedded_nodes means nothing: not named.
	running.Nodes = []string{"127.0.0.1:1"}
	file := running
	file.EmbeddedNodes++
	if k := notLive(running, file); len(k) != 0 {
		t.Errorf("notLive(embedded_nodes changed, real nodes) = %+v; want nothing", k)
	}
}

// applied is what Reload hands on from a config: the server's config,
// the log level and shutdown_grace.
func applied(fc fileConfig) []any {
	return []any{fc.proxyConfig(nil), fc.LogLevel, fc.ShutdownGrace.Duration}
}

// A reload that changes any live key applies it, and names no static key.
func TestReloadAppliesEveryLiveKey(t *testing.T) {
	running := loadDefault(t)
	for f := range reflect.TypeFor[live]().Fields() {
		t.Run(tomlKey(f), func(t *testing.T) {
			file := running
			change(t, reflect.ValueOf(&file.live).Elem().FieldByIndex(f.Index))
			if reflect.DeepEqual(applied(running), applied(file)) {
				t.Errorf("changing %s changes nothing a reload applies", tomlKey(f))
			}
			if k := notLive(running, file); len(k) != 0 {
				t.Errorf("notLive after changing %s = %+v; want nothing", tomlKey(f), k)
			}
		})
	}
}

func TestNotLiveNamesSafetyKeys(t *testing.T) {
	running := loadDefault(t)
	running.Nodes = []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}
	file := running
	file.Nodes = []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:4"}
	file.NodeTimeout.Duration = 20 * time.Millisecond
	file.DriftFactor = 0.02
	file.MinTTL.Duration = 200 * time.Millisecond
	file.MaxTTL.Duration = time.Minute
	file.NodePassword = "s3cret"
	// Reloadable keys are not named.
	file.MaxClients, file.LogLevel, file.IdleTimeout.Duration = 5, logLevel(-4), time.Minute
	var got []string
	for _, k := range notLive(running, file) {
		got = append(got, k.key+"="+k.running+"->"+k.file)
		if strings.Contains(k.running+k.file, "s3cret") {
			t.Errorf("notLive shows the node password: %+v", k)
		}
	}
	want := []string{
		"nodes=127.0.0.1:1,127.0.0.1:2,127.0.0.1:3->127.0.0.1:1,127.0.0.1:2,127.0.0.1:4",
		"node_timeout=50ms->20ms", "drift_factor=0.01->0.02", "min_ttl=100ms->200ms", "max_ttl=5m0s->1m0s",
		"node_password=(hidden)->(hidden)",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("notLive = %q; want %q", got, want)
	}
	// Defaults compare equal to the values they stand for; no list and an
	// empty one are the same list.
	file = running
	file.NodeTimeout.Duration = 0
	if k := notLive(running, file); len(k) != 0 {
		t.Errorf("notLive(node_timeout 50ms vs unset) = %+v; want nothing", k)
	}
	running.Nodes, file.Nodes = nil, []string{}
	if k := notLive(running, file); len(k) != 0 {
		t.Errorf("notLive(nodes nil vs []) = %+v; want nothing", k)
	}
}
