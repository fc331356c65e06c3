package sqlproxy

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"phxgo/sqlproxy/wire"
)

// Metrics are the proxy's Prometheus collectors.
type Metrics struct {
	Registry   *prometheus.Registry
	conns      *prometheus.GaugeVec
	statements *prometheus.CounterVec
	errors     *prometheus.CounterVec
	latency    *prometheus.HistogramVec
}

// NewMetrics registers the collectors on reg (a new registry when nil).
func NewMetrics(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &Metrics{
		Registry: reg,
		conns: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "phxgo_sqlproxy_client_connections",
			Help: "Open client connections by listener mode."}, []string{"mode"}),
		statements: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "phxgo_sqlproxy_statements_total",
			Help: "Statements relayed, by route (master, forward, replica) and outcome (ok, error)."}, []string{"route", "outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "phxgo_sqlproxy_errors_total",
			Help: "Errors raised by the proxy itself, by kind."}, []string{"kind"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "phxgo_sqlproxy_statement_seconds",
			Help:    "Statement latency through the proxy, by route.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18)}, []string{"route"}),
	}
	reg.MustRegister(m.conns, m.statements, m.errors, m.latency)
	return m
}

func (m *Metrics) observe(k routeKind, start time.Time, err *wire.Error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.statements.WithLabelValues(k.String(), outcome).Inc()
	m.latency.WithLabelValues(k.String()).Observe(time.Since(start).Seconds())
}

func errLabel(e *wire.Error) string {
	switch e {
	case errNoMaster:
		return "no_master"
	case errTxAborted:
		return "tx_aborted"
	case errBackend:
		return "backend"
	case errLost:
		return "lost"
	case errUnsupported:
		return "unsupported"
	}
	return "backend_error"
}
