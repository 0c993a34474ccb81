// Package admin is the proxy's HTTP side for operators: Prometheus
// metrics, a liveness check and a readiness check a load balancer can
// read. It is its own package because it is neither the Redis protocol
// (proxy) nor the lock engine (quorum): it reads both from outside.
package admin

import (
	"encoding/json"
	"net/http"

	"github.com/redlock-proxy/redlock-proxy/quorum"
)

// Config says what the endpoints read.
type Config struct {
	// Metrics serves /metrics; nil leaves /metrics out.
	Metrics http.Handler
	// Status returns every node's health (quorum.Engine.Status).
	Status func() []quorum.NodeStatus
	// Draining reports whether the proxy is draining (proxy.Server.Draining).
	Draining func() bool
}

// Handler returns the endpoints:
//
//   - /metrics: Prometheus text format.
//   - /healthz: 200 while the process serves.
//   - /readyz: 200 while a quorum of the nodes is up (their grants count)
//     and the proxy is not draining; 503 otherwise. Both answer with a
//     small JSON body of the nodes' states.
func Handler(cfg Config) http.Handler {
	mux := http.NewServeMux()
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		rd := readiness(cfg.Status(), cfg.Draining())
		w.Header().Set("Content-Type", "application/json")
		if !rd.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(rd)
	})
	return mux
}

// ready is /readyz's body.
type ready struct {
	Ready    bool        `json:"ready"`
	Draining bool        `json:"draining"`
	Up       int         `json:"up"`     // nodes whose grants count
	Quorum   int         `json:"quorum"` // nodes needed
	Nodes    []nodeState `json:"nodes"`
}

// nodeState is one node in /readyz's body.
type nodeState struct {
	Addr   string `json:"addr"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// readiness judges the nodes' states: ready while a quorum of them is up
// and the proxy is not draining.
func readiness(nodes []quorum.NodeStatus, draining bool) ready {
	rd := ready{Draining: draining, Quorum: quorum.Quorum(len(nodes)), Nodes: make([]nodeState, len(nodes))}
	for i, n := range nodes {
		rd.Nodes[i] = nodeState{Addr: n.Addr, State: n.State.String(), Reason: n.Reason}
		if n.State == quorum.StateUp {
			rd.Up++
		}
	}
	rd.Ready = !draining && rd.Up >= rd.Quorum
	return rd
}
