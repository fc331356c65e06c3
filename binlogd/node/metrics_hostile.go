package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"phxgo/paxos"
)

// droppedCollector exports paxos.Status.Dropped as one counter per
// reason, and whether a hostile promise left the node unable to vote or
// campaign (it then serves as a learner; see paxos/doc.go "Hostile input").
type droppedCollector struct {
	n                       *Node
	dropped, exhaust, stuck *prometheus.Desc
}

func newDroppedCollector(n *Node) *droppedCollector {
	return &droppedCollector{n: n,
		dropped: prometheus.NewDesc("phxgo_paxos_dropped_messages_total",
			"peer messages the Paxos core refused unprocessed (hostile or out of range), by reason", []string{"reason"}, nil),
		exhaust: prometheus.NewDesc("phxgo_paxos_ballot_exhausted",
			"1 when this node's ballot space is used up: it no longer campaigns", nil, nil),
		stuck: prometheus.NewDesc("phxgo_paxos_stuck_promise",
			"1 when the wal holds a promise above the maximum round: the node never votes again (remove it and add it back with an empty dir)", nil, nil),
	}
}

func (c *droppedCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.dropped
	ch <- c.exhaust
	ch <- c.stuck
}

func (c *droppedCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.n.px.Status()
	for r := 0; r < int(paxos.NumDropReasons); r++ {
		ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(st.Dropped[r]), paxos.DropReason(r).String())
	}
	ch <- prometheus.MustNewConstMetric(c.exhaust, prometheus.GaugeValue, b2f(st.BallotExhausted))
	ch <- prometheus.MustNewConstMetric(c.stuck, prometheus.GaugeValue, b2f(st.StuckPromise))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
