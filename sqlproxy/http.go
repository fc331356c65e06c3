package sqlproxy

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// BackendsStatus is the /backends document.
type BackendsStatus struct {
	MasterID        uint32         `json:"master_id"`
	MasterProxyAddr string         `json:"master_proxy_addr"`
	MasterMySQLAddr string         `json:"master_mysql_addr"`
	IsMaster        bool           `json:"is_master"`
	LeaseValid      bool           `json:"lease_valid"`
	LeaseRemaining  int64          `json:"lease_remaining_ns"`
	Replicas        []replicaState `json:"replicas"`
	HealthChecked   bool           `json:"health_checked"`
	IdleConns       map[string]int `json:"idle_backend_conns"`
}

// Backends reports the topology, replica health and pooled connections.
func (s *Server) Backends() BackendsStatus {
	v := s.topo.View()
	st := BackendsStatus{MasterID: v.MasterID, MasterProxyAddr: v.MasterProxyAddr, MasterMySQLAddr: v.MasterMySQLAddr,
		IsMaster: v.IsMaster, HealthChecked: s.health.enabled(), IdleConns: s.pool.counts()}
	now := timeNow()
	st.LeaseValid = v.LeaseValid(now)
	if st.LeaseValid {
		st.LeaseRemaining = int64(v.LeaseDeadline.Sub(now))
	}
	if st.HealthChecked {
		st.Replicas = s.health.snapshot()
	} else {
		for _, r := range v.Replicas {
			st.Replicas = append(st.Replicas, replicaState{ID: r.ID, Addr: r.MySQLAddr, Healthy: true})
		}
	}
	return st
}

// Handler serves /metrics (Prometheus) and /backends (JSON). Bind it to
// loopback: it tells anyone who asks where the master is.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{}))
	mux.HandleFunc("/backends", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s.Backends())
	})
	return mux
}

var timeNow = time.Now
