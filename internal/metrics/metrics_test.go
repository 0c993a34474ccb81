package metrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// scrape serves m's handler once and parses the text it returns.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics = %d", rec.Code)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value returns the value of the series of fam with the given labels
// (name, value pairs): a counter's or gauge's value, a histogram's count.
func value(t *testing.T, fams map[string]*dto.MetricFamily, fam string, labels ...string) float64 {
	t.Helper()
	f, ok := fams[fam]
	if !ok {
		t.Fatalf("no metric family %s", fam)
	}
next:
	for _, m := range f.Metric {
		for i := 0; i < len(labels); i += 2 {
			found := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no series %s%v", fam, labels)
	return 0
}

func TestEventsMoveTheMetrics(t *testing.T) {
	m := New([]string{"n0:1", "n1:1", "n2:1"}, "v-test")
	fams := scrape(t, m)
	for _, name := range []string{"operations_total", "operation_duration_seconds", "node_state", "node_request_duration_seconds",
		"validity_ratio", "clients_connected", "clients_rejected_total", "protocol_errors_total", "build_info"} {
		if _, ok := fams["redlock_proxy_"+name]; !ok {
			t.Errorf("redlock_proxy_%s missing from a fresh scrape", name)
		}
	}
	if v := value(t, fams, "redlock_proxy_node_state", "node", "n1:1", "state", "up"); v != 1 {
		t.Errorf("node_state{n1:1,up} at start = %v; want 1", v)
	}
	if v := value(t, fams, "redlock_proxy_build_info", "version", "v-test"); v != 1 {
		t.Errorf("build_info = %v; want 1", v)
	}

	m.OperationDone(quorum.OpAcquire, quorum.ResultGranted, 3*time.Millisecond)
	m.OperationDone(quorum.OpAcquire, quorum.ResultGranted, 4*time.Millisecond)
	m.OperationDone(quorum.OpRelease, quorum.ResultNoQuorum, 50*time.Millisecond)
	m.Refused(quorum.OpAcquire)
	m.LeaseGranted(quorum.OpAcquire, 980*time.Millisecond, time.Second)
	m.NodeDone(0, "n0:1", time.Millisecond, nil)
	m.NodeDone(2, "n2:1", 50*time.Millisecond, context.DeadlineExceeded)
	m.NodeDone(2, "n2:1", 0, &quorum.NodeError{Err: quorum.ErrNodeDown})
	m.NodeStateChanged(2, "n2:1", quorum.StateUp, quorum.StateDown)
	m.NodeQuarantined(1, "n1:1", quorum.QuarantineRestart)
	m.ClientConnected()
	m.ClientConnected()
	m.ClientClosed()
	m.ClientRejected()
	m.ProtocolError()

	fams = scrape(t, m)
	tests := []struct {
		fam    string
		labels []string
		want   float64
	}{
		{"redlock_proxy_operations_total", []string{"op", "acquire", "outcome", "granted"}, 2},
		{"redlock_proxy_operations_total", []string{"op", "acquire", "outcome", "refused"}, 1},
		{"redlock_proxy_operations_total", []string{"op", "release", "outcome", "no_quorum"}, 1},
		{"redlock_proxy_operations_total", []string{"op", "read", "outcome", "granted"}, 0},
		{"redlock_proxy_operation_duration_seconds", []string{"op", "acquire"}, 2}, // refusals take no engine time
		{"redlock_proxy_validity_ratio", nil, 1},
		// The skipped (down) node's call is not a duration.
		{"redlock_proxy_node_request_duration_seconds", []string{"node", "n2:1"}, 1},
		{"redlock_proxy_node_errors_total", []string{"node", "n2:1", "kind", "timeout"}, 1},
		{"redlock_proxy_node_errors_total", []string{"node", "n2:1", "kind", "down"}, 1},
		{"redlock_proxy_node_state", []string{"node", "n2:1", "state", "down"}, 1},
		{"redlock_proxy_node_state", []string{"node", "n2:1", "state", "up"}, 0},
		{"redlock_proxy_node_quarantines_total", []string{"node", "n1:1", "reason", "restart"}, 1},
		{"redlock_proxy_clients_connected", nil, 1},
		{"redlock_proxy_clients_rejected_total", nil, 1},
		{"redlock_proxy_protocol_errors_total", nil, 1},
	}
	for _, tt := range tests {
		if got := value(t, fams, tt.fam, tt.labels...); got != tt.want {
			t.Errorf("%s%v = %v; want %v", tt.fam, tt.labels, got, tt.want)
		}
	}
	ratio := fams["redlock_proxy_validity_ratio"].Metric[0].Histogram
	if ratio.GetSampleSum() != 0.98 {
		t.Errorf("validity_ratio sum = %v; want 0.98", ratio.GetSampleSum())
	}
}

func TestUnknownEventsAreIgnored(t *testing.T) {
	m := New([]string{"n0:1"}, "v")
	m.OperationDone(quorum.Op(99), quorum.ResultGranted, time.Millisecond)
	m.NodeDone(7, "n7:1", time.Millisecond, errors.New("x"))
	m.NodeStateChanged(7, "n7:1", quorum.StateUp, quorum.StateDown)
	m.LeaseGranted(quorum.OpAcquire, time.Second, 0)
	scrape(t, m)
}

// BenchmarkCycleEvents is what the metrics cost one lock+unlock cycle over
// five nodes: the events the engine and server report for it. Compare with
// BenchmarkLockCycle's CPU per cycle (about 100-200us of Go CPU).
func BenchmarkCycleEvents(b *testing.B) {
	addrs := []string{"n0:1", "n1:1", "n2:1", "n3:1", "n4:1"}
	m := New(addrs, "bench")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for _, op := range []quorum.Op{quorum.OpAcquire, quorum.OpRelease} {
				for i, a := range addrs {
					m.NodeDone(i, a, 300*time.Microsecond, nil)
				}
				m.OperationDone(op, quorum.ResultGranted, 400*time.Microsecond)
			}
			m.LeaseGranted(quorum.OpAcquire, 9870*time.Millisecond, 10*time.Second)
		}
	})
}
