package masterlease

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	pb "phxgo/proto"
)

// Log is the replicated log the Lease proposes to; *paxos.Node satisfies it.
type Log interface {
	// Propose returns once cmd is chosen and applied locally, with the
	// Verdict Apply returned for it. An error means the outcome is unknown.
	Propose(ctx context.Context, cmd []byte) (index uint64, result any, err error)
	// Barrier returns once every entry chosen before the call is applied
	// locally.
	Barrier(ctx context.Context) (uint64, error)
}

// Lease is one node's view of the master lease: the replicated State (it is
// the log's paxos.StateMachine) plus this node's timing of the lease on its
// own monotonic clock. All methods are safe for concurrent use.
type Lease struct {
	cfg   Config
	id    uint32
	clock Clock
	log   *slog.Logger

	watchers watchers

	mu  sync.Mutex
	st  State
	lg  Log // nil until Attach
	own ownLease
	// followerExpiry is when the current term's lease ends in this node's
	// view as a follower: (apply time of the last valid LeaseRequest) + d.
	// Zero when the holder fenced itself. Restore sets it to now + d.
	followerExpiry time.Time
	// proposedAt maps a seen_version to the earliest time this process
	// proposed a LeaseRequest for itself with it. A won grant counts from
	// there; a grant this process did not propose gives no deadline.
	proposedAt map[uint64]time.Time
	// lastAttempt is when the election loop last proposed.
	lastAttempt time.Time
	// standDownUntil: after Fence or Switchover this node does not try to
	// acquire before this time, so the lease goes elsewhere.
	standDownUntil time.Time
	// caughtUp: the caller's MariaDB applied every valid batch at log
	// index <= caughtUp (MarkCaughtUp).
	caughtUp uint64
	lastSeen statusKey
	// base is where the chain starts in a cluster restored from a backup
	// (SetBase, base.go); zero for a cluster that started empty.
	base GTID
}

// ownLease is the holder's view, meaningful only while st.Master == id.
type ownLease struct {
	// deadline = start + d - m of the proposal that won or last renewed
	// this term; zero when this node may not serve.
	deadline time.Time
	start    time.Time
	// needIndex: the holder is ready once caughtUp >= needIndex, the
	// index of the last valid batch before its term began.
	needIndex uint64
}

// New returns a Lease for node id (> 0) at the empty state. Give it to the
// log as its state machine, then call Attach with the log.
func New(cfg Config, id uint32, clock Clock, logger *slog.Logger) (*Lease, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if id == 0 {
		return nil, fmt.Errorf("masterlease: node id must be > 0")
	}
	if clock == nil {
		clock = SystemClock{}
	}
	if logger == nil {
		logger = slog.Default()
	}
	l := &Lease{cfg: cfg, id: id, clock: clock, log: logger.With("node", id),
		proposedAt: map[uint64]time.Time{}}
	l.followerExpiry = clock.Now().Add(cfg.LeaseDuration)
	return l, nil
}

// Attach sets the log that Run and the proposing methods use.
func (l *Lease) Attach(lg Log) {
	l.mu.Lock()
	l.lg = lg
	l.mu.Unlock()
}

// ID is this node's id.
func (l *Lease) ID() uint32 { return l.id }

// Config is the lease timing in use.
func (l *Lease) Config() Config { return l.cfg }

// Apply implements paxos.StateMachine: it applies one chosen command and
// returns its Verdict. The state transition (Step) reads no clock; only
// this node's timing view notes the local time a grant was applied.
func (l *Lease) Apply(index uint64, cmd []byte) any {
	l.mu.Lock()
	prev := l.st
	next, v := Step(prev, index, cmd)
	l.st = next
	if v.Valid {
		l.observeLocked(prev, v)
	} else if v.Entry.Kind == KindBatch && v.Entry.Batch.Epoch == prev.Epoch && prev.Master == l.id {
		// A pipelined batch chosen ahead of its predecessor breaks the
		// chain and is proposed again by binlogd: routine, not alarming.
		lvl := slog.LevelWarn
		if v.Reason == ReasonChain {
			lvl = slog.LevelDebug
		}
		l.log.Log(context.Background(), lvl, "own batch rejected", "index", index, "reason", v.Reason, "detail", v.Detail)
	}
	l.publishLocked()
	l.mu.Unlock()
	return v
}

