package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"phxgo/binlogd/binlog"
	"phxgo/binlogd/capture"
	"phxgo/wal"
)

// registerPaxosMetrics exports the engine's counters (paxos.Status); the
// batch size is commands_proposed_total / values_proposed_total.
func registerPaxosMetrics(reg *prometheus.Registry, n *Node) {
	opts := func(name, help string) prometheus.CounterOpts {
		return prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "paxos", Name: name, Help: help}
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(opts("values_proposed_total", "log values this node proposed while leading"),
			func() float64 { return float64(n.px.Status().ValuesProposed) }),
		prometheus.NewCounterFunc(opts("commands_proposed_total", "commands packed into those values"),
			func() float64 { return float64(n.px.Status().CommandsProposed) }),
		prometheus.NewCounterFunc(opts("bytes_proposed_total", "bytes of those values"),
			func() float64 { return float64(n.px.Status().BytesProposed) }),
		prometheus.NewCounterFunc(opts("leader_changes_total", "times the leader this node knows changed"),
			func() float64 { return float64(n.px.Status().LeaderChanges) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "paxos", Name: "ballot", Help: "round of the highest ballot this node promised"},
			func() float64 { return float64(n.px.Status().Ballot) }),
		newDroppedCollector(n),
		newDigestCollector(n),
		newLeadershipCollector(n),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "paxos", Name: "is_leader", Help: "1 while this node leads the log"},
			func() float64 {
				if n.px.IsLeader() {
					return 1
				}
				return 0
			}),
	)
}

// registerWALMetrics exports the counters of the node's wal (wal.Stats).
func registerWALMetrics(reg *prometheus.Registry, n *Node) {
	stats := func() wal.Stats {
		st, _ := n.px.WALStats()
		return st
	}
	opts := func(name, help string) prometheus.CounterOpts {
		return prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "wal", Name: name, Help: help}
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(opts("saves_total", "writes made durable (accepts, promises, applied state)"),
			func() float64 { return float64(stats().Saves) }),
		prometheus.NewCounterFunc(opts("groups_total", "commit groups; saves_total / groups_total is the group size"),
			func() float64 { return float64(stats().Groups) }),
		prometheus.NewCounterFunc(opts("syncs_total", "fdatasyncs issued"),
			func() float64 { return float64(stats().Syncs) }),
		prometheus.NewCounterFunc(opts("segments_total", "segment files started (one per 64 MiB of log)"),
			func() float64 { return float64(stats().Segments) }),
		prometheus.NewCounterFunc(opts("drops_total", "drops of truncated entries from Badger"),
			func() float64 { return float64(stats().Drops) }),
		prometheus.NewCounterFunc(opts("drop_seconds_total", "time those drops blocked writes"),
			func() float64 { return stats().DropTime.Seconds() }),
	)
}

// registerBinlogMetrics exports capture's counters (they restart with each
// term this node masters, which Prometheus reads as a counter reset) and
// the local MariaDB's lag behind the log.
func registerBinlogMetrics(reg *prometheus.Registry, n *Node) {
	stats := func() capture.Stats {
		if c := n.capture.Load(); c != nil {
			return c.Stats()
		}
		return capture.Stats{}
	}
	opts := func(name, help string) prometheus.CounterOpts {
		return prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: name, Help: help}
	}
	reg.MustRegister(
		prometheus.NewCounterFunc(opts("captured_transactions_total", "transactions captured and made durable in the log (current term)"),
			func() float64 { return float64(stats().Txns) }),
		prometheus.NewCounterFunc(opts("captured_bytes_total", "binlog event bytes captured (current term)"),
			func() float64 { return float64(stats().Bytes) }),
		prometheus.NewCounterFunc(opts("semisync_acks_total", "semi-sync ACKs sent to MariaDB (current term)"),
			func() float64 { return float64(stats().Acks) }),
		prometheus.NewCounterFunc(opts("semisync_ack_seconds_total", "time from ACK request to ACK sent, summed over ACKs (current term); rate() / rate(semisync_acks_total) is the mean"),
			func() float64 { return stats().AckLatency.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "batches_total",
			Help: "binlog batches capture proposed that became durable (current term)"},
			func() float64 { return float64(stats().Batches) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "read_to_propose_seconds_total",
			Help: "time from a batch's first transaction read to the batch proposed (batching), summed over batches; rate() / rate(capture_batches_total) is the mean"},
			func() float64 { return stats().ReadToPropose.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "propose_to_durable_seconds_total",
			Help: "time from a batch proposed to chosen and applied (the log), summed over batches; rate() / rate(capture_batches_total) is the mean"},
			func() float64 { return stats().ProposeToDurable.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "overlapped_batches_total",
			Help: "durable batches whose first transaction arrived while an earlier batch was still in flight: MariaDB wrote the next commit group during the previous one's semi-sync wait (current term)"},
			func() float64 { return float64(stats().Overlapped) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "starved_batches_total",
			Help: "durable batches whose first transaction arrived with nothing in flight, within 100 ms of the last one in flight becoming durable (a longer wait is idleness; current term)"},
			func() float64 { return float64(stats().Starved) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "starved_seconds_total",
			Help: "time from the last batch in flight becoming durable (and ACKed) to the next transaction read, summed over starved batches: under load, MariaDB's turnaround between commit groups (the binlog_commit_wait binlogd sets included), the part of a commit cycle outside binlogd's own work; rate() / rate(capture_starved_batches_total) is the mean"},
			func() float64 { return stats().StarvedTime.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "held_batches_total",
			Help: "durable batches that waited, as the lone first transaction of a MariaDB group commit, for the group's next transaction (at most 2 ms; current term)"},
			func() float64 { return float64(stats().Held) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "held_seconds_total",
			Help: "time those batches waited, summed; rate() / rate(capture_held_batches_total) is the mean"},
			func() float64 { return stats().HeldTime.Seconds() }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "hold_timeouts_total",
			Help: "holds that their 2 ms bound ended before the group's next transaction came (current term)"},
			func() float64 { return float64(stats().HoldTimeouts) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "pieces_total",
			Help: "batches that were pieces of a transaction too big for one buffer (current term)"},
			func() float64 { return float64(stats().Pieces) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "resumes_total",
			Help: "dump reconnects that resumed a split transaction after its durable prefix (current term)"},
			func() float64 { return float64(stats().Resumes) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "phxgo", Subsystem: "capture", Name: "reconnects_total",
			Help: "dump connections to MariaDB after the first (current term)"},
			func() float64 { return float64(stats().Reconnects) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "capture", Name: "peak_buffered_bytes",
			Help: "most binlog event bytes one capture session held at once between reading and durability (current term); bounded by the capture buffer plus one fragment"},
			func() float64 { return float64(stats().PeakBuffered) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "phxgo", Subsystem: "binlogd", Name: "replica_lag_transactions",
			Help: "valid transactions in the log that this node's MariaDB has not applied"},
			func() float64 {
				last, _ := n.lease.Position()
				applied := *n.applied.Load()
				if l := binlog.GTID(last); l.Seq > applied.Seq && (applied.IsZero() || l.Domain == applied.Domain) {
					return float64(l.Seq - applied.Seq)
				}
				return 0
			}),
	)
}
