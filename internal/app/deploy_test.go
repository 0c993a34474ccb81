package app

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The files in deploy/ are checked against the config they ship and the
// defaults the code applies to it: the ports, the config path, the user,
// and a stop timeout longer than the longest stop (stopTime). Docker and
// Kubernetes are not run here (no engine, no cluster); the unit is
// verified by systemd-analyze where it is installed (CI installs it).

// deployConfig is deploy/config.toml as the proxy loads it.
func deployConfig(t *testing.T) fileConfig {
	t.Helper()
	fc, err := loadConfig(repoRoot+"deploy/config.toml", true, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := fc.validate(); err != nil {
		t.Fatalf("deploy/config.toml: %v", err)
	}
	return fc
}

// port returns addr's port.
func port(t *testing.T, addr string) string {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%q: %v", addr, err)
	}
	return p
}

const deployConfigPath = "/etc/redlock-proxy/config.toml"

// repoRoot is the repository's root from this package's directory.
const repoRoot = "../../"

// The shipped config serves clients on the default port, on every
// interface, with the admin port on (the probes need it) and the default
// shutdown_grace.
func TestDeployConfigKeepsTheDefaults(t *testing.T) {
	fc := deployConfig(t)
	if port(t, fc.Listen) != port(t, DefaultListen) {
		t.Errorf("deploy/config.toml listen = %q; want the default port %s", fc.Listen, port(t, DefaultListen))
	}
	if host, _, _ := net.SplitHostPort(fc.Listen); host != "0.0.0.0" {
		t.Errorf("deploy/config.toml listen = %q; want every interface (a container's loopback is its own)", fc.Listen)
	}
	if fc.AdminListen == "" {
		t.Errorf("deploy/config.toml has no admin_listen; the health checks need it")
	}
	if fc.ShutdownGrace.Duration != defaultShutdownGrace {
		t.Errorf("deploy/config.toml shutdown_grace = %v; want the default %v", fc.ShutdownGrace.Duration, defaultShutdownGrace)
	}
}

// dockerfile is deploy/Dockerfile's instructions, continuation lines
// joined, as (keyword, rest) pairs.
func dockerfile(t *testing.T) [][2]string {
	t.Helper()
	b, err := os.ReadFile(repoRoot + "deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	var cur string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if cur == "" && (line == "" || strings.HasPrefix(line, "#")) {
			continue
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cur += rest + " "
			continue
		}
		cur += line
		kw, rest, _ := strings.Cut(cur, " ")
		out = append(out, [2]string{strings.ToUpper(kw), strings.TrimSpace(rest)})
		cur = ""
	}
	return out
}

// The image is multi-stage, builds a static binary, runs it as a
// non-root user with the shipped config at the path its command names,
// exposes the config's ports and checks /readyz on the admin port.
func TestDockerfileMatchesConfig(t *testing.T) {
	fc := deployConfig(t)
	var froms, exposed []string
	var user, health, cmd, entry string
	copiedConfig, static := false, false
	for _, in := range dockerfile(t) {
		switch kw, rest := in[0], in[1]; kw {
		case "FROM":
			froms = append(froms, rest)
			user = "" // USER is per stage
		case "ENV", "RUN":
			static = static || strings.Contains(rest, "CGO_ENABLED=0")
		case "COPY":
			copiedConfig = copiedConfig || rest == "deploy/config.toml "+deployConfigPath
		case "USER":
			user = rest
		case "EXPOSE":
			exposed = append(exposed, strings.Fields(rest)...)
		case "HEALTHCHECK":
			health = rest
		case "CMD":
			cmd = rest
		case "ENTRYPOINT":
			entry = rest
		}
	}
	if len(froms) < 2 {
		t.Errorf("FROM %v; want a build stage and a runtime stage", froms)
	}
	if !static {
		t.Errorf("no CGO_ENABLED=0: the binary must be static for the distroless image")
	}
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("final stage USER = %q; want a non-root user", user)
	} else if _, err := strconv.Atoi(uid); err != nil {
		t.Errorf("final stage USER = %q; want a numeric uid (runAsNonRoot can check it)", user)
	}
	if !copiedConfig {
		t.Errorf("no COPY deploy/config.toml %s", deployConfigPath)
	}
	if !strings.Contains(entry, `"/usr/local/bin/redlock-proxy"`) || !strings.Contains(cmd, `"-config", "`+deployConfigPath+`"`) {
		t.Errorf("ENTRYPOINT %s CMD %s; want the binary with -config %s", entry, cmd, deployConfigPath)
	}
	for _, p := range []string{port(t, fc.Listen), port(t, fc.AdminListen)} {
		if !slices.Contains(exposed, p) {
			t.Errorf("EXPOSE %v; want the config's port %s", exposed, p)
		}
	}
	wantProbe := `"-probe", "http://127.0.0.1:` + port(t, fc.AdminListen) + `/readyz"`
	if !strings.Contains(health, wantProbe) {
		t.Errorf("HEALTHCHECK %s; want -probe of /readyz on the admin port: %s", health, wantProbe)
	}
}

