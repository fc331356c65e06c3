package sqlproxy

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"phxgo/binlogd/version"
	"phxgo/sqlproxy/wire"
)

// Metrics are the proxy's Prometheus collectors.
type Metrics struct {
	Registry   *prometheus.Registry
	conns      *prometheus.GaugeVec
	statements *prometheus.CounterVec
	errors     *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	refused    *prometheus.CounterVec
	panics     prometheus.Counter
	reloads    *prometheus.CounterVec
	// headerRefused: backend logins a MariaDB refused the PROXY header of.
	headerRefused *prometheus.CounterVec

	// Resolved children per route, so a statement does no label lookup.
	byRoute [numRoutes]routeMetrics
}

type routeMetrics struct {
	ok, failed prometheus.Counter
	latency    prometheus.Observer
}

// NewMetrics registers the collectors on reg. When reg is nil it makes a
// new registry with the Go and process collectors too (a caller passing
// its own registry may have registered those already).
func NewMetrics(reg *prometheus.Registry) *Metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
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
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "phxgo_sqlproxy_refused_connections_total",
		Help: "Client connections refused before login: network (outside the allowed networks), hop_tls (a forwarding hop without TLS and a CA certificate), hop_not_member (a hop from the proxy of a node that is not a member), tls_handshake (a failed TLS handshake, e.g. a certificate of another CA), denied_user (root, phxgo's own accounts, -deny-users), max_connections (over -max-connections), too_big (a pre-login packet over the handshake bound), needs_tls (the right password, but the account requires TLS and the client did not use it), login_failures (the client address spent its budget of failed logins: -login-failure-burst)."}, []string{"reason"})
	m.panics = prometheus.NewCounter(prometheus.CounterOpts{Name: "phxgo_sqlproxy_session_panics_total",
		Help: "Sessions ended by a recovered panic (the proxy kept serving the others; the log has the stack)."})
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "phxgo_sqlproxy_reloads_total",
		Help: "Reloads (SIGHUP) of the TLS files and the settings file, by result: ok (all in force) or error (refused, the old ones stay; the log says why)."}, []string{"result"})
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("error") // both series exist from the start, so increase() sees the first error
	m.headerRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "phxgo_sqlproxy_proxy_header_refused_total",
		Help: "Backend logins whose PROXY header a MariaDB refused (its proxy_protocol_networks lacks this proxy's address), by outcome: fallback (logged in without it: MariaDB applies the same row to the proxy's address as to the client's) or denied (it would not: the client got 1045)."}, []string{"outcome"})
	reg.MustRegister(m.conns, m.statements, m.errors, m.latency, m.refused, m.panics, m.reloads, m.headerRefused)
	reg.MustRegister(version.Collector()) // phxgo_build_info{version,revision,goversion} 1
	for k := range m.byRoute {
		name := routeKind(k).String()
		m.byRoute[k] = routeMetrics{ok: m.statements.WithLabelValues(name, "ok"),
			failed: m.statements.WithLabelValues(name, "error"), latency: m.latency.WithLabelValues(name)}
	}
	return m
}

func (m *Metrics) observe(k routeKind, start time.Time, err *wire.Error) {
	r := &m.byRoute[k]
	if err != nil {
		r.failed.Inc()
	} else {
		r.ok.Inc()
	}
	r.latency.Observe(time.Since(start).Seconds())
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
	case errUnsupported, errUnknownCommand:
		return "unsupported"
	}
	return "backend_error"
}
