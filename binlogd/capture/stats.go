package capture

import (
	"sync"
	"time"

	"phxgo/binlogd/binlog"
)

// Stats is a snapshot of a capture's counters since New.
type Stats struct {
	Txns    uint64 // transactions made durable (duplicates excluded)
	Bytes   uint64 // raw event bytes made durable
	Batches uint64 // batches accepted by the sink
	Pieces  uint64 // of which pieces of split transactions
	// PeakBuffered is the most event bytes one session held at once
	// between reading and durability (bounded by Config.BufferBytes,
	// plus the transaction being cut, below Config.FragmentBytes).
	PeakBuffered int
	MaxBatchTxns int           // largest batch, in transactions
	Acks         uint64        // semi-sync ACK packets sent
	AckedTxns    uint64        // transactions covered by those ACKs
	Duplicates   uint64        // re-delivered transactions dropped after reconnects
	Reconnects   uint64        // dump connections after the first
	Resumes      uint64        // of which resumed a split transaction after its durable prefix
	AckLatency   time.Duration // sum over ACKs: ACK request received -> ACK sent
	AckLatencyMx time.Duration // worst single ACK latency
	MaxInFlight  int           // most batches proposed and not yet durable at once
	// Stage times, summed over batches (divide by Batches): from the
	// batch's first transaction read to its proposal (batching), and from
	// its proposal to its outcome (the log: chosen and applied).
	ReadToPropose, ProposeToDurable time.Duration
	// Where a commit cycle's time goes, beside the stages above. A batch
	// is Overlapped when its first transaction arrived while an earlier
	// batch was still in flight: MariaDB wrote the next commit group
	// during the previous one's semi-sync wait. It is Starved when it
	// arrived with nothing in flight, within 100 ms (a longer wait is
	// idleness and counts as neither); StarvedTime sums, over those, the
	// time since the last batch in flight became durable (and was
	// ACKed): under a steady load that is MariaDB's turnaround, from the
	// ACK through committing the released group, the next group's
	// binlog_commit_wait (which binlogd sets while master, config
	// group_commit_wait), its binlog write and sync, to the dump
	// thread's send. So with few Overlapped, a cycle is ReadToPropose +
	// ProposeToDurable per batch plus StarvedTime per Starved batch, and
	// only the first two are binlogd's own work.
	Overlapped, Starved uint64
	StarvedTime         time.Duration
	// Held counts batches that waited as a group commit's first
	// transaction for the next (Config.GroupHold); HeldTime sums those
	// waits, and HoldTimeouts counts the ones GroupHold ended.
	Held, HoldTimeouts uint64
	HeldTime           time.Duration
	Durable            binlog.GTID // last durable GTID
	Acked              Position    // last position ACKed
}

// TxnsPerAck is the mean number of transactions one ACK released.
func (s Stats) TxnsPerAck() float64 {
	if s.Acks == 0 {
		return 0
	}
	return float64(s.AckedTxns) / float64(s.Acks)
}

// MeanAckLatency is the mean time from an ACK request to its ACK.
func (s Stats) MeanAckLatency() time.Duration {
	if s.Acks == 0 {
		return 0
	}
	return s.AckLatency / time.Duration(s.Acks)
}

type statsBox struct {
	mu sync.Mutex
	s  Stats
}

func (b *statsBox) update(f func(*Stats)) {
	b.mu.Lock()
	f(&b.s)
	b.mu.Unlock()
}

func (b *statsBox) get() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.s
}
