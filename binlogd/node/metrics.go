package node

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"phxgo/binlogd/httpguard"
	"phxgo/binlogd/version"
	"phxgo/masterlease"
)

type metrics struct {
	reg           *prometheus.Registry
	role          *prometheus.GaugeVec // phxgo_binlogd_role{role}
	version       prometheus.Gauge
	epoch         prometheus.Gauge
	master        prometheus.Gauge
	mysqldStarts  prometheus.Counter
	mysqldKills   prometheus.Counter
	recoveryCuts  prometheus.Counter
	becameMaster  prometheus.Counter
	logBytes      prometheus.Gauge
	compactions   prometheus.Counter
	commitLatency prometheus.Histogram
	// rejectedBatches counts this node's binlog batches the log chose
	// and rejected (leaseSink); 0 in steady state.
	rejectedBatches prometheus.Counter
	// mysqlPolls counts the poll's rounds of MariaDB queries (poll.go):
	// 10/s while anything moves, 1/s settled.
	mysqlPolls prometheus.Counter
}

func newMetrics(n *Node) *metrics {
	reg := prometheus.NewRegistry()
	f := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: name, Help: help})
		reg.MustRegister(g)
		return g
	}
	c := func(name, help string) prometheus.Counter {
		x := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: name, Help: help})
		reg.MustRegister(x)
		return x
	}
	m := &metrics{
		reg:          reg,
		role:         newRoleGauge(reg),
		version:      f("lease_version", "lease version as applied here"),
		epoch:        f("lease_epoch", "term number as applied here"),
		master:       f("lease_master", "id of the master node by the lease as applied here (0: none); an id, not a state: alert on phxgo_binlogd_role"),
		mysqldStarts: c("mysqld_starts_total", "mariadbd starts by the supervisor"),
		mysqldKills:  c("mysqld_kills_total", "SIGKILLs of mariadbd with commits waiting"),
		recoveryCuts: c("recovery_cut_transactions_total", "transactions cut from the binlog by recovery"),
		becameMaster: c("became_master_total", "times this node started serving writes"),
		logBytes:     f("log_bytes", "bytes of the Paxos log directory on disk"),
		compactions:  c("log_compactions_total", "times the retention loop advanced the log's first index"),
		mysqlPolls:   c("mysql_polls_total", "rounds of status queries binlogd sent its MariaDB (position, redo LSNs, replication)"),
		commitLatency: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "phxgo", Subsystem: "paxos", Name: "commit_latency_seconds",
			Help:    "this node's proposals (binlog batches, lease requests), submission to applied",
			Buckets: prometheus.ExponentialBuckets(0.00025, 2, 14)}), // 0.25 ms .. 2 s
	}
	m.rejectedBatches = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "rejected_batches_total",
		Help: "binlog batches this node proposed that the log chose and rejected (each re-proposal counts again); 0 in steady state"})
	reg.MustRegister(m.commitLatency, m.rejectedBatches, version.Collector())
	registerPaxosMetrics(reg, n)
	registerBinlogMetrics(reg, n)
	registerWALMetrics(reg, n)
	registerRoleMetrics(reg, n)
	registerConventionMetrics(reg, n)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "binlog_commit_wait_count", Help: "the master MariaDB's binlog_commit_wait_count as binlogd last set it (0: no wait; config group_commit_wait)"},
		func() float64 { return float64(n.commitWaitCount.Load()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "binlog_commit_wait_seconds", Help: "the master MariaDB's binlog_commit_wait_usec as binlogd last set it, in seconds: 1.5x the last period's mean ACK time, 200µs to group_commit_wait; 0 while binlog_commit_wait_count is 0 (no wait)"},
		func() float64 { return float64(n.commitWaitUsec.Load()) / 1e6 }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "paxos", Name: "applied_index", Help: "applied log index"},
		func() float64 { return float64(n.px.Status().Applied) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "paxos", Name: "first_index", Help: "first log index still stored (compaction point + 1)"},
		func() float64 { return float64(max(n.px.Status().FirstIndex, 1)) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "paxos", Name: "chosen_index", Help: "chosen log index"},
		func() float64 { return float64(n.px.Status().Chosen) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "lease", Name: "seconds_to_expiry", Help: "own lease time left (0 unless master)"},
		func() float64 {
			d := n.lease.Deadline()
			if d.IsZero() {
				return 0
			}
			return time.Until(d).Seconds()
		}))
	return m
}

func (m *metrics) observe(st masterlease.Status) {
	setRole(m.role, st.Role)
	m.version.Set(float64(st.State.Version))
	m.epoch.Set(float64(st.State.Epoch))
	m.master.Set(float64(st.State.Master))
}

func (n *Node) serveHTTP(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen http_addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(n.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if n.unsafe.Load() != nil {
			http.Error(w, "unsafe: "+*n.unsafe.Load(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	if n.cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	n.http = httpguard.Server(mux)
	hl := httpguard.Listener(l, n.log)
	n.m.reg.MustRegister(hl.Collectors("phxgo_binlogd")...)
	go func() { _ = n.http.Serve(hl) }()
	return nil
}
