package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"phxgo/paxos"
	pb "phxgo/proto"
)

// Log digests (paxos/digest.go): every node hashes its chosen log per
// range of indexes and compares with what its peers send. A divergence
// means two nodes' logs hold different values at some index of a range,
// which Paxos rules out for nodes that only stop: a holder of a node key
// forged a message, or a bug or a disk corrupted a log. binlogd reports
// it (Status, the metrics below, `binlogd cluster status`) and acts on
// it in one case only: a node that the majority of the digests it knows
// names as the odd one does not ask for the lease (canAcquire), so a
// node whose log lost or gained a value does not become master. It does
// not step down a master, and a mismatch without a majority (one node
// against one, or no side above half of the digests known) changes
// nothing: each digest is its sender's word about itself, and one stolen
// key must not be enough to keep a healthy node from becoming master.

// logDigestStatus copies the digests and divergences into st.
func logDigestStatus(st *pb.NodeStatus, ps paxos.Status) {
	for _, d := range ps.LogDigests {
		st.LogDigests = append(st.LogDigests, &pb.LogDigest{First: d.First, Last: d.Last, Sum: append([]byte(nil), d.Sum[:]...)})
	}
	for _, d := range ps.Divergences {
		st.LogDivergences = append(st.LogDivergences, &pb.LogDivergence{
			Peer: d.Peer, First: d.First, Last: d.Last,
			Ours: append([]byte(nil), d.Ours[:]...), Theirs: append([]byte(nil), d.Theirs[:]...),
			Known: uint32(d.Known), HoldingOurs: uint32(d.OursCount), HoldingTheirs: uint32(d.TheirsCount),
			OddNode: d.Odd(), SeenUnixNano: d.At.UnixNano(),
		})
	}
	st.LogDivergencesSeen = ps.DivergencesSeen
	for _, r := range ps.OddRanges {
		st.LogOddRanges = append(st.LogOddRanges, &pb.LogOddRange{First: r.First, Last: r.Last,
			Ours: append([]byte(nil), r.Ours[:]...), Majority: append([]byte(nil), r.Majority[:]...), SinceUnixNano: r.At.UnixNano()})
	}
}

// logOdd reports whether a majority of the members' digests of some
// diverged range disagrees with this node's own, now or at a check it
// recorded before (a restart does not make it healthy).
func logOdd(ps paxos.Status) bool {
	if len(ps.OddRanges) > 0 {
		return true // recorded (paxos/digest_odd.go): across restarts
	}
	for _, d := range ps.Divergences {
		if d.Odd() == ps.ID && ps.ID != 0 {
			return true
		}
	}
	return false
}

// digestCollector exports the divergences.
type digestCollector struct {
	n                   *Node
	seen, diverged, odd *prometheus.Desc
}

func newDigestCollector(n *Node) *digestCollector {
	return &digestCollector{n: n,
		seen: prometheus.NewDesc("phxgo_paxos_log_divergences_total",
			"log ranges whose digest a peer reported differently from this node's (per peer and range, once): the logs fork there", nil, nil),
		diverged: prometheus.NewDesc("phxgo_paxos_log_diverged",
			"1 when this node saw a peer's log diverge from its own since it started (binlogd cluster status names the nodes and the range)", nil, nil),
		odd: prometheus.NewDesc("phxgo_paxos_log_odd",
			"1 when the majority of the digests this node knows for a diverged range disagrees with its own: remove this node and add it back with an empty dir", nil, nil),
	}
}

func (c *digestCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.seen
	ch <- c.diverged
	ch <- c.odd
}

func (c *digestCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.n.px.Status()
	ch <- prometheus.MustNewConstMetric(c.seen, prometheus.CounterValue, float64(st.DivergencesSeen))
	ch <- prometheus.MustNewConstMetric(c.diverged, prometheus.GaugeValue, b2f(st.DivergencesSeen > 0))
	ch <- prometheus.MustNewConstMetric(c.odd, prometheus.GaugeValue, b2f(logOdd(st)))
}
