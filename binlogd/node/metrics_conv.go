package node

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"phxgo/masterlease"
	"phxgo/wal"
)

// Metrics shaped for Prometheus conventions (issue 23): states are 0/1
// gauges with a label instead of a code, "not applicable" is a missing
// sample instead of -1, timestamps are unix seconds, durations are
// histograms. scripts/monitoring/ (dashboard, alert rules) reads them.

var roleNames = []masterlease.Role{masterlease.RoleReplica, masterlease.RoleCandidate, masterlease.RoleMaster}

// newRoleGauge is phxgo_binlogd_role{role}: 1 for this node's current
// role, 0 for the others, so sum(...{role="master"}) counts masters.
func newRoleGauge(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "role",
		Help: "1 for the role this node holds by its own clock (replica, candidate: lease held, catching up; master: serving writes), 0 for the others"},
		[]string{"role"})
	for _, r := range roleNames {
		g.WithLabelValues(r.String()).Set(0)
	}
	reg.MustRegister(g)
	return g
}

func setRole(g *prometheus.GaugeVec, role masterlease.Role) {
	for _, r := range roleNames {
		g.WithLabelValues(r.String()).Set(b2f(r == role))
	}
}

// registerConventionMetrics adds the Go runtime (with the live heap) and
// process collectors and the gauges below to reg.
func registerConventionMetrics(reg *prometheus.Registry, n *Node) {
	reg.MustRegister(
		// go_gc_heap_live_bytes: what the last GC found live. go_memstats's
		// heap_alloc also counts garbage made since, which on a busy node
		// is most of it (a replica streaming a big transaction at once
		// allocated ~80 MiB between a forced GC and its MemStats read).
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&nodeStateCollector{n: n,
			lag: prometheus.NewDesc("phxgo_binlogd_replica_lag_seconds",
				"MariaDB's Seconds_Behind_Master; no sample while it does not replicate (see phxgo_binlogd_replicating)", nil, nil),
			replicating: prometheus.NewDesc("phxgo_binlogd_replicating",
				"1 while this node's MariaDB replicates (Seconds_Behind_Master known), 0 otherwise (the master, stopped or broken replication)", nil, nil),
			unsafe: prometheus.NewDesc("phxgo_binlogd_unsafe",
				"1 once the node marked itself UNSAFE (/healthz 503, gRPC health NOT_SERVING): it never asks for the lease again until restarted", nil, nil),
			certExpiry: prometheus.NewDesc("phxgo_binlogd_tls_cert_expiry_timestamp_seconds",
				"NotAfter of the node certificate new handshakes present, unix seconds (follows reloads; no sample without TLS)", nil, nil),
			fsync: prometheus.NewDesc("phxgo_wal_fsync_seconds",
				"time of the Paxos log's segment fdatasyncs", nil, nil),
		})
}

type nodeStateCollector struct {
	n                                           *Node
	lag, replicating, unsafe, certExpiry, fsync *prometheus.Desc
}

func (c *nodeStateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.lag
	ch <- c.replicating
	ch <- c.unsafe
	ch <- c.certExpiry
	ch <- c.fsync
}

func (c *nodeStateCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.n
	lag := n.lagSecs.Load()
	if lag >= 0 {
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(lag))
	}
	ch <- prometheus.MustNewConstMetric(c.replicating, prometheus.GaugeValue, b2f(lag >= 0))
	ch <- prometheus.MustNewConstMetric(c.unsafe, prometheus.GaugeValue, b2f(n.unsafe.Load() != nil))
	if m := n.currentTLS(); m != nil && m.Leaf != nil {
		ch <- prometheus.MustNewConstMetric(c.certExpiry, prometheus.GaugeValue, float64(m.Leaf.NotAfter.Unix()))
	}
	if st, ok := n.px.WALStats(); ok && st.SyncHist != nil {
		ch <- fsyncHistogram(c.fsync, st)
	}
}

// fsyncHistogram turns wal's per-bucket counts into Prometheus's
// cumulative ones.
func fsyncHistogram(d *prometheus.Desc, st wal.Stats) prometheus.Metric {
	buckets := make(map[float64]uint64, len(wal.SyncBounds))
	var cum uint64
	for i, b := range wal.SyncBounds {
		cum += uint64(st.SyncHist[i])
		buckets[b.Seconds()] = cum
	}
	count := cum + uint64(st.SyncHist[len(wal.SyncBounds)])
	return prometheus.MustNewConstHistogram(d, count, st.SyncTime.Seconds(), buckets)
}
