// Package metrics exports the proxy's Prometheus metrics. Its Metrics is
// both the engine's quorum.Observer and the server's proxy.Observer, so
// neither of those packages imports Prometheus. Every series a request
// touches is resolved once, in New, so that an event costs an atomic add
// or a histogram observation and no label lookup.
package metrics

import (
	"errors"
	"net/http"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/redlock-proxy/redlock-proxy/internal/buildinfo"
	"github.com/redlock-proxy/redlock-proxy/quorum"
)

const ns = "redlock_proxy"

// durationBuckets span a loopback node's answer (100µs) to a command
// timeout (1s and more).
var durationBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

// ratioBuckets resolve the top of the range: a healthy grant keeps
// almost all of its TTL (validity ÷ TTL near 1 − drift_factor).
var ratioBuckets = []float64{0.5, 0.75, 0.9, 0.95, 0.97, 0.98, 0.985, 0.99, 0.995, 1}

// states are the node states, in quorum.NodeState order.
var states = []quorum.NodeState{quorum.StateUp, quorum.StateDown, quorum.StateUnverified, quorum.StateQuarantined, quorum.StateRefused}

// Metrics holds every metric of one proxy. It is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	ops      [numOps][numResults]prometheus.Counter
	opDur    [numOps]prometheus.Observer
	validity prometheus.Observer

	nodeState   [][]prometheus.Gauge // [node][state]
	nodeDur     []prometheus.Observer
	nodeErrs    *prometheus.CounterVec
	quarantines *prometheus.CounterVec

	clients   prometheus.Gauge
	rejected  prometheus.Counter
	protoErrs prometheus.Counter
}

// numOps and numResults bound the arrays above: quorum's Op and Result
// values are small integers from 1.
const (
	numOps     = 5
	numResults = 6
)

// New returns the metrics of a proxy over the nodes at addrs (in
// configuration order, as the engine numbers them), every node starting
// up, as a new engine's do. version is reported by the build info metric.
func New(addrs []string, version string) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	f := factory{m.reg}

	ops := f.counterVec("operations_total", "Lock operations by kind and outcome.", "op", "outcome")
	opDur := f.histogramVec("operation_duration_seconds", "Time the engine took for one lock operation, fan-out included.", durationBuckets, "op")
	for _, op := range quorum.Ops {
		m.opDur[op] = opDur.WithLabelValues(op.String())
		for _, res := range quorum.Results {
			m.ops[op][res] = ops.WithLabelValues(op.String(), res.String())
		}
	}
	m.validity = f.histogram("validity_ratio", "Validity of each granted acquire or extend, divided by its TTL.", ratioBuckets)

	nodeState := f.gaugeVec("node_state", "1 for the state each node is in, 0 for the others.", "node", "state")
	nodeDur := f.histogramVec("node_request_duration_seconds", "Time each node took to answer its part of a lock operation.", durationBuckets, "node")
	m.nodeErrs = f.counterVec("node_errors_total", "Node failures on the request path, by kind: down (skipped by the breaker), timeout, canceled, reply, connection.", "node", "kind")
	m.quarantines = f.counterVec("node_quarantines_total", "Quarantines begun or lengthened, by reason: restart, data_lost, clock.", "node", "reason")
	for _, a := range addrs {
		gs := make([]prometheus.Gauge, len(states))
		for j, st := range states {
			gs[j] = nodeState.WithLabelValues(a, st.String())
		}
		gs[quorum.StateUp].Set(1)
		m.nodeState = append(m.nodeState, gs)
		m.nodeDur = append(m.nodeDur, nodeDur.WithLabelValues(a))
	}

	m.clients = f.gauge("clients_connected", "Open client connections.")
	m.rejected = f.counter("clients_rejected_total", "Client connections refused at max_clients.")
	m.protoErrs = f.counter("protocol_errors_total", "Client connections closed for a protocol error.")

	info := f.gaugeVec("build_info", "Always 1; the labels say which build runs.", "version", "revision", "goversion")
	info.WithLabelValues(version, buildinfo.Revision(), runtime.Version()).Set(1)

	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Engine events (quorum.Observer).

// OperationDone counts op's outcome and its duration.
func (m *Metrics) OperationDone(op quorum.Op, res quorum.Result, took time.Duration) {
	if int(op) >= len(m.ops) || int(res) >= len(m.ops[0]) || m.ops[op][res] == nil {
		return
	}
	m.ops[op][res].Inc()
	m.opDur[op].Observe(took.Seconds())
}

// LeaseGranted records validity ÷ ttl.
func (m *Metrics) LeaseGranted(_ quorum.Op, validity, ttl time.Duration) {
	if ttl > 0 {
		m.validity.Observe(float64(validity) / float64(ttl))
	}
}

// NodeDone records a node's answer time, or counts its failure by kind.
func (m *Metrics) NodeDone(node int, addr string, took time.Duration, err error) {
	if node >= len(m.nodeDur) {
		return
	}
	if !errors.Is(err, quorum.ErrNodeDown) { // a skipped node took no time
		m.nodeDur[node].Observe(took.Seconds())
	}
	if err != nil {
		m.nodeErrs.WithLabelValues(addr, quorum.ErrorKind(err)).Inc()
	}
}

// NodeStateChanged moves the node's 1 from one state to the other.
func (m *Metrics) NodeStateChanged(node int, _ string, from, to quorum.NodeState) {
	if node >= len(m.nodeState) || int(from) >= len(states) || int(to) >= len(states) {
		return
	}
	m.nodeState[node][from].Set(0)
	m.nodeState[node][to].Set(1)
}

// NodeQuarantined counts a quarantine by reason.
func (m *Metrics) NodeQuarantined(_ int, addr string, reason quorum.QuarantineReason) {
	m.quarantines.WithLabelValues(addr, string(reason)).Inc()
}

// Server events (proxy.Observer).

// ClientConnected counts an open client.
func (m *Metrics) ClientConnected() { m.clients.Inc() }

// ClientClosed counts a client gone.
func (m *Metrics) ClientClosed() { m.clients.Dec() }

// ClientRejected counts a client refused at max_clients.
func (m *Metrics) ClientRejected() { m.rejected.Inc() }

// ProtocolError counts a connection closed for a protocol error.
func (m *Metrics) ProtocolError() { m.protoErrs.Inc() }

// Refused counts a lock command refused before the engine saw it.
func (m *Metrics) Refused(op quorum.Op) {
	if int(op) < len(m.ops) && m.ops[op][quorum.ResultRefused] != nil {
		m.ops[op][quorum.ResultRefused].Inc()
	}
}

// factory registers each metric it makes under the redlock_proxy_ prefix.
type factory struct{ reg *prometheus.Registry }

func (f factory) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help})
	f.reg.MustRegister(c)
	return c
}

func (f factory) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, labels)
	f.reg.MustRegister(c)
	return c
}

func (f factory) gauge(name, help string) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help})
	f.reg.MustRegister(g)
	return g
}

func (f factory) gaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, labels)
	f.reg.MustRegister(g)
	return g
}

func (f factory) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: name, Help: help, Buckets: buckets})
	f.reg.MustRegister(h)
	return h
}

func (f factory) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Name: name, Help: help, Buckets: buckets}, labels)
	f.reg.MustRegister(h)
	return h
}