// unitService returns the [Service] settings of the systemd unit, each
// key with its values in order.
func unitService(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(repoRoot + "deploy/redlock-proxy.service")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	section := ""
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]":
			k, v, _ := strings.Cut(line, "=")
			out[k] = append(out[k], v)
		}
	}
	return out
}

// The unit runs the binary on the shipped config path, gives a stop more
// time than the proxy's longest stop, reloads with SIGHUP, and is
// hardened: systemd-analyze verifies it and rates its exposure OK.
func TestSystemdUnitMatchesConfig(t *testing.T) {
	fc := deployConfig(t)
	svc := unitService(t)
	if got := svc["ExecStart"]; len(got) != 1 || got[0] != "/usr/local/bin/redlock-proxy -config "+deployConfigPath {
		t.Errorf("ExecStart = %q; want the binary with -config %s", got, deployConfigPath)
	}
	stop, err := time.ParseDuration(strings.Join(svc["TimeoutStopSec"], ""))
	if err != nil || stop <= fc.stopTime() {
		t.Errorf("TimeoutStopSec = %q; want longer than the longest stop, %v (shutdown_grace + command_timeout + 1s)", svc["TimeoutStopSec"], fc.stopTime())
	}
	if got := svc["ExecReload"]; len(got) != 1 || !strings.Contains(got[0], "-HUP") {
		t.Errorf("ExecReload = %q; want SIGHUP (the proxy reloads its config on it)", got)
	}
	for k, v := range map[string]string{"NoNewPrivileges": "yes", "ProtectSystem": "strict", "DynamicUser": "yes", "CapabilityBoundingSet": ""} {
		if got := svc[k]; len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q; want %q", k, got, v)
		}
	}
	if n, err := strconv.Atoi(strings.Join(svc["LimitNOFILE"], "")); err != nil || n < fc.MaxClients+64 {
		t.Errorf("LimitNOFILE = %q; want room for max_clients (%d) and the nodes", svc["LimitNOFILE"], fc.MaxClients)
	}

	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is not installed (.ci/apt-packages lists systemd)")
		}
		t.Skip("systemd-analyze not on PATH")
	}
	// verify wants ExecStart's binary to exist: this test's own stands in.
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(repoRoot + "deploy/redlock-proxy.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "redlock-proxy.service")
	text := strings.Replace(string(b), "ExecStart=/usr/local/bin/redlock-proxy", "ExecStart="+self, 1)
	if err := os.WriteFile(unit, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// verify exits 0 on an unknown key, only saying so: any output fails.
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	// Exposure 0 (locked down) to 10 (unsafe); 2.0 or less rates OK.
	out, err = exec.Command(analyze, "security", "--offline=true", "--threshold=20", unit).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		t.Errorf("systemd-analyze security: exposure over 2.0: %v\n%s", err, lastLines(out, 3))
	case err != nil:
		t.Errorf("systemd-analyze security: %v", err)
	}
}

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// manifests returns the Kubernetes objects in deploy/kubernetes by kind.
func manifests(t *testing.T) map[string]map[string]any {
	t.Helper()
	b, err := os.ReadFile(repoRoot + "deploy/kubernetes/redlock-proxy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var doc map[string]any
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("redlock-proxy.yaml: %v", err)
		}
		out[doc["kind"].(string)] = doc
	}
	return out
}

