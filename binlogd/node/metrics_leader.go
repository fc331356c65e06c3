package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"phxgo/paxos"
)

// leadershipCollector exports why this node stopped leading the log
// (paxos.Status.StepDowns, by cause) and how often, as a follower, it
// lost its leader to an election timeout: a rising quorum_silent count
// means followers answer too late (overloaded or cut off), a rising
// higher_ballot count that others run elections.
type leadershipCollector struct {
	n                  *Node
	stepDowns, timeout *prometheus.Desc
}

func newLeadershipCollector(n *Node) *leadershipCollector {
	return &leadershipCollector{n: n,
		stepDowns: prometheus.NewDesc("phxgo_paxos_step_downs_total",
			"times this node stopped leading the Paxos log, by cause", []string{"cause"}, nil),
		timeout: prometheus.NewDesc("phxgo_paxos_leader_timeouts_total",
			"times this node, following, heard its leader for no election timeout and asked its peers whether the leader is gone", nil, nil),
	}
}

func (c *leadershipCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.stepDowns
	ch <- c.timeout
}

func (c *leadershipCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.n.px.Status()
	for k := paxos.StepDownCause(0); k < paxos.NumStepDownCauses; k++ {
		ch <- prometheus.MustNewConstMetric(c.stepDowns, prometheus.CounterValue, float64(st.StepDowns[k]), k.String())
	}
	ch <- prometheus.MustNewConstMetric(c.timeout, prometheus.CounterValue, float64(st.LeaderTimeouts))
}