// observeLocked updates the timing view after a valid entry.
func (l *Lease) observeLocked(prev State, v Verdict) {
	now := l.clock.Now()
	d := l.cfg.LeaseDuration
	switch v.Entry.Kind {
	case KindLease:
		r := v.Entry.Lease
		l.followerExpiry = now.Add(d)
		if r.Candidate != l.id {
			l.own = ownLease{}
			break
		}
		start, mine := l.proposedAt[r.SeenVersion]
		// A renewal extends the lease only without a lapse: the holder
		// whose own view expired must win a new term instead.
		continuous := !r.Renew || l.own.deadline.After(now)
		if !r.Renew {
			l.own = ownLease{needIndex: prev.LastBatchIndex}
		}
		if mine && continuous {
			l.own.start = start
			l.own.deadline = start.Add(d - l.cfg.DriftMargin)
		} else {
			l.own.deadline, l.own.start = time.Time{}, time.Time{}
		}
		for v := range l.proposedAt {
			if v < l.st.Version {
				delete(l.proposedAt, v)
			}
		}
	case KindFence:
		if prev.Master == l.id {
			l.own = ownLease{}
		}
		if v.Entry.Fence.From == prev.Master {
			// The master fenced itself after it stopped serving.
			l.followerExpiry = time.Time{}
		}
	}
}

// Snapshot implements paxos.StateMachine.
func (l *Lease) Snapshot() ([]byte, error) {
	l.mu.Lock()
	st := l.st
	l.mu.Unlock()
	return EncodeState(st), nil
}

// Restore implements paxos.StateMachine. The restored node holds no lease
// of its own, and as a follower it waits a whole lease from now.
func (l *Lease) Restore(applied uint64, snap []byte) error {
	l.mu.Lock()
	st := State{LastGTID: l.base}
	l.mu.Unlock()
	if snap != nil {
		var err error
		if st, err = DecodeState(snap); err != nil {
			return err
		}
	}
	st.Applied = applied
	l.mu.Lock()
	l.st = st
	l.own = ownLease{}
	if st.Master == l.id {
		l.own.needIndex = st.LastBatchIndex
	}
	l.followerExpiry = l.clock.Now().Add(l.cfg.LeaseDuration)
	clear(l.proposedAt)
	l.publishLocked()
	l.mu.Unlock()
	return nil
}

// CheckSnapshot implements paxos.SnapshotChecker: a peer's snapshot that
// would not Restore is dropped before it is made durable (it would stop
// the node at every restart). It reads no state of l.
func (l *Lease) CheckSnapshot(snap []byte) error {
	_, err := DecodeState(snap)
	return err
}

// EncodeState encodes a State (the Lease's snapshot format).
func EncodeState(st State) []byte {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(&pb.LeaseSnapshot{
		Version: EncodingVersion, LeaseVersion: st.Version, Epoch: st.Epoch, Master: st.Master,
		LastGtid: st.LastGTID.toPB(), Partial: st.Partial.toPB(), Applied: st.Applied,
		LastBatchIndex: st.LastBatchIndex, TermIndex: st.TermIndex, PartialBytes: st.PartialBytes,
	})
	if err != nil {
		panic(fmt.Sprintf("masterlease: marshal snapshot: %v", err))
	}
	return b
}

// DecodeState decodes EncodeState's output.
func DecodeState(b []byte) (State, error) {
	var m pb.LeaseSnapshot
	if err := proto.Unmarshal(b, &m); err != nil {
		return State{}, fmt.Errorf("%w: snapshot: %v", ErrMalformed, err)
	}
	if m.Version == 0 || m.Version > EncodingVersion {
		return State{}, fmt.Errorf("%w: snapshot version %d, this node knows up to %d",
			ErrUnknownVersion, m.Version, EncodingVersion)
	}
	return State{Version: m.LeaseVersion, Epoch: m.Epoch, Master: m.Master,
		LastGTID: gtidFromPB(m.LastGtid), Partial: gtidFromPB(m.Partial), Applied: m.Applied,
		LastBatchIndex: m.LastBatchIndex, TermIndex: m.TermIndex, PartialBytes: m.PartialBytes}, nil
}
