package admin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

func states(ss ...quorum.NodeState) []quorum.NodeStatus {
	out := make([]quorum.NodeStatus, len(ss))
	for i, s := range ss {
		out[i] = quorum.NodeStatus{Addr: "n" + string(rune('0'+i)), State: s}
	}
	return out
}

func TestReadiness(t *testing.T) {
	up, down, q := quorum.StateUp, quorum.StateDown, quorum.StateQuarantined
	tests := []struct {
		name     string
		nodes    []quorum.NodeStatus
		draining bool
		want     bool
	}{
		{"all up", states(up, up, up, up, up), false, true},
		{"two down of five", states(down, down, up, up, up), false, true},
		{"three down of five", states(down, down, down, up, up), false, false},
		// A quarantined node answers, but its grants do not count.
		{"two down, one quarantined", states(down, down, q, up, up), false, false},
		{"draining", states(up, up, up), true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := readiness(tt.nodes, tt.draining); got.Ready != tt.want {
				t.Errorf("readiness = %+v; want ready %v", got, tt.want)
			}
		})
	}
}

func TestHandler(t *testing.T) {
	nodes := states(quorum.StateUp, quorum.StateDown, quorum.StateDown)
	draining := false
	h := Handler(Config{
		Metrics:  http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("m 1\n")) }),
		Status:   func() []quorum.NodeStatus { return nodes },
		Draining: func() bool { return draining },
	})
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz = %d %q; want 200 ok", code, body)
	}
	if code, body := get("/metrics"); code != 200 || body != "m 1\n" {
		t.Errorf("/metrics = %d %q; want the metrics handler's", code, body)
	}
	code, body := get("/readyz")
	var rb ready
	if err := json.Unmarshal([]byte(body), &rb); err != nil {
		t.Fatalf("/readyz body %q: %v", body, err)
	}
	if code != http.StatusServiceUnavailable || rb.Ready || rb.Up != 1 || rb.Quorum != 2 || len(rb.Nodes) != 3 || rb.Nodes[1].State != "down" {
		t.Errorf("/readyz with 1 of 3 up = %d %s; want 503, up 1, quorum 2, node states", code, body)
	}
	nodes = states(quorum.StateUp, quorum.StateUp, quorum.StateDown)
	if code, _ := get("/readyz"); code != http.StatusOK {
		t.Errorf("/readyz with 2 of 3 up = %d; want 200", code)
	}
	draining = true
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"draining":true`) {
		t.Errorf("/readyz while draining = %d %s; want 503, draining", code, body)
	}
	if code, _ := get("/nope"); code != http.StatusNotFound {
		t.Errorf("/nope = %d; want 404", code)
	}
}