// at walks v by map keys and list indexes ("spec", "containers", "0").
func at(v any, path ...string) any {
	for _, p := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// The Deployment's ConfigMap is the shipped config; its container runs
// that config at the image's path, as the image's user; its ports are the
// config's; readiness and liveness probe the admin port; its grace period
// is longer than the longest stop; a PodDisruptionBudget keeps a proxy up.
func TestKubernetesManifestsMatchConfig(t *testing.T) {
	fc := deployConfig(t)
	shipped, err := os.ReadFile(repoRoot + "deploy/config.toml")
	if err != nil {
		t.Fatal(err)
	}
	m := manifests(t)
	for _, kind := range []string{"ConfigMap", "Deployment", "Service", "PodDisruptionBudget"} {
		if m[kind] == nil {
			t.Fatalf("deploy/kubernetes/redlock-proxy.yaml has no %s", kind)
		}
	}
	if got := at(m["ConfigMap"], "data", "config.toml"); got != string(shipped) {
		t.Errorf("the ConfigMap's config.toml differs from deploy/config.toml:\n%v", got)
	}
	pod := at(m["Deployment"], "spec", "template", "spec")
	c := at(pod, "containers", "0")
	if args, _ := at(c, "args").([]any); !slices.Equal(args, []any{"-config", deployConfigPath}) {
		t.Errorf("container args = %v; want -config %s", args, deployConfigPath)
	}
	if got := at(c, "volumeMounts", "0", "mountPath"); got != filepath.Dir(deployConfigPath) {
		t.Errorf("config mounted at %v; want %s", got, filepath.Dir(deployConfigPath))
	}
	ports := map[string]string{}
	for _, p := range at(c, "ports").([]any) {
		ports[at(p, "name").(string)] = strconv.Itoa(at(p, "containerPort").(int))
	}
	if ports["redis"] != port(t, fc.Listen) || ports["admin"] != port(t, fc.AdminListen) {
		t.Errorf("container ports %v; want redis %s and admin %s, the config's", ports, port(t, fc.Listen), port(t, fc.AdminListen))
	}
	for probe, path := range map[string]string{"readinessProbe": "/readyz", "livenessProbe": "/healthz"} {
		if at(c, probe, "httpGet", "path") != path || at(c, probe, "httpGet", "port") != "admin" {
			t.Errorf("%s = %v; want GET %s on the admin port", probe, at(c, probe), path)
		}
	}
	grace, _ := at(pod, "terminationGracePeriodSeconds").(int)
	if time.Duration(grace)*time.Second <= fc.stopTime() {
		t.Errorf("terminationGracePeriodSeconds = %d; want longer than the longest stop, %v (shutdown_grace + command_timeout + 1s)", grace, fc.stopTime())
	}
	if at(pod, "securityContext", "runAsNonRoot") != true || at(pod, "securityContext", "runAsUser") != 65532 {
		t.Errorf("pod securityContext = %v; want runAsNonRoot as the image's user 65532", at(pod, "securityContext"))
	}
	labels := at(m["Deployment"], "spec", "selector", "matchLabels")
	if !sameYAML(at(m["PodDisruptionBudget"], "spec", "selector", "matchLabels"), labels) ||
		!sameYAML(at(m["Service"], "spec", "selector"), labels) {
		t.Errorf("the PodDisruptionBudget's and the Service's selectors differ from the Deployment's %v", labels)
	}
	min, _ := at(m["PodDisruptionBudget"], "spec", "minAvailable").(int)
	if replicas, _ := at(m["Deployment"], "spec", "replicas").(int); min < 1 || min >= replicas {
		t.Errorf("minAvailable %d of %d replicas; want at least one kept up and one evictable", min, replicas)
	}
}

var yamlSpace = regexp.MustCompile(`\s+`)

// sameYAML compares two decoded YAML values.
func sameYAML(a, b any) bool {
	ya, _ := yaml.Marshal(a)
	yb, _ := yaml.Marshal(b)
	return a != nil && yamlSpace.ReplaceAllString(string(ya), " ") == yamlSpace.ReplaceAllString(string(yb), " ")
}
