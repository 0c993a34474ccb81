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
		rd := Readiness(cfg.Status(), cfg.Draining())
		w.Header().Set("Content-Type", "application/json")
		if !rd.Ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(rd)
	})
	return mux
}

// Ready is /readyz's body.
type Ready struct {
	Ready    bool        `json:"ready"`
	Draining bool        `json:"draining"`
	Up       int         `json:"up"`     // nodes whose grants count
	Quorum   int         `json:"quorum"` // nodes needed
	Nodes    []NodeState `json:"nodes"`
}

// NodeState is one node in /readyz's body.
type NodeState struct {
	Addr   string `json:"addr"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// Readiness judges the nodes' states: ready while a quorum of them is up
// and the proxy is not draining.
func Readiness(nodes []quorum.NodeStatus, draining bool) Ready {
	rd := Ready{Draining: draining, Quorum: quorum.Quorum(len(nodes)), Nodes: make([]NodeState, len(nodes))}
	for i, n := range nodes {
		rd.Nodes[i] = NodeState{Addr: n.Addr, State: n.State.String(), Reason: n.Reason}
		if n.State == quorum.StateUp {
			rd.Up++
		}
	}
	rd.Ready = !draining && rd.Up >= rd.Quorum
	return rd
}
