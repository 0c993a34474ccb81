package app

import (
	"fmt"
	"log/slog"
	"reflect"
	"strings"
)

// Reload reads the config file again, with the same flags, and applies
// its live keys: the server's settings, the log level, shutdown_grace,
// and the client TLS certificates (read again from the same paths). A
// changed static key is logged and its running value stays. An error
// means the reload was refused and nothing changed.
func (a *App) Reload() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	next, err := a.load()
	if err != nil {
		return err
	}
	for _, k := range notLive(a.running, next) {
		a.log.Warn("reload: not changed live, the running value stays; restart to change it", "key", k.key, "running", k.running, "file", k.file)
	}
	nc := next.proxyConfig(a.log)
	if err := fitFileLimit(&nc, a.reserve, a.log); err != nil {
		return err
	}
	// Checked against the running engine's TTL bounds before anything
	// changes, so that a refusal leaves the certificates as they were.
	if err := nc.Validate(a.engine.MinTTL(), a.engine.MaxTTL()); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if a.certs != nil {
		if err := a.certs.Reload(); err != nil {
			return err
		}
	}
	if err := a.srv.Reload(nc); err != nil {
		return err
	}
	a.level.Set(slog.Level(next.LogLevel))
	a.pc, a.grace = nc, next.ShutdownGrace.Duration
	a.log.Info("config reloaded", "tls_certificates", a.certs != nil, "log_level", next.LogLevel, "max_clients", next.MaxClients,
		"idle_timeout", next.IdleTimeout.Duration, "shutdown_grace", a.grace)
	return nil
}

// liveKey is a key whose change a reload cannot apply.
type liveKey struct {
	key           string
	running, file string
}

// notLive lists the static keys that differ between the running config
// and the file: every field of static, by its toml name, in field order.
// Values are compared after the engine's defaults, as text; a field
// tagged reload:"hidden" (a password) is named, never shown.
// embedded_nodes counts only when the process runs the demo nodes.
func notLive(running, file fileConfig) []liveKey {
	r, f := reflect.ValueOf(running.static.withDefaults()), reflect.ValueOf(file.static.withDefaults())
	var keys []liveKey
	for i := range r.NumField() {
		sf := r.Type().Field(i)
		key, _, _ := strings.Cut(sf.Tag.Get("toml"), ",")
		rv, fv := showValue(r.Field(i)), showValue(f.Field(i))
		if rv == fv || key == "embedded_nodes" && len(running.Nodes) > 0 {
			continue
		}
		if sf.Tag.Get("reload") == "hidden" {
			rv, fv = "(hidden)", "(hidden)"
		}
		keys = append(keys, liveKey{key, rv, fv})
	}
	return keys
}

// withDefaults returns s with the engine's settings as the engine runs
// them, so that a key left out compares equal to its default.
func (s static) withDefaults() static {
	q := s.quorumConfig(nil).WithDefaults()
	s.NodeTimeout.Duration, s.DriftFactor = q.NodeTimeout, q.DriftFactor
	s.MinTTL.Duration, s.MaxTTL.Duration = q.MinTTL, q.MaxTTL
	s.ProbeInterval.Duration, s.ClockJumpLimit.Duration = q.ProbeInterval, q.ClockJumpLimit
	s.TrustFsync = q.TrustFsyncAlways
	return s
}

// showValue is a config value as a log line shows it: a list joined by
// commas, a duration as "50ms".
func showValue(v reflect.Value) string {
	if v.Kind() == reflect.Slice {
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprint(v.Index(i).Interface())
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v.Interface())
}
