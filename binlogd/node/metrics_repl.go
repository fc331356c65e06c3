package node

import "github.com/prometheus/client_golang/prometheus"

// replCollector exports the replication endpoint's counters
// (replserver.Stats): outside replicas show up in connections by
// account, their refusals in refused (error 1236: a position the log
// does not hold, a server_id of the cluster's) and denied (1227: what the
// outside account may not run).
type replCollector struct {
	n                             *Node
	conns, dumps, refused, denied *prometheus.Desc
}

func newReplCollector(n *Node) *replCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("phxgo_binlogd_repl_"+name, help, labels, nil)
	}
	return &replCollector{n: n,
		conns:   d("connections_total", "replication endpoint logins, by account (node: this node's MariaDB; outside: outside replicas)", "account"),
		dumps:   d("dumps_total", "binlog dumps started"),
		refused: d("refused_total", "dumps refused with error 1236 (position not in the log, or an outside replica's server_id in the cluster's range)"),
		denied:  d("denied_total", "queries and commands of the outside replicas' account refused with error 1227"),
	}
}

func (c *replCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.conns
	ch <- c.dumps
	ch <- c.refused
	ch <- c.denied
}

func (c *replCollector) Collect(ch chan<- prometheus.Metric) {
	if c.n.repl == nil {
		return
	}
	st := c.n.repl.Stats()
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.CounterValue, float64(st.Connections-st.Outside), "node")
	ch <- prometheus.MustNewConstMetric(c.conns, prometheus.CounterValue, float64(st.Outside), "outside")
	ch <- prometheus.MustNewConstMetric(c.dumps, prometheus.CounterValue, float64(st.Dumps))
	ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(st.Refused))
	ch <- prometheus.MustNewConstMetric(c.denied, prometheus.CounterValue, float64(st.Denied))
}
