package integration

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// `go install github.com/redlock-proxy/redlock-proxy@<version>` builds a
// binary that reports that version, from the module's build information,
// in INFO (redis_build_id in the server section, proxy_version in the
// proxy's own), in HELLO and in the build_info metric. The
// module is published to a file-system GOPROXY as the go command would
// fetch it from a real one (its tracked files, zipped at that version);
// its dependencies come from the module cache, so nothing is downloaded.
func TestGoInstallReportsModuleVersion(t *testing.T) {
	skipLong(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	modPath := goOutput(t, ctx, goBin, "list", "-m")
	modCache := goOutput(t, ctx, goBin, "env", "GOMODCACHE")
	// A version of this run's own: the dependencies build from the user's
	// module cache, where their compiled packages are cached already, and
	// the published version is removed from it afterwards.
	installVersion := fmt.Sprintf("v0.0.1-installtest.%d", time.Now().UnixNano())
	t.Cleanup(func() {
		os.RemoveAll(filepath.Join(modCache, filepath.FromSlash(modPath)+"@"+installVersion))
		files, _ := filepath.Glob(filepath.Join(modCache, "cache", "download", filepath.FromSlash(modPath), "@v", installVersion+".*"))
		files = append(files, filepath.Join(modCache, "cache", "download", filepath.FromSlash(modPath), "@v", "list"))
		for _, f := range files {
			os.Remove(f)
		}
	})
	proxyDir := t.TempDir()
	publishModule(t, ctx, proxyDir, modPath, installVersion)

	gobin := t.TempDir()
	cmd := exec.CommandContext(ctx, goBin, "install", modPath+"@"+installVersion)
	cmd.Dir = t.TempDir() // outside the module: install as a user would
	cmd.Env = append(os.Environ(),
		"GOBIN="+gobin,
		"GOPROXY=file://"+filepath.ToSlash(proxyDir)+",file://"+filepath.ToSlash(filepath.Join(modCache, "cache", "download")),
		"GOSUMDB=off", "GOFLAGS=-modcacherw", "GOTOOLCHAIN=local",
		"GOPRIVATE=", "GONOPROXY=", "GONOSUMDB=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install %s@%s: %v\n%s", modPath, installVersion, err, out)
	}
	bin := filepath.Join(gobin, filepath.Base(modPath))

	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	conf := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("admin_listen = %q\nshutdown_grace = \"1s\"\n", adminAddr)), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startBinaryAt(t, bin, nil, "-config", conf)
	c := newClient(t, b.Addr, nil)

	info, err := c.Info(ctx, "server").Result()
	if err != nil || !strings.Contains(info, "\r\nredis_build_id:"+installVersion+"\r\n") {
		t.Errorf("INFO server = %q, %v; want redis_build_id:%s", info, err, installVersion)
	}
	if !strings.Contains(info, "\r\nredis_version:7.0.0\r\n") {
		t.Errorf("INFO server = %q; want redis_version:7.0.0 kept (clients choose features by it)", info)
	}
	if info, err := c.Info(ctx).Result(); err != nil || !strings.Contains(info, "\r\nproxy_version:"+installVersion+"\r\n") {
		t.Errorf("INFO = %q, %v; want proxy_version:%s in the proxy's section", info, err, installVersion)
	}
	hello, err := c.Do(ctx, "HELLO", "3").Result()
	if m, ok := hello.(map[any]any); err != nil || !ok || m["proxy_version"] != installVersion || m["version"] != "7.0.0" {
		t.Errorf("HELLO 3 = %#v, %v; want proxy_version %s beside version 7.0.0", hello, err, installVersion)
	}
	metrics := httpGet(t, ctx, "http://"+adminAddr+"/metrics")
	if !strings.Contains(metrics, `version="`+installVersion+`"`) || !strings.Contains(metrics, "redlock_proxy_build_info{") {
		t.Errorf("/metrics has no redlock_proxy_build_info with version=%q:\n%s", installVersion, metrics)
	}
	c.Close() // a client still open holds the drain for shutdown_grace
	b.stop(t)
}

// goOutput runs the go command in the module and returns its output.
func goOutput(t *testing.T, ctx context.Context, goBin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// publishModule lays out the module's tracked files, as they are on
// disk (committed or new, not ignored), at version in a GOPROXY
// directory: list, .info, .mod and .zip.
func publishModule(t *testing.T, ctx context.Context, dir, modPath, version string) {
	t.Helper()
	ls := exec.CommandContext(ctx, "git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = ".."
	out, err := ls.Output()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git ls-files: %v", err)
		}
		t.Skipf("git ls-files: %v (not a checkout)", err)
	}
	at := filepath.Join(dir, filepath.FromSlash(modPath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	zf, err := os.Create(filepath.Join(at, version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zf.Close()
	zw := zip.NewWriter(zf)
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		fi, err := os.Lstat(filepath.Join("..", name))
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink (not allowed in a module zip)
		}
		src, err := os.Open(filepath.Join("..", name))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(modPath + "@" + version + "/" + name)
		if err == nil {
			_, err = io.Copy(w, src)
		}
		src.Close()
		if err != nil {
			t.Fatalf("zip %s: %v", name, err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"list":            version + "\n",
		version + ".info": fmt.Sprintf(`{"Version":%q,"Time":"2026-01-01T00:00:00Z"}`, version),
		version + ".mod":  string(gomod),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(at, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// httpGet returns the body of url.
func httpGet(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(body)
}
